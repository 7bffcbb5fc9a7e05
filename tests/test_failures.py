"""Failed units are stored, counted and reported; the capability probe and G-Eval's sampling never lose work."""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
import subprocess
import sys
import time

import pandas as pd
import pytest
from typer.testing import CliRunner

import assay
from assay.cli.main import app
from assay.errors import JudgeError
from assay.judges.base import Choice, Response
from assay.judges.middleware import RetryPolicy
from assay.judges.openai import OpenAIJudge
from assay.judges.scripted import ScriptedJudge
from assay.meta import meta_evaluate
from assay.meta.inputs import read_run
from assay.run.session import side_by_side
from assay.run.store import _MIGRATIONS, DB_NAME, RunStore
from assay.testing import Behaviour, FakeOpenAIServer
from assay.types import Judgment, Sample

FAST = RetryPolicy(max_attempts=3, base_delay_s=0.01, max_delay_s=0.05, timeout_s=5.0)


def _j(sid: str, dim: str = "d", score: float | None = 3.0, **kw) -> Judgment:
    return Judgment(sample_id=sid, dimension=dim, method="direct", judge="x", score=score, **kw)


# -- the judgment's status ------------------------------------------------------------------------


def test_status_follows_the_score_and_failed_must_be_said():
    assert _j("s").status == "scored"
    assert _j("s", score=None, error="no rating found").status == "parse_failed"
    assert _j("s", score=None, error="gave up", status="failed").status == "failed"
    with pytest.raises(ValueError, match="may not have a score"):
        _j("s", score=3.0, status="failed")
    with pytest.raises(ValueError, match="needs a score"):
        _j("s", score=None, error="x", status="scored")


def test_failed_unit_is_replaced_on_resume_but_an_answer_never_is(tmp_path):
    with RunStore(tmp_path) as store:
        store.add_judgment(_j("a", score=None, error="HTTP 500", status="failed"))
        store.add_judgment(_j("b", score=None, error="no rating"))
        assert store.done_units() == {("b", "d")}  # the failed unit is to do again
        store.add_judgment(_j("a", score=4.0))
        assert [(j.sample_id, j.status, j.score) for j in store.judgments()] == [
            ("b", "parse_failed", None), ("a", "scored", 4.0)]
        with pytest.raises(sqlite3.IntegrityError):
            store.add_judgment(_j("a", score=2.0))
        with pytest.raises(sqlite3.IntegrityError):
            store.add_judgment(_j("b", score=2.0))


def _old_run(path) -> None:
    """A run directory as assay wrote it before judgments had a status."""
    path.mkdir()
    db = sqlite3.connect(path / DB_NAME, isolation_level=None)
    db.executescript(f"BEGIN; {_MIGRATIONS[0][1]}; PRAGMA user_version = 1; COMMIT;")
    for sid, score, error in (("a", 3.0, None), ("b", None, "no rating found")):
        db.execute("INSERT INTO judgments VALUES (?, 'd', 'direct', 'x', ?, ?, '{}', '{}', 0)", (sid, score, error))
    db.close()


def test_old_run_directories_still_open(tmp_path):
    _old_run(tmp_path / "ro")
    with RunStore(tmp_path / "ro", readonly=True) as store:  # never migrated: status derived
        assert [j.status for j in store.judgments()] == ["scored", "parse_failed"]
    _old_run(tmp_path / "rw")
    with RunStore(tmp_path / "rw") as store:  # migrated by the named migration
        assert [j.status for j in store.judgments()] == ["scored", "parse_failed"]
        counts = store.unit_counts()
        assert {k: counts[k] for k in ("scored", "parse_failed", "failed")} == {"scored": 1, "parse_failed": 1,
                                                                                 "failed": 0}
    assert "judgment_status" in [name for name, _ in _MIGRATIONS]


def test_export_has_status_and_error_columns(tmp_path):
    with RunStore(tmp_path) as store:
        store.add_judgment(_j("a"))
        store.add_judgment(_j("b", score=None, error="HTTP 500 after 3 attempts", status="failed",
                              trace={"attempts": 3}))
        df = store.to_pandas()
        assert list(df["status"]) == ["scored", "failed"] and df["error"].iloc[1].startswith("HTTP 500")
        csv = pd.read_csv(store.export(tmp_path / "j.csv", "csv"))
        assert list(csv["status"]) == ["scored", "failed"]
        rows = [json.loads(line) for line in store.export(tmp_path / "j.jsonl", "jsonl").read_text().splitlines()]
        assert [(r["status"], r["error"]) for r in rows] == [("scored", None), ("failed", "HTTP 500 after 3 attempts")]
        assert rows[1]["trace"]["attempts"] == 3


