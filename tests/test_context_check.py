"""Units over the judge's context named before a real run's calls (issue 23): the embedded judge's exact count fails
them without a call; a remote count (a llama.cpp server's ``/props``, ``--judge-opt n_ctx``) only names them."""

from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

import assay
from assay.answers.parsing import parse_rating
from assay.cli.main import app
from assay.judges.ask import ask
from assay.judges.base import Choice, Judge, JudgeIdentity, Request, Response
from assay.judges.middleware import RetryPolicy
from assay.judges.openai import OpenAIJudge, props_context, props_url
from assay.judges.scripted import ScriptedJudge
from assay.methods.base import Method
from assay.run.store import RunStore
from assay.testing import Behaviour, FakeOpenAIServer

FAST = RetryPolicy(max_attempts=2, base_delay_s=0.01, max_delay_s=0.05, timeout_s=5.0)
SECRET = "sk-context-check-secret-0123456789"


def _units_tokens(limit: int) -> dict[str, int]:
    """Each qags-xsum unit's prompt + max_tokens under the embedded judge, as the estimate counts them."""
    est = assay.evaluate("qags-xsum", method="direct", judge="llamacpp:smollm2", judge_options={"n_ctx": 16},
                         limit=limit, estimate=True)
    out = {}
    for label in est.over_context:  # "id / dim (N prompt tokens + M to generate > 16)"
        unit, counts = label.split(" (")
        words = counts.split()
        out[unit.split(" / ")[0]] = int(words[0]) + int(words[4])
    return out


