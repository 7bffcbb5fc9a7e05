"""The one call path: re-asks bounded and quoted, one call record per call, usage charged to the judgment."""

from __future__ import annotations

import asyncio

from assay.judges.ask import ECHO_CHARS, Read, ask, attributed, current_usage, recorded
from assay.judges.base import Request, Response
from assay.judges.middleware import ManagedJudge
from assay.judges.scripted import ScriptedJudge


def digit(response: Response, _: Request) -> Read[int]:
    text = response.text.strip()
    return Read(int(text)) if text.isdigit() else Read(None, f"{text!r} is not a number")


async def test_reask_quotes_the_answer_and_the_error_then_reads_the_second_answer() -> None:
    inner = ScriptedJudge(["five", "5"])
    asked = await (ask(ManagedJudge(inner), Request.chat("Rate it."), stage="score", read=digit, reasks=2))
    assert asked.value == 5 and asked.ok
    assert [c.stage for c in asked.calls] == ["score", "score-reask"]
    assert asked.calls[0].error == "'five' is not a number" and asked.calls[1].error is None
    follow = inner.requests[1].messages
    assert [m.role for m in follow] == ["user", "assistant", "user"]
    assert follow[1].content == "five" and "'five' is not a number" in follow[2].content
    assert asked.calls[1].prompt_sha256 != asked.calls[0].prompt_sha256  # the hash names the question asked


async def test_reasks_are_bounded_and_a_failure_keeps_every_attempt() -> None:
    inner = ScriptedJudge(["a", "b", "c", "9"])
    asked = await (ask(ManagedJudge(inner), Request.chat("Rate it."), stage="score", read=digit, reasks=2))
    assert asked.value is None and not asked.ok
    assert len(inner.requests) == 3 and [c.answer for c in asked.calls] == ["a", "b", "c"]
    assert asked.error == "'c' is not a number" and asked.last.error == asked.error


async def test_no_reask_by_default_and_the_default_reader_keeps_the_text() -> None:
    inner = ScriptedJudge(["whatever"])
    asked = await (ask(ManagedJudge(inner), Request.chat("Say."), stage="steps"))
    assert asked.value == "whatever" and len(asked.calls) == 1


async def test_a_long_answer_is_cut_in_the_follow_up_but_kept_whole_in_the_record() -> None:
    long = "x" * (ECHO_CHARS + 500)
    inner = ScriptedJudge([long, "3"])
    asked = await (ask(ManagedJudge(inner), Request.chat("Rate it."), stage="score", read=digit, reasks=1))
    assert asked.calls[0].answer == long
    assert len(inner.requests[1].messages[1].content) < len(long)
    assert inner.requests[1].messages[1].content.endswith("[...]")


async def test_usage_is_charged_to_the_judgment_being_scored_by_stage_and_to_no_other() -> None:
    judge = ManagedJudge(ScriptedJudge(lambda r: "7" if len(r.messages) > 1 else "no"))

    async def one(prompt: str) -> dict:
        with attributed():
            await ask(judge, Request.chat(prompt), stage="score", read=digit, reasks=1)
            await asyncio.gather(ask(judge, Request.chat(prompt + " again"), stage="extra"))
            return current_usage()

    a, b = await (asyncio.gather(one("first"), one("second")))
    for usage in (a, b):
        assert set(usage) == {"score", "score-reask", "extra"}
        assert usage["score"].calls == 1 and usage["score-reask"].calls == 1 and usage["extra"].calls == 1
    assert judge.ledger.total().calls == 6
    assert current_usage() == {}  # outside a judgment nothing is charged


async def test_a_cached_answer_is_recorded_as_cached_and_charged_as_a_cached_call() -> None:
    judge = ManagedJudge(ScriptedJudge(["4"]))
    store: dict = {}
    judge.cache = type("C", (), {"get_call": lambda s, k: store.get(k),
                                 "put_call": lambda s, k, i, q, r: store.__setitem__(k, r)})()

    async def twice() -> tuple:
        with attributed():
            await ask(judge, Request.chat("Rate."), stage="score", read=digit)
            second = await ask(judge, Request.chat("Rate."), stage="score", read=digit)
            return second, current_usage()

    second, usage = await twice()
    assert second.calls[0].cached and second.value == 4
    assert usage["score"].calls == 1 and usage["score"].cached_calls == 1


async def test_a_method_may_count_its_reasks_under_the_stage_itself():
    judge = ManagedJudge(ScriptedJudge(["x", "2"]))
    with attributed():
        asked = await ask(judge, Request.chat("Rate."), stage="verify", read=digit, reasks=1, reask_stage="verify")
        usage = current_usage()
    assert asked.reasks == 1 and [c.stage for c in asked.calls] == ["verify", "verify"]
    assert set(usage) == {"verify"} and usage["verify"].calls == 2


async def test_a_call_record_keeps_its_cost_out_of_the_trace_and_its_error_in_it():
    judge = ManagedJudge(ScriptedJudge(["x", "2"]))
    asked = await ask(judge, Request.chat("Rate."), stage="score", read=digit, reasks=1)
    assert [c.usage.calls for c in asked.calls] == [1, 1]
    first, second = asked.trace()
    assert "usage" not in first and first["error"] == "'x' is not a number" and second["error"] is None
    assert set(second) == {"stage", "prompt_sha256", "answer", "error", "finish"}


def test_readers_of_stored_traces_take_the_old_keys_too():
    assert recorded({"prompt_sha": "abc", "text": "5"}, "prompt_sha256") == "abc"
    assert recorded({"prompt_sha": "abc", "text": "5"}, "answer") == "5"
    assert recorded({"prompt_sha256": "new", "prompt_sha": "old"}, "prompt_sha256") == "new"
    assert recorded({}, "answer") is None