# -- coverage counts every unit asked ---------------------------------------------------------------


def test_coverage_counts_failed_and_never_finished_units(tmp_path):
    samples = [Sample(id=f"s{i}", doc_id=f"d{i}", system_id="m", output="x", human={"d": float(i)})
               for i in range(4)]
    with RunStore(tmp_path) as store:
        store.begin({"method": "direct", "dimensions": [{"name": "d"}, {"name": "e"}]})
        store.put_samples(samples)
        store.add_judgment(_j("s0", score=1.0))
        store.add_judgment(_j("s1", score=2.0))
        store.add_judgment(_j("s2", score=None, error="no rating"))
        store.add_judgment(_j("s3", score=None, error="HTTP 500", status="failed"))
        assert store.unit_counts() == {"asked": 8, "scored": 2, "parse_failed": 1, "failed": 1, "undone": 4}
    table = read_run(tmp_path)
    assert len(table.frame) == 8
    rows = {r["dimension"]: r for r in meta_evaluate(tmp_path, level="dataset")["rows"]}
    assert (rows["d"]["scored"], rows["d"]["items"], rows["d"]["coverage"]) == (2, 4, 0.5)
    assert (rows["e"]["scored"], rows["e"]["items"], rows["e"]["coverage"]) == (0, 4, 0.0)
    assert rows["average"]["coverage"] == 2 / 8
    assert table.errors[("s3", "d")] == "HTTP 500" and table.errors[("s0", "e")].startswith("undone")


# -- the CLI: exit code 3, the count, the failed rows, coverage, and a resume that retries only them ----------


def _serving(srv: FakeOpenAIServer, failing: set[str]) -> None:
    """Answer 500 to every prompt holding one of the ``failing`` outputs, and a rating to the others."""
    def route(body):
        prompt = " ".join(m["content"] for m in body["messages"])
        return Behaviour(kind="error", status=500) if any(out in prompt for out in failing) else None
    srv.route = route


def test_cli_run_with_failing_units_exits_3_and_resume_retries_only_them(tmp_path):
    samples = assay.load_dataset("qags-xsum").select(limit=5).samples
    failing = {samples[1].output, samples[3].output}
    run_dir = tmp_path / "run"
    runner = CliRunner()
    args = ["run", "--method", "direct", "--dataset", "qags-xsum", "--limit", "5", "--judge-opt", "logprobs=false",
            "--judge-opt", "schema=false", "--retries", "2", "--run-dir", str(run_dir), "-q"]
    with FakeOpenAIServer() as srv:
        _serving(srv, failing)
        first = runner.invoke(app, [*args, "--judge", f"openai:fake-model@{srv.url}"])
        assert first.exit_code == 3, first.output
        printed = " ".join(first.output.split())  # rich wraps long lines
        assert "2 of 5 units failed after retries" in printed and "re-run the same command" in printed
        assert f"assay export {run_dir} --format csv" in printed and "status=failed" in printed
        assert f"server error HTTP 500 from {srv.url}" in printed and "(2 attempts)" in printed
        assert "│ consistency │ 5 │ 0.600 │" in printed  # the run summary's coverage: 3 scored of 5 asked
        assert len(srv.requests) == 3 + 2 * 2  # 3 healthy units, 2 failing units tried twice each
        with RunStore(run_dir, readonly=True) as store:
            failed = [j for j in store.judgments() if j.status == "failed"]
            assert {j.sample_id for j in failed} == {samples[1].id, samples[3].id}
            assert all(j.score is None and j.trace["attempts"] == 2 and "HTTP 500" in j.error for j in failed)
            assert store.manifest()["units"]["failed"] == 2
        meta = runner.invoke(app, ["meta", str(run_dir), "--json", str(tmp_path / "meta.json")])
        assert meta.exit_code == 0, meta.output
        row = json.loads((tmp_path / "meta.json").read_text())["rows"][0]
        assert row["coverage"] == pytest.approx(3 / 5) and row["items"] == 5
        report = runner.invoke(app, ["report", str(run_dir), "-o", str(tmp_path / "r.html")])
        assert report.exit_code == 0, report.output
        page = (tmp_path / "r.html").read_text()  # the viewer's static export: coverage in its inline data
        view = json.loads(page.split("id='assay-data'>", 1)[1].split("</script>", 1)[0])
        assert view["runs"][0]["meta"]["rows"][0]["coverage"] == pytest.approx(3 / 5)
        assert sorted(view["judgments"]["st"]) == [0, 0, 0, 2, 2]  # 3 scored, 2 failed (counted, not hidden)
        shutil.copytree(run_dir, tmp_path / "same")
        compare = runner.invoke(app, ["compare", str(run_dir), str(tmp_path / "same")])
        assert compare.exit_code == 0, compare.output
        assert compare.output.count("60.0%") >= 2 and "100.0%" not in compare.output

        srv.route = None  # the server is healthy again
        before = len(srv.requests)
        again = runner.invoke(app, [*args, "--judge", f"openai:fake-model@{srv.url}"])
        assert again.exit_code == 0, again.output
        assert len(srv.requests) - before == 2  # only the two failed units were judged again
        with RunStore(run_dir, readonly=True) as store:
            assert store.unit_counts() == {"asked": 5, "scored": 5, "parse_failed": 0, "failed": 0, "undone": 0}
            assert len(store.judgments()) == 5


