"""One bad unit must not stop a run (issue 23): a request-specific 4xx, an empty answer, the log-probability probe."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import assay
from assay.answers.parsing import EMPTY_ANSWER
from assay.cli.main import app
from assay.errors import FatalJudgeError, RequestJudgeError, TransientJudgeError
from assay.judges.middleware import RetryPolicy
from assay.judges.openai import OpenAIJudge, status_error
from assay.methods import make_method
from assay.run.store import RunStore
from assay.testing import Behaviour, FakeOpenAIServer

FAST = RetryPolicy(max_attempts=3, base_delay_s=0.01, max_delay_s=0.05, timeout_s=5.0)
OPENAI_CONTEXT = json.dumps({"error": {
    "message": "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
    "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}})


@pytest.mark.parametrize(("status", "body", "kind"), [
    (400, OPENAI_CONTEXT, RequestJudgeError),
    (400, '{"error": {"code": 400, "message": "the request exceeds the available context size, try increasing it",'
          ' "type": "exceed_context_size_error"}}', RequestJudgeError),  # llama.cpp's server
    (400, '{"error": {"message": "The response was filtered due to the prompt triggering Azure OpenAI\'s content '
          'management policy.", "code": "content_filter"}}', RequestJudgeError),
    (413, "Payload Too Large", RequestJudgeError),
    (422, '{"message": "prompt is too long: 300000 tokens > 200000 maximum"}', RequestJudgeError),
    (400, '{"error": {"message": "top_logprobs must not exceed 5 (context: logprobs)"}}', FatalJudgeError),
    (400, '{"error": {"message": "Unrecognized request argument supplied: cache_prompt"}}', FatalJudgeError),
    (400, "<html>Bad Request</html>", FatalJudgeError),
    (401, OPENAI_CONTEXT, FatalJudgeError),
    (404, '{"error": {"message": "The model `gpt-9` does not exist"}}', FatalJudgeError),
    (503, OPENAI_CONTEXT, TransientJudgeError),
])
def test_a_refusal_of_this_prompt_fails_its_unit_and_a_refusal_of_the_run_stops_it(status, body, kind):
    err = status_error(status, {}, body, "openai:m", "http://h/v1")
    assert type(err) is kind, str(err)
    assert err.__cause__.status_code == status


def _route(failing: set[str], behaviour: Behaviour):
    def route(body):
        prompt = " ".join(m["content"] for m in body["messages"])
        return behaviour if any(out in prompt for out in failing) else None
    return route


def _run(runner: CliRunner, srv: FakeOpenAIServer, run_dir, *extra: str):
    return runner.invoke(app, ["run", "--method", "direct", "--dataset", "qags-xsum", "--limit", "5",
                               "--judge", f"openai:fake-model@{srv.url}", "--retries", "3",
                               "--run-dir", str(run_dir), "-q", *extra])


def test_a_context_length_400_fails_that_unit_only_exit_3(tmp_path):
    samples = assay.load_dataset("qags-xsum").select(limit=5).samples
    too_long = samples[2]
    with FakeOpenAIServer() as srv:
        srv.route = _route({too_long.output}, Behaviour(kind="error", status=400, message=(
            "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.")))
        res = _run(CliRunner(), srv, tmp_path / "run")
        assert res.exit_code == 3, res.output
        refused = [r for r in srv.requests if too_long.output in r["messages"][-1]["content"]]
        assert len(refused) == 1  # not retried: the same prompt is refused the same way
    assert "1 of 5 units failed" in " ".join(res.output.split())
    with RunStore(tmp_path / "run", readonly=True) as store:
        assert store.unit_counts() == {"asked": 5, "scored": 4, "parse_failed": 0, "failed": 1, "undone": 0}
        failed = next(j for j in store.judgments() if j.status == "failed")
        assert failed.sample_id == too_long.id and "maximum context length" in failed.error
        assert "HTTP 400" in failed.error and failed.trace["attempts"] == 1


def test_a_bad_key_still_stops_the_run_with_exit_1(tmp_path):
    with FakeOpenAIServer(default=Behaviour(kind="error", status=401)) as srv:
        res = _run(CliRunner(), srv, tmp_path / "run")
        assert res.exit_code == 1, res.output
        assert len(srv.requests) <= 8  # stopped at the first answers, not after every unit
    assert isinstance(res.exception, FatalJudgeError) and "refused the credentials" in str(res.exception)


def test_an_empty_answer_is_retried_and_the_retry_is_kept(tmp_path):
    with FakeOpenAIServer() as srv:
        srv.enqueue(Behaviour(text=""), Behaviour(text="   "))
        result = assay.evaluate("qags-xsum", method="direct", judge=OpenAIJudge("fake-model", srv.url), limit=1,
                                run_dir=tmp_path / "run", retry=FAST, answer_format="free")  # no schema probe
        assert len(srv.requests) == 3  # two empty answers, then "3"
    assert [j.score for j in result.judgments] == [3.0]


def test_an_answer_empty_to_the_end_is_a_parse_failure_saying_so(tmp_path):
    with FakeOpenAIServer(default=Behaviour(text="")) as srv:
        result = assay.evaluate("qags-xsum", method="direct", judge=OpenAIJudge("fake-model", srv.url), limit=2,
                                run_dir=tmp_path / "run", retry=FAST, answer_format="free")  # no schema probe
        assert len(srv.requests) == 2 * FAST.max_attempts
    assert result.units["parse_failed"] == 2 and result.units["failed"] == 0
    assert all(j.status == "parse_failed" and EMPTY_ANSWER in j.error for j in result.judgments)


def test_a_method_that_reads_no_logprobs_sends_no_probe(tmp_path):
    """An always-failing judge stopped `direct` at the log-probability probe, before judging: now its units fail,
    counted. (In free text: the JSON-schema probe of ``--answer-format auto`` is a probe of its own, whose
    failure stops a run as the log-probability probe's did for the methods that read them.)"""
    with FakeOpenAIServer(default=Behaviour(kind="error", status=503)) as srv:
        result = assay.evaluate("qags-xsum", method="direct", judge=OpenAIJudge("fake-model", srv.url), limit=2,
                                run_dir=tmp_path / "run", retry=FAST, answer_format="free")
        assert not any(r.get("logprobs") for r in srv.requests)
        assert len(srv.requests) == 2 * FAST.max_attempts
    assert result.units["failed"] == 2
    assert result.manifest["judge_logprobs_reason"].startswith("not probed: direct")


@pytest.mark.parametrize(("method", "options", "reads"), [
    ("direct", {}, False), ("geval", {}, True), ("geval", {"mode": "logprobs"}, True),
    ("geval", {"mode": "sampling"}, False), ("geval", {"mode": "greedy"}, False),
    ("checkeval", {}, False), ("checkeval", {"soft": True}, True),
    ("seal", {}, False), ("seal", {"decisions": "logprobs"}, True),
    ("gereval", {"rubric": "human:summeval"}, False),
])
def test_each_method_says_whether_it_reads_logprobs(method, options, reads):
    assert make_method(method, options).reads_logprobs is reads


def test_geval_in_logprobs_mode_still_probes(tmp_path):
    with FakeOpenAIServer() as srv:
        assay.evaluate("qags-xsum", method="geval", judge=OpenAIJudge("fake-model", srv.url), limit=1,
                       run_dir=tmp_path / "run", retry=FAST, options={"no_cot": True})
        probes = [b for b in srv.requests if b["messages"][0]["content"] == "Say ok."]  # beside the schema probe
        assert len(probes) == 1 and probes[0].get("logprobs")


# -- CI gating: --fail-under-coverage -------------------------------------------------------------------------


def test_a_run_or_meta_below_the_coverage_bound_exits_4(tmp_path):
    """3 of 5 units scored, 2 parse failures: the run is complete (exit 0) until a bound asks for more."""
    samples = assay.load_dataset("qags-xsum").select(limit=5).samples
    runner = CliRunner()
    run_dir = tmp_path / "run"
    with FakeOpenAIServer() as srv:
        srv.route = _route({samples[0].output, samples[4].output}, Behaviour(text="I cannot say."))
        first = _run(runner, srv, run_dir, "--fail-under-coverage", "0.95")
        assert first.exit_code == 4, first.output
        assert "coverage below --fail-under-coverage 0.95" in " ".join(first.output.split())
        assert "consistency 0.600 (3 of 5 scored)" in " ".join(first.output.split())
        assert _run(runner, srv, run_dir, "--fail-under-coverage", "0.6").exit_code == 0  # resumed: at the bound
        assert _run(runner, srv, run_dir).exit_code == 0  # no bound, no gate
    meta = runner.invoke(app, ["meta", str(run_dir), "--fail-under-coverage", "0.95", "--json", str(tmp_path / "m")])
    assert meta.exit_code == 4, meta.output
    assert (tmp_path / "m").exists()  # the tables and the JSON are written before the gate decides
    assert runner.invoke(app, ["meta", str(run_dir), "--fail-under-coverage", "0.5"]).exit_code == 0
    bad = runner.invoke(app, ["meta", str(run_dir), "--fail-under-coverage", "95"])
    assert bad.exit_code == 2  # a share, 0 to 1: a usage error


def test_failed_units_exit_3_before_the_coverage_gate(tmp_path):
    samples = assay.load_dataset("qags-xsum").select(limit=5).samples
    with FakeOpenAIServer() as srv:
        srv.route = _route({samples[1].output}, Behaviour(kind="error", status=400, message="context_length_exceeded"))
        res = _run(CliRunner(), srv, tmp_path / "run", "--fail-under-coverage", "0.99")
    assert res.exit_code == 3, res.output


# -- --retry-parse-failures -------------------------------------------------------------------------------------


def test_retry_parse_failures_re_asks_them_as_a_new_attempt_keeping_the_old_answer(tmp_path):
    samples = assay.load_dataset("qags-xsum").select(limit=4).samples
    unsure = samples[1]
    runner = CliRunner()
    run_dir = tmp_path / "run"
    with FakeOpenAIServer() as srv:
        srv.route = _route({unsure.output}, Behaviour(text="I cannot say."))
        args = ["--limit", "4"]
        assert _run(runner, srv, run_dir, *args).exit_code == 0
        first = len(srv.requests)
        assert _run(runner, srv, run_dir, *args).exit_code == 0
        assert len(srv.requests) == first  # off by default: a plain resume asks nothing
        srv.route = None  # the judge now answers "3"
        again = _run(runner, srv, run_dir, *args, "--retry-parse-failures")
        assert again.exit_code == 0, again.output
        asked = srv.requests[first:]
        assert len(asked) == 1 and unsure.output in asked[0]["messages"][-1]["content"]  # not the cached answer
        assert _run(runner, srv, run_dir, *args, "--retry-parse-failures").exit_code == 0
        assert len(srv.requests) == first + 1  # nothing left to re-ask
    with RunStore(run_dir, readonly=True) as store:
        assert store.unit_counts()["scored"] == 4 and len(store.judgments()) == 4
        j = next(j for j in store.judgments() if j.sample_id == unsure.id)
        assert j.score == 3.0 and j.trace["attempt"] == 2
        (old,) = j.trace["previous_attempts"]
        assert old["attempt"] == 1 and "no rating found" in old["error"] and "I cannot say." in json.dumps(old)
        assert len(list(store.calls.requests())) == 5  # the first attempt's call is kept beside the new one
        assert any("--retry-parse-failures: 1 parse-failed unit(s)" in n["message"] for n in store.notes())


def test_the_attempt_changes_the_key_only_when_set():
    from assay.judges.base import JudgeIdentity, Request
    from assay.judges.middleware import call_key

    who = JudgeIdentity(backend="openai", model="m")
    greedy = Request.chat("Rate it.")
    assert "attempt" not in greedy.key_payload()  # keys of first attempts are those of earlier versions
    assert call_key(who, greedy.model_copy(update={"attempt": 1})) != call_key(who, greedy)
    assert call_key(who, greedy.model_copy(update={"sample_index": 3})) == call_key(who, greedy)


def test_a_prompt_longer_than_the_embedded_context_fails_its_unit_only(tmp_path):
    """The embedded judge raised a ConfigError for a prompt over its n_ctx: run-fatal on every re-run."""
    pytest.importorskip("llama_cpp")
    result = assay.evaluate("qags-xsum", method="direct", judge="llamacpp:smollm2",
                            judge_options={"n_ctx": 256, "n_threads": 1}, limit=2, run_dir=tmp_path / "run",
                            retry=FAST)
    assert result.units["failed"] == 2 and not result.complete
    # found before any call since the context check (tests/test_context_check.py): no attempt was made
    assert all("exceeds the judge's context of 256 tokens" in j.error and j.trace["attempts"] == 0
               for j in result.judgments)


def test_the_estimate_names_units_over_the_embedded_context_before_any_call(tmp_path):
    pytest.importorskip("llama_cpp")
    est = assay.evaluate("qags-xsum", method="direct", judge="llamacpp:smollm2", judge_options={"n_ctx": 256},
                         limit=2, estimate=True)
    samples = assay.load_dataset("qags-xsum").select(limit=2).samples
    assert est.n_ctx == 256 and [u.split(" (")[0] for u in est.over_context] == [
        f"{s.id} / consistency" for s in samples]
    assert all(int(u.split("(")[1].split()[0]) + 1 > 256 for u in est.over_context)
    roomy = assay.evaluate("qags-xsum", method="direct", judge="llamacpp:smollm2", judge_options={"n_ctx": 8192},
                           limit=2, estimate=True)
    assert roomy.over_context == []
    res = CliRunner().invoke(app, ["run", "--method", "direct", "--dataset", "qags-xsum", "--limit", "2", "--estimate",
                                   "--judge", "llamacpp:smollm2", "--judge-opt", "n_ctx=256"])
    assert res.exit_code == 0, res.output
    assert "2 unit(s) have a prompt over the judge's context of 256 tokens" in " ".join(res.output.split())


def test_the_estimate_names_units_over_an_openai_judges_stated_context(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused")
    est = assay.evaluate("qags-xsum", method="direct", judge="openai:gpt-4o-mini", judge_options={"n_ctx": 300},
                         limit=3, estimate=True)
    assert est.n_ctx == 300 and len(est.over_context) == 3
    unbounded = assay.evaluate("qags-xsum", method="direct", judge="openai:gpt-4o-mini", limit=3, estimate=True)
    assert unbounded.n_ctx is None and unbounded.over_context == []
