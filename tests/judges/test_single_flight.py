"""Paid once whatever the concurrency: identical calls in flight share one call, and retries re-check the cache.

The middleware tests hold the inner judge on a gate so that every caller is in flight before it answers;
the end-to-end tests run real methods over HTTP against a loopback server whose answer changes each time
the same prompt is asked again, so a call paid twice would show up as a changed judgment.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import replace

import pytest

import assay
from assay.datasets import Dataset, load_dataset
from assay.errors import FatalJudgeError, TransientJudgeError
from assay.judges.base import Choice, Request, Response
from assay.judges.middleware import ManagedJudge, RetryPolicy, call_key
from assay.judges.scripted import ScriptedJudge
from assay.run.store import RunStore
from assay.testing import Behaviour, FakeOpenAIServer, prompt_of

N = 8
DIMENSIONS = ["coherence", "naturalness"]


class GatedJudge(ScriptedJudge):
    """A scripted judge that answers only once ``gate`` is set, and counts its calls and cancellations."""

    def __init__(self, answer: str | Exception = "4") -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.started = asyncio.Event()
        self.cancelled = 0
        self._answer = answer

    async def generate(self, request: Request) -> Response:
        self.requests.append(request)
        self.started.set()
        try:
            await self.gate.wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        if isinstance(self._answer, Exception):
            raise self._answer
        return _response(self._answer)


def _response(text: str) -> Response:
    return Response(choices=[Choice(text=text)], prompt_tokens=5, completion_tokens=1, model="gated")


async def _settle() -> None:
    """Let every started caller run until it waits (on the gate or on a shared call)."""
    for _ in range(20):
        await asyncio.sleep(0)


@pytest.mark.parametrize("with_cache", [True, False])
async def test_concurrent_identical_requests_call_the_judge_once(tmp_path, with_cache):
    inner = GatedJudge("4")
    judge = ManagedJudge(inner, cache=RunStore(tmp_path).calls if with_cache else None, concurrency=N)
    req = Request.chat("same prompt")
    tasks = [asyncio.ensure_future(judge.generate(req)) for _ in range(N)]
    await _settle()
    inner.gate.set()
    answers = await asyncio.gather(*tasks)
    assert len(inner.requests) == 1
    assert {a.text for a in answers} == {"4"}
    assert sum(not a.from_cache for a in answers) == 1  # the caller that started it; the others joined it
    usage = judge.ledger.by_stage["score"]
    assert usage.calls == 1 and usage.cached_calls == N - 1 and usage.prompt_tokens == 5


async def test_an_error_reaches_every_waiter_and_the_next_request_calls_again(tmp_path):
    inner = GatedJudge(FatalJudgeError("bad key"))
    judge = ManagedJudge(inner, cache=RunStore(tmp_path).calls, concurrency=N)
    req = Request.chat("same prompt")
    tasks = [asyncio.ensure_future(judge.generate(req)) for _ in range(N)]
    await _settle()
    inner.gate.set()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    assert len(inner.requests) == 1
    assert all(isinstance(r, FatalJudgeError) for r in results)
    with pytest.raises(FatalJudgeError):  # a failed call is not remembered: asking again calls again
        await judge.generate(req)
    assert len(inner.requests) == 2


async def test_cancelling_one_waiter_leaves_the_shared_call_to_the_others(tmp_path):
    inner = GatedJudge("2")
    judge = ManagedJudge(inner, cache=RunStore(tmp_path).calls, concurrency=N)
    req = Request.chat("same prompt")
    tasks = [asyncio.ensure_future(judge.generate(req)) for _ in range(3)]
    await _settle()
    tasks[0].cancel()  # the caller that started the call
    await _settle()
    inner.gate.set()
    assert [r.text for r in await asyncio.gather(*tasks[1:])] == ["2", "2"]
    assert tasks[0].cancelled() and inner.cancelled == 0 and len(inner.requests) == 1


async def test_cancelling_every_waiter_cancels_the_call(tmp_path):
    inner = GatedJudge("2")
    judge = ManagedJudge(inner, cache=RunStore(tmp_path).calls, concurrency=N)
    req = Request.chat("same prompt")
    tasks = [asyncio.ensure_future(judge.generate(req)) for _ in range(3)]
    await _settle()
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await _settle()
    assert inner.cancelled == 1 and len(inner.requests) == 1
    inner.gate.set()  # a later caller is not handed the cancelled call: it calls again
    assert (await judge.generate(req)).text == "2" and len(inner.requests) == 2


async def test_a_retry_takes_the_answer_another_process_cached_meanwhile(tmp_path):
    store = RunStore(tmp_path)
    req = Request.chat("same prompt")
    other = _response("5")

    def first_fails_after_another_process_answered(request: Request) -> str:
        store.calls.put_call(call_key(judge.identity, request), judge.identity, request, other)
        raise TransientJudgeError("503 from the server")

    inner = ScriptedJudge(first_fails_after_another_process_answered)
    judge = ManagedJudge(inner, cache=store.calls, retry=RetryPolicy(base_delay_s=0.001, max_delay_s=0.001))
    answer = await judge.generate(req)
    assert answer.text == "5" and answer.from_cache
    assert len(inner.requests) == 1  # the retry found the cached answer instead of paying again
    usage = judge.ledger.by_stage["score"]
    assert usage.calls == 0 and usage.cached_calls == 1 and judge.ledger.retries == 1


# -- end to end over HTTP: the Topical-Chat context with two systems' identical responses ----------


def _ctx059() -> Dataset:
    """Topical-Chat ctx059: 'Original Ground Truth' and 'Nucleus Decoding (p = 0.3)' are the same response."""
    full = load_dataset("topical-chat")
    samples = [s for s in full.samples if s.doc_id == "ctx059"]
    same = [s for s in samples if s.output.strip() == "yeah . did you know the president of indonesia is a pop star ?"]
    assert len(samples) == 6 and len(same) == 2
    return replace(full, samples=samples, pool=full.samples)


def _run(server: FakeOpenAIServer, method: str, concurrency: int, run_dir, options: dict) -> tuple[dict, Counter]:
    start = len(server.requests)
    result = assay.evaluate(_ctx059(), method=method, judge=f"openai:fake-model@{server.url}",
                            dimensions=DIMENSIONS, run_dir=run_dir, options=options, concurrency=concurrency)
    asked = Counter(prompt_of(b) for b in server.requests[start:])
    return result.scores(), asked


@pytest.mark.parametrize(("method", "options"), [("direct", {}), ("checkeval", {"checklist": "topical-chat"})])
def test_identical_outputs_get_identical_judgments_at_any_concurrency(tmp_path, monkeypatch, method, options):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused")
    with FakeOpenAIServer(default=Behaviour(kind="varying", delay_s=0.02)) as server:
        one, asked_one = _run(server, method, 1, tmp_path / "c1", options)
        server.asked.clear()  # a fresh server for the second run: its answers start again from k = 0
        sixteen, asked_sixteen = _run(server, method, 16, tmp_path / "c16", options)
    assert one == sixteen
    assert all(v is not None for v in one.values())
    for dim in DIMENSIONS:
        a, b = (one[(f"ctx059:{s}", dim)] for s in ("Original Ground Truth", "Nucleus Decoding (p = 0.3)"))
        assert a == b
    assert max(asked_one.values()) == 1 and max(asked_sixteen.values()) == 1  # every distinct prompt paid once
    assert set(asked_one) == set(asked_sixteen)


def test_replay_of_a_concurrent_run_reproduces_it(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused")
    with FakeOpenAIServer(default=Behaviour(kind="varying", delay_s=0.02)) as server:
        scores, _ = _run(server, "direct", 16, tmp_path / "c16", {})
    replayed = assay.evaluate(_ctx059(), method="direct", judge=f"replay:{tmp_path / 'c16'}",
                              dimensions=DIMENSIONS, run_dir=tmp_path / "replay")
    assert replayed.scores() == scores



async def test_an_offset_view_moves_the_sample_index_and_shares_the_in_flight_calls_and_the_ledger():
    inner = GatedJudge()
    judge = ManagedJudge(inner)
    repeat = judge.offset(1000)  # the probe's repeat 1: a view of the run's judge, not a second judge
    sampled = Request.chat("Rate.", temperature=1.0)
    tasks = [asyncio.ensure_future(j.generate(sampled)) for j in (judge, repeat, repeat)]
    await inner.started.wait()
    await asyncio.sleep(0)
    inner.gate.set()
    await asyncio.gather(*tasks)
    assert sorted(r.sample_index for r in inner.requests) == [0, 1000]  # the two repeats joined one call
    assert judge.ledger is repeat.ledger and judge.ledger.total().calls == 2
    assert judge.ledger.total().cached_calls == 1 and judge.sample_offset == 0