def test_evaluate_exposes_the_counts(tmp_path, topical_chat):
    calls = []

    def answer(request):
        calls.append(request)
        if len(calls) == 1:
            raise JudgeError("the server fell over")
        return "2"

    result = assay.evaluate(topical_chat, method="direct", judge=ScriptedJudge(answer), limit=2,
                            dimensions=["coherence"], run_dir=tmp_path)
    assert (result.failed, result.undone, result.complete) == (1, 0, False)
    assert result.units == {"asked": 2, "scored": 1, "parse_failed": 0, "failed": 1, "undone": 0}
    failed = next(j for j in result.judgments if j.status == "failed")
    assert failed.error == "the server fell over" and failed.trace["attempts"] is None


# -- the log-probability probe ---------------------------------------------------------------------------------


def _geval(srv: FakeOpenAIServer, run_dir, **options):
    return assay.evaluate("qags-xsum", method="geval", judge=OpenAIJudge("fake-model", srv.url), limit=1,
                          run_dir=run_dir, retry=FAST, options={"no_cot": True, **options})


def test_a_503_at_the_probe_is_retried_and_keeps_logprobs_mode(tmp_path):
    failed: list[dict] = []

    def first_probe_fails(body: dict) -> Behaviour | None:  # the schema probe is asked beside it
        if body.get("logprobs") and not failed:
            failed.append(body)
            return Behaviour(kind="error", status=503)
        return None

    with FakeOpenAIServer() as srv:
        srv.route = first_probe_fails
        result = _geval(srv, tmp_path / "run")
        probes = [r for r in srv.requests if r.get("logprobs")][:2]
        assert failed and probes == [failed[0], failed[0]]  # the probe, asked again
    assert result.manifest["judge_logprobs"] is True
    assert result.manifest["artifacts"]["mode"] == "logprobs"
    assert "answered with log-probabilities" in result.manifest["judge_logprobs_reason"]
    assert not [n for n in result.notes if n["kind"] in ("fallback", "capability")]


def _probes(srv: FakeOpenAIServer, which: str) -> list[dict]:
    """The server's requests that were the log-probability probe, or the JSON-schema probe asked beside it."""
    probe = {"logprobs": lambda r: r.get("max_tokens") == 1 and r.get("logprobs"),
             "schema": lambda r: "answer" in json.dumps(r.get("response_format", {}))}[which]
    return [r for r in srv.requests if probe(r)]


def test_a_probe_that_never_answers_stops_the_run_instead_of_switching_mode(tmp_path):
    with FakeOpenAIServer(default=Behaviour(kind="error", status=503)) as srv, \
            pytest.raises(JudgeError, match="probe got no answer .*gave up after 3 attempts"):
        _geval(srv, tmp_path / "run")
    assert len(_probes(srv, "logprobs")) == 3
    assert len(_probes(srv, "logprobs")) + len(_probes(srv, "schema")) == len(srv.requests)  # nothing judged