def test_the_embedded_judge_fails_units_over_its_context_without_a_call(tmp_path):
    pytest.importorskip("llama_cpp")
    need = _units_tokens(3)
    assert len(need) == 3 and len(set(need.values())) > 1
    n_ctx = 256 * (max(need.values()) // 256)  # llama.cpp rounds a context up to a multiple of 256
    assert min(need.values()) <= n_ctx < max(need.values())  # some units fit, some do not
    over = {sid for sid, n in need.items() if n > n_ctx}
    events: list[str] = []
    result = assay.evaluate("qags-xsum", method="direct", judge="llamacpp:smollm2",
                            judge_options={"n_ctx": n_ctx, "n_threads": 1}, limit=3, run_dir=tmp_path / "run",
                            retry=FAST, on_warning=lambda m: events.append(f"warn {m}"),
                            on_start=lambda todo, done: events.append(f"start {todo}"))
    assert events[0].startswith(f"warn {len(over)} unit(s) have a prompt over the judge's context of {n_ctx} tokens")
    assert "fail without a call" in events[0] and events[1] == "start 3"  # said once, before judging
    fit = 3 - len(over)
    assert result.units["failed"] == len(over) and result.units["scored"] + result.units["parse_failed"] == fit
    assert result.usage["score"].calls == fit  # only the units that fit were sent
    failed = [j for j in result.judgments if j.status == "failed"]
    assert {j.sample_id for j in failed} == over
    for j in failed:
        assert "found before any call" in j.error and f"judge's context of {n_ctx} tokens" in j.error
        assert j.trace["attempts"] == 0 and j.trace["error_type"] == "RequestJudgeError"
        found = j.trace["over_context"]
        assert found["refused_without_call"] and found["exact"] and found["n_ctx"] == n_ctx
        assert found["prompt_tokens"] + found["max_tokens"] == need[j.sample_id]
    assert result.manifest["judge_context"] == {"n_ctx": n_ctx, "source": "the embedded judge's n_ctx"}
    assert [n["kind"] for n in result.notes].count("context") == 1
    with RunStore(tmp_path / "run", readonly=True) as store:
        assert len(list(store.calls.requests())) == fit


def test_assay_run_says_so_before_judging_and_exits_3(tmp_path):
    pytest.importorskip("llama_cpp")
    res = CliRunner().invoke(app, ["run", "--method", "direct", "--dataset", "qags-xsum", "--limit", "2",
                                   "--judge", "llamacpp:smollm2", "--judge-opt", "n_ctx=256",
                                   "--run-dir", str(tmp_path / "run"), "-q"])
    assert res.exit_code == 3, res.output
    text = " ".join(res.output.split())
    assert "warning: 2 unit(s) have a prompt over the judge's context of 256 tokens" in text
    assert "they fail without a call" in text and "2 of 2 units failed" in text
    assert "(2 of them refused before any call: over the judge's context; a larger --judge-opt n_ctx" in text


def _props_server(n_ctx: int | None, **kwargs) -> FakeOpenAIServer:
    return FakeOpenAIServer(props=None if n_ctx is None else {"default_generation_settings": {"n_ctx": n_ctx},
                                                               "total_slots": 1}, **kwargs)


def test_a_llama_cpp_servers_props_names_units_over_its_context_and_they_are_still_sent(tmp_path):
    """A remote count (chars/4 here) is approximate: the units are named and traced, never failed for it."""
    with _props_server(200) as srv:
        warned: list[str] = []
        result = assay.evaluate("qags-xsum", method="direct", judge=f"openai:m@{srv.url}", limit=3,
                                judge_options={"api_key": SECRET}, run_dir=tmp_path / "run", retry=FAST,
                                answer_format="free", on_warning=warned.append)
        assert [path for path, _ in srv.gets] == ["/props"]  # once per run
        assert srv.gets[0][1] is None  # no key, no credentials
        assert len(srv.requests) == 3
    assert result.units["scored"] == 3 and result.complete  # the server accepted them
    assert result.manifest["judge_context"]["n_ctx"] == 200
    assert "/props" in result.manifest["judge_context"]["source"]
    (line,) = warned
    assert line.startswith("3 unit(s) have a prompt over the judge's context of 200 tokens")
    assert "approximate chars/4" in line and "sent anyway" in line
    for j in result.judgments:
        assert j.trace["over_context"]["refused_without_call"] is False
        assert j.trace["over_context"]["exact"] is False
    assert SECRET not in json.dumps(result.manifest) + json.dumps([j.trace for j in result.judgments])


def test_the_estimate_of_a_resumed_run_takes_the_context_its_detection_recorded(tmp_path):
    with _props_server(200) as srv:
        assay.evaluate("qags-xsum", method="direct", judge=f"openai:m@{srv.url}", limit=1, run_dir=tmp_path,
                       answer_format="free")
        est = assay.evaluate("qags-xsum", method="direct", judge=f"openai:m@{srv.url}", limit=3, run_dir=tmp_path,
                             answer_format="free", estimate=True)
        assert [path for path, _ in srv.gets] == ["/props"]  # the estimate asked nothing
    assert est.n_ctx == 200 and len(est.over_context) == 2
    assert any("context size 200 tokens as recorded by the run" in a for a in est.assumptions)


def test_the_judge_option_wins_and_an_unknown_size_is_recorded(tmp_path):
    with _props_server(200) as srv:
        result = assay.evaluate("qags-xsum", method="direct", judge=f"openai:m@{srv.url}", limit=2,
                                judge_options={"n_ctx": 100_000}, run_dir=tmp_path / "a", answer_format="free")
        assert srv.gets == []  # no look-up where the option says it
    assert result.manifest["judge_context"] == {"n_ctx": 100_000, "source": "set by the judge option n_ctx"}
    assert not any(n["kind"] == "context" for n in result.notes)
    with _props_server(None) as srv:  # vLLM, Ollama, OpenAI: no /props
        result = assay.evaluate("qags-xsum", method="direct", judge=f"openai:m@{srv.url}", limit=2,
                                run_dir=tmp_path / "b", answer_format="free")
        assert [path for path, _ in srv.gets] == ["/props"]
    ctx = result.manifest["judge_context"]
    assert ctx["n_ctx"] is None and ctx["source"].startswith("context size unknown: GET ")
    assert "404" in ctx["source"] and result.complete
    assert all("over_context" not in j.trace for j in result.judgments)


def test_an_unknown_context_costs_nothing(tmp_path, monkeypatch):
    import assay.run.counting as counting

    def never(*args, **kwargs):
        raise AssertionError("the context check ran without a known context size")

    monkeypatch.setattr(counting, "find_over_context", never)
    result = assay.evaluate("qags-xsum", method="direct", judge=ScriptedJudge(lambda r: "3"), limit=2,
                            run_dir=tmp_path)
    assert result.complete and result.manifest["judge_context"]["n_ctx"] is None


def test_prompts_known_only_after_preparation_are_checked_with_the_prepared_steps(tmp_path):
    """G-Eval's score prompts carry the steps the judge wrote during preparation: the check counts those (from the
    run's cache), not a stand-in's."""
    steps = "1. " + "Read the summary and the article closely, sentence by sentence. " * 30 + "\n2. Rate it."

    def route(body):
        return Behaviour(text=steps) if body.get("max_tokens") == 256 else None  # the steps call

    with _props_server(300, route=route) as srv:
        result = assay.evaluate("summeval", method="geval", judge=f"openai:m@{srv.url}", limit=1,
                                dimensions=["coherence"], options={"mode": "greedy"}, run_dir=tmp_path,
                                answer_format="free", retry=FAST)
        score_requests = [r for r in srv.requests if r.get("max_tokens") != 256]
    (j,) = result.judgments
    (sent,) = score_requests
    assert steps.split("\n")[0][:60] in sent["messages"][-1]["content"]
    found = j.trace["over_context"]
    assert found["stage"] == "score"
    assert found["prompt_tokens"] == sum(math.ceil(len(m["content"]) / 4) for m in sent["messages"])


def test_props_url_and_reading():
    assert props_url("http://127.0.0.1:8080/v1") == "http://127.0.0.1:8080/props"
    assert props_url("https://host/llama/v1/?api-version=1") == "https://host/llama/props"
    assert props_url("http://host:9000") == "http://host:9000/props"
    assert props_context({"default_generation_settings": {"n_ctx": 4096}, "n_ctx": 16384}) == 4096  # a slot's
    assert props_context({"n_ctx": 8192}) == 8192
    for bad in ({}, {"n_ctx": True}, {"n_ctx": 0}, {"default_generation_settings": {"n_ctx": "4096"}}, [], None):
        assert props_context(bad) is None


async def test_a_server_without_props_or_an_unreachable_one_leaves_it_unknown():
    assert (await OpenAIJudge("m", "http://127.0.0.1:9/v1").context_size())[0] is None
    with FakeOpenAIServer(props={"default_generation_settings": {"n_ctx": 0}}) as srv:
        n_ctx, why = await OpenAIJudge("m", srv.url).context_size()
    assert n_ctx is None and "gave no n_ctx" in why


def test_the_checked_method_ships_to_ray_and_is_the_method_otherwise():
    import pickle

    from assay.judges.tokens import approximate
    from assay.methods import make_method
    from assay.run.counting import ContextChecked, OverContext

    found = {("s1", "coherence"): OverContext("s1", "coherence", "score", 300, 8, 256, True)}
    checked = ContextChecked(found, approximate("test"), set()).around(make_method("direct"))
    again = pickle.loads(pickle.dumps(checked))
    assert again.name == "direct" and again.found == checked.found and again.messages == {}
    assert again.found[("s1", "coherence")] == {"n_ctx": 256, "prompt_tokens": 300, "max_tokens": 8, "stage": "score",
                                                "counted_by": "approximate chars/4 (test)", "exact": False,
                                                "refused_without_call": False}  # not the judge's own count


class OwnCountJudge(Judge):
    """A judge that counts prompts as it checks them (as the embedded judge does: its count is exact) and states
    its context; it answers "3" and records every request."""

    paid = False

    def __init__(self, n_ctx: int) -> None:
        self.identity = JudgeIdentity(backend="own", model="m")
        self.n_ctx = n_ctx
        self.requests: list[Request] = []

    def prompt_tokens(self, request: Request) -> list[int]:
        return list(range(sum(len(m.content) for m in request.messages) // 4))

    def text_tokens(self, text: str) -> int:
        return len(text) // 4

    async def context_size(self) -> tuple[int | None, str]:
        return self.n_ctx, "stated by the test judge"

    async def generate(self, request: Request) -> Response:
        self.requests.append(request)
        return Response(choices=[Choice(text="3", finish_reason="stop")], model="m")


def _two_stage_method():
    """A method whose second request is built from the first one's answer (as SEAL's verification is built from its
    decomposition): with a stand-in's answer the check can only estimate it."""
    class TwoStage(Method):
        name = "two-stage"

        async def score(self, sample, dimension, ctx):
            first = (await ask(ctx.judge, Request.chat(f"Summarise: {sample.output}", max_tokens=8),
                               stage="first")).response.text
            prompt = f"{first}\n{'pad ' * 500}\nRate it from 1 to 5: {sample.output}"
            answer = (await ask(ctx.judge, Request.chat(prompt, max_tokens=4), stage="second")).response.text
            parsed = parse_rating(answer, dimension.scale)
            return self.judgment(sample, dimension, ctx, score=parsed.value, trace={"answer": answer},
                                 error=parsed.error)

    return TwoStage()


def test_an_exact_count_refuses_only_prompts_built_before_any_stand_in_answer(tmp_path):
    """With the judge's own count, a unit whose first request is over is failed without a call; one whose later
    request (built from a stand-in answer) is over is still sent: that count is an estimate."""
    warned: list[str] = []
    judge = OwnCountJudge(400)  # the first requests fit (an output is < 1,400 characters), the second do not
    result = assay.evaluate("summeval", method=_two_stage_method(), judge=judge, dimensions=["coherence"], limit=2,
                            run_dir=tmp_path / "later", on_warning=warned.append)
    assert result.complete and len(judge.requests) == 4  # both units sent, both stages
    assert all(j.trace["over_context"]["stage"] == "second" and not j.trace["over_context"]["exact"]
               and not j.trace["over_context"]["refused_without_call"] for j in result.judgments)
    (line,) = warned
    assert "2 are sent anyway (counted on prompts built from stand-in answers" in line
    judge = OwnCountJudge(20)  # now the first requests are over too
    result = assay.evaluate("summeval", method=_two_stage_method(), judge=judge, dimensions=["coherence"], limit=2,
                            run_dir=tmp_path / "first")
    assert judge.requests == [] and result.units["failed"] == 2
    assert all(j.trace["over_context"]["stage"] == "first" and j.trace["over_context"]["refused_without_call"]
               and j.trace["attempts"] == 0 for j in result.judgments)


def test_a_check_that_cannot_run_is_noted_and_the_run_goes_on(tmp_path, monkeypatch):
    import assay.run.counting as counting
    from assay.errors import ConfigError

    async def refuses(*args, **kwargs):
        raise ConfigError("the method refused a stand-in answer")

    monkeypatch.setattr(counting, "find_over_context", refuses)
    judge = OwnCountJudge(20)
    result = assay.evaluate("summeval", method="direct", judge=judge, dimensions=["coherence"], limit=1,
                            run_dir=tmp_path)
    assert len(judge.requests) == 1 and result.complete  # judged as without the check (this judge accepts it)
    (note,) = [n for n in result.notes if n["kind"] == "context"]
    assert note["message"].startswith("the context check could not run (the method refused a stand-in answer)")


async def test_a_slow_props_is_given_up_after_the_timeout(monkeypatch):
    import time

    import assay.judges.openai as openai_judge

    monkeypatch.setattr(openai_judge, "PROPS_TIMEOUT_S", 0.2)
    monkeypatch.setattr(openai_judge, "_get_json", lambda url, timeout: time.sleep(1.0))  # a server that drips
    start = time.monotonic()
    n_ctx, why = await OpenAIJudge("m", "http://127.0.0.1:9/v1").context_size()
    assert n_ctx is None and "no answer within 0.2 s" in why and time.monotonic() - start < 0.9