def test_cli_exits_1_before_judging_when_the_probe_never_answers(tmp_path):
    with FakeOpenAIServer(default=Behaviour(kind="error", status=503)) as srv:
        res = subprocess.run(
            [sys.executable, "-m", "assay.cli", "run", "--method", "geval", "--dataset", "qags-xsum", "--limit", "1",
             "--judge", f"openai:fake-model@{srv.url}", "--retries", "2", "--run-dir", str(tmp_path / "run"), "-q",
             "--no-cot"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 1, res.stderr
    assert "probe got no answer" in " ".join(res.stderr.split()) and "Traceback" not in res.stderr
    assert len(_probes(srv, "logprobs")) == 2  # the probe, twice
    assert len(_probes(srv, "logprobs")) + len(_probes(srv, "schema")) == len(srv.requests)  # nothing judged


def test_the_judge_is_asked_its_capabilities_side_by_side(tmp_path):
    """The log-probability and JSON-schema probes are in flight together: a start costs one round trip."""
    arrived: list[float] = []
    with FakeOpenAIServer(default=Behaviour(delay_s=0.4)) as srv:
        srv.route = lambda body: arrived.append(time.monotonic()) if body.get("max_tokens") in (1, 16) else None
        result = _geval(srv, tmp_path / "run")
    assert len(_probes(srv, "logprobs")) == 1 and len(_probes(srv, "schema")) == 1
    assert len(arrived) == 2 and arrived[1] - arrived[0] < 0.3  # the second was sent before the first answered
    assert result.manifest["judge_logprobs"] is True
    assert "probe" in result.manifest["answer_format"]["judge_reason"]  # both were answered and recorded


def _steps_calls(srv: FakeOpenAIServer) -> list[dict]:
    return [r for r in srv.requests if "evaluation steps" in json.dumps(r.get("messages", "")).lower()
            and not r.get("logprobs")]


def test_geval_steps_are_asked_beside_the_probe_and_paid_once(tmp_path):
    """The steps need no probe's answer: they are in flight with it, and prepare takes them (one call each)."""
    arrived: dict[str, float] = {}

    def stamp(body: dict) -> None:
        kind = "probe" if body.get("max_tokens") == 1 else "steps" if body.get("max_tokens") == 256 else None
        if kind:
            arrived.setdefault(kind, time.monotonic())

    with FakeOpenAIServer(default=Behaviour(delay_s=0.4, text="1. Read the text.\n2. Rate it.")) as srv:
        srv.route = stamp
        result = _geval(srv, tmp_path / "run", no_cot=False)
    dims = result.manifest["artifacts"]["dimensions"]
    assert {d["steps_source"] for d in dims.values()} == {"generated"}
    assert len(_steps_calls(srv)) == len(dims)  # asked once: prepare awaited the calls started ahead
    assert abs(arrived["steps"] - arrived["probe"]) < 0.3  # sent before the probe answered
    assert result.usage["steps"].calls == len(dims) and result.usage["steps"].cached_calls == 0


def test_a_probe_that_stops_the_run_ends_the_steps_started_beside_it(tmp_path, caplog):
    """A run stopped by its probe cancels the calls started ahead of the plan and leaves no task unretrieved."""
    with FakeOpenAIServer() as srv:
        srv.route = lambda body: (Behaviour(kind="error", status=503) if body.get("logprobs")
                                  else Behaviour(delay_s=5.0, text="1. Read the text."))
        started = time.monotonic()
        with pytest.raises(JudgeError, match="probe got no answer"):
            _geval(srv, tmp_path / "run", no_cot=False)
        assert time.monotonic() - started < 4.0  # the steps' 5 s answers were not awaited
    assert _steps_calls(srv)  # they had been sent
    assert "never retrieved" not in caplog.text


def test_a_geval_instance_runs_again_after_its_probe_stopped_a_run(tmp_path):
    """The steps a stopped run started and cancelled are not what the next run of the same instance reads."""
    from assay.methods.geval.method import GEval

    method = GEval()
    with FakeOpenAIServer() as srv:
        srv.route = lambda body: Behaviour(kind="error", status=503) if body.get("logprobs") else None
        with pytest.raises(JudgeError, match="probe got no answer"):
            assay.evaluate("qags-xsum", method=method, judge=OpenAIJudge("fake-model", srv.url), limit=1,
                           run_dir=tmp_path / "first", retry=FAST)
    with FakeOpenAIServer(default=Behaviour(text="1. Read the text.\n2. Rate it.")) as srv:
        result = assay.evaluate("qags-xsum", method=method, judge=OpenAIJudge("fake-model", srv.url), limit=1,
                                run_dir=tmp_path / "second", retry=FAST)
    assert {d["steps_source"] for d in result.manifest["artifacts"]["dimensions"].values()} == {"generated"}
    assert len(_steps_calls(srv)) == len(result.manifest["artifacts"]["dimensions"])


async def test_side_by_side_raises_the_first_failure_in_order_and_cancels_the_rest():
    order: list[str] = []

    async def step(name: str, wait: float, fails: bool) -> str:
        try:
            await asyncio.sleep(wait)
        except asyncio.CancelledError:
            order.append(f"{name} cancelled")
            raise
        order.append(name)
        if fails:
            raise JudgeError(name)
        return name

    assert await side_by_side(step("a", 0.02, False), step("b", 0.0, False)) == ["a", "b"]
    order.clear()
    with pytest.raises(JudgeError, match="^first$"):  # the later step failed sooner: the earlier one's error wins
        await side_by_side(step("first", 0.05, True), step("second", 0.0, True), step("third", 1.0, False))
    assert order == ["second", "first", "third cancelled"]


def test_a_4xx_saying_unsupported_is_a_definitive_no_and_recorded(tmp_path):
    with FakeOpenAIServer() as srv:
        srv.route = lambda body: Behaviour(kind="error", status=400, message="logprobs are not supported by this "
                                           "model") if body.get("logprobs") else None
        result = _geval(srv, tmp_path / "run", mode="logprobs")
    assert result.manifest["judge_logprobs"] is False
    assert result.manifest["artifacts"]["mode"] == "sampling"
    assert "refused log-probabilities" in result.manifest["judge_logprobs_reason"]
    kinds = {n["kind"] for n in result.notes}
    assert {"capability", "fallback"} <= kinds


# -- G-Eval sampling when the server caps n -------------------------------------------------------------------


def test_sampling_asks_again_for_choices_a_server_left_out(tmp_path):
    with FakeOpenAIServer(default=Behaviour(choices=1)) as srv:
        result = assay.evaluate("qags-xsum", method="geval",
                                judge=OpenAIJudge("fake-model", srv.url, logprobs=False, schema=False),
                                limit=1, run_dir=tmp_path, retry=FAST,
                                options={"no_cot": True, "mode": "sampling", "n": 4})
        ns = [r["n"] for r in srv.requests]
    assert ns == [4, 1, 1, 1]
    j = result.judgments[0]
    assert len(j.trace["answers"]) == 4 and j.trace["samples"] == 4
    assert (j.trace["samples_requested"], j.trace["samples_received"]) == (4, 4)
    assert "samples_short" not in j.trace and j.score == 3.0
    with RunStore(tmp_path, readonly=True) as store:
        indices = sorted(json.loads(r.model_dump_json())["sample_index"] for r in store.calls.requests() if r.n == 1)
    assert indices == [1, 2, 3]  # each top-up is its own cache entry


def test_sampling_records_when_it_cannot_reach_n(tmp_path, qags_xsum):
    def answer(request):
        return Response(choices=[Choice(text="4")] if request.sample_index == 0 else [])

    judge = ScriptedJudge(answer)
    result = assay.evaluate(qags_xsum, method="geval", judge=judge, limit=1, run_dir=tmp_path,
                            options={"no_cot": True, "mode": "sampling", "n": 3})
    j = result.judgments[0]
    assert j.score == 4.0 and j.trace["samples_received"] == 1
    assert j.trace["top_up_requests"] == 6 and len(judge.requests) == 7  # bounded: 3 rounds of 2
    assert "1 of the 3 sampled answers" in j.trace["samples_short"]
    assert any(n["kind"] == "sampling" for n in result.notes)
