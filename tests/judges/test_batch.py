"""Batch mode (``--batch``): the OpenAI batch API format against a loopback fake server with files and batches.

The fake answers batch lines through the same behaviours as live calls; with ``kind="varying"`` an answer depends
on how often its prompt was asked before, so a request paid twice shows up as a changed judgment, and a batch
run that equals the live run asked every prompt exactly once, as the live run did.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter, deque
from pathlib import Path

import pytest

import assay
from assay.errors import ConfigError, FatalJudgeError
from assay.judges.base import Response
from assay.judges.batch import BatchOptions, LineFailure, batch_line, read_results, split_lines
from assay.judges.middleware import PriceTable, RetryPolicy
from assay.judges.scripted import ScriptedJudge
from assay.run.batches import BatchRecords
from assay.run.store import RunStore
from assay.testing import Behaviour, FakeBatchAPI, FakeOpenAIServer, prompt_of

DIMS = ["coherence", "fluency"]
FAST = BatchOptions(poll_s=0.05, idle_s=0.1)


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def _run(server: FakeOpenAIServer, run_dir: Path, *, batch=False, method="direct", limit=4, **kw):
    return assay.evaluate("summeval", method=method, judge=f"openai:fake-model@{server.url}", limit=limit,
                          dimensions=kw.pop("dimensions", DIMS), run_dir=run_dir, batch=batch, **kw)


def _live(tmp_path: Path, **kw) -> dict:
    """The same run done live against a fresh deterministic server (its answers start again from k = 0)."""
    with FakeOpenAIServer(default=Behaviour(kind="varying")) as live:
        result = _run(live, tmp_path / "live", **kw)
        assert max(live.asked.values()) == 1
    return result.scores()


# -- the file format (pure) ----------------------------------------------------------------------


def test_batch_files_split_at_the_request_and_byte_limits():
    lines = [batch_line(f"k{i}", {"messages": [{"role": "user", "content": "x" * 50}]}) for i in range(7)]
    assert json.loads(lines[0]) == {"custom_id": "k0", "method": "POST", "url": "/v1/chat/completions",
                                    "body": {"messages": [{"role": "user", "content": "x" * 50}]}}
    assert split_lines(lines, max_requests=3) == [[0, 1, 2], [3, 4, 5], [6]]
    size = len(lines[0])
    assert split_lines(lines, max_bytes=2 * size + 1) == [[0, 1], [2, 3], [4, 5], [6]]
    with pytest.raises(ConfigError, match="exceeds the batch file limit"):
        split_lines(lines, max_bytes=size - 1)


def test_result_lines_are_answers_failures_or_expired():
    ok = {"custom_id": "a", "error": None, "response": {"status_code": 200, "body": {
        "choices": [{"message": {"content": "4"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 7, "completion_tokens": 1}}}}
    failed = {"custom_id": "b", "error": None, "response": {"status_code": 500, "body": {"error": {"message": "boom"}}}}
    bad = {"custom_id": "c", "error": None, "response": {"status_code": 400, "body": {"error": {"message": "bad"}}}}
    expired = {"custom_id": "d", "response": None, "error": {"code": "batch_expired", "message": "expired"}}
    text = "\n".join(json.dumps(x) for x in (ok, failed, bad, expired)) + "\nnot json\n"
    got = read_results(text, latency_s=2.0)
    assert set(got) == {"a", "b", "c", "d"}
    assert isinstance(got["a"], Response) and got["a"].text == "4" and got["a"].prompt_tokens == 7
    assert got["b"] == LineFailure(500, None, "boom") and not got["b"].expired
    assert type(got["b"].error("batch_1")).__name__ == "TransientJudgeError"
    assert type(got["c"].error("batch_1")).__name__ == "FatalJudgeError"
    assert got["d"].expired


def test_batch_calls_cost_the_discounted_price():
    table = PriceTable(prompt_per_m={"m": 2.0}, completion_per_m={"m": 8.0}, batch_discount=0.5)
    assert table.cost("m", 1_000_000, 1_000_000) == pytest.approx(10.0)
    assert table.cost("m", 1_000_000, 1_000_000, batch=True) == pytest.approx(5.0)
    assert PriceTable(prompt_per_m={"m": 2.0}, completion_per_m={"m": 8.0}).cost("m", 10**6, 0, batch=True) == 2.0


# -- whole runs ---------------------------------------------------------------------------------


def test_direct_in_batch_mode_equals_the_live_run_in_one_batch(tmp_path):
    live = _live(tmp_path)
    api = FakeBatchAPI(polls=3)
    prices = PriceTable(prompt_per_m={"fake-model": 1.0}, completion_per_m={"fake-model": 1.0}, batch_discount=0.5)
    with FakeOpenAIServer(default=Behaviour(kind="varying"), batch_api=api) as server:
        # idle_s is long: only quiescence (every unit parked) can submit within the test's time
        started, states = time.monotonic(), []
        result = _run(server, tmp_path / "batch", batch=BatchOptions(poll_s=0.05, idle_s=60), prices=prices,
                      on_status=states.append)
        elapsed = time.monotonic() - started
    assert elapsed < 30
    assert result.scores() == live and result.complete
    assert len(api.batches) == 1 and len(api.submitted) == 8 and max(api.submitted.values()) == 1
    assert "batch batch_1 (8 requests): completed" in states, "a long wait shows the batch's state"
    assert result.manifest["batch"]["created"] == ["batch_1"] and result.manifest["batch"]["resumed"] == []
    assert result.manifest["prices"]["batch_discount"] == 0.5
    # 8 calls x (10 prompt + 1 completion tokens) at $1/M, half off
    assert result.manifest["cost_usd"] == pytest.approx(8 * 11 / 1e6 * 0.5)
    with RunStore(tmp_path / "batch", readonly=True) as store:
        assert len(list(store.calls.requests())) == 8
        batches = store._db.execute("SELECT batch_id, status, detail FROM batches").fetchall()
    assert [(b, s, json.loads(d)["answered"]) for b, s, d in batches] == [("batch_1", "done", 8)]


def test_geval_with_steps_runs_stage_by_stage_and_equals_the_live_run(tmp_path):
    kw = {"method": "geval", "limit": 3, "dimensions": ["coherence"]}
    live = _live(tmp_path, **kw)
    api = FakeBatchAPI(polls=2)
    with FakeOpenAIServer(default=Behaviour(kind="varying"), batch_api=api) as server:
        result = _run(server, tmp_path / "batch", batch=FAST, **kw)
        steps_prompts = {prompt_of(json.loads(line)["body"]) for line in api.files["file-1"].decode().splitlines()}
    assert result.scores() == live and result.complete
    assert len(api.batches) == 2, "the steps, then the scores"
    assert len(steps_prompts) == 1 and "steps" in next(iter(steps_prompts)).lower()
    assert api.batches["batch_2"]["request_counts"]["total"] == 3
    assert max(api.submitted.values()) == 1


def _flaky(failing: int):
    """A route failing the first ``failing`` distinct prompts once with HTTP 500, answering them afterwards."""
    seen: Counter[str] = Counter()

    def route(body):
        prompt = prompt_of(body)
        if prompt in ("Say ok.", "Reply with the single word: hello"):  # the log-probability and schema probes
            return None
        seen[prompt] += 1
        if seen[prompt] == 1 and len([p for p, n in seen.items() if n >= 1]) <= failing:
            return Behaviour(kind="error", status=500, message="scripted overload")
        return None
    return route


def test_failed_lines_are_retried_in_a_later_batch_and_recorded(tmp_path):
    api = FakeBatchAPI()
    with FakeOpenAIServer(default=Behaviour(text="4"), batch_api=api, route=_flaky(2)) as server:
        result = _run(server, tmp_path / "batch", batch=FAST, retry=_fast_retry())
    assert result.complete and set(result.scores().values()) == {4.0}
    # the two retries go into later batches (one, or two when their backoffs end apart)
    assert sum(b["request_counts"]["total"] for b in list(api.batches.values())[1:]) == 2
    assert sorted(api.submitted.values()) == [1] * 6 + [2, 2]
    notes = [n["message"] for n in result.notes if n["kind"] == "batch"]
    assert any("2 request(s) failed, retried in a later batch" in n and "scripted overload" in n for n in notes)


def test_failed_lines_retried_live_are_never_resubmitted(tmp_path):
    api = FakeBatchAPI()
    with FakeOpenAIServer(default=Behaviour(text="4"), batch_api=api, route=_flaky(2)) as server:
        result = _run(server, tmp_path / "batch", batch=FAST.model_copy(update={"retry": "live"}),
                      retry=_fast_retry())
        chat_posts = len(server.requests) - sum(api.submitted.values())
    assert result.complete and set(result.scores().values()) == {4.0}
    assert len(api.batches) == 1 and max(api.submitted.values()) == 1
    assert chat_posts == 1 + 2, "the schema probe (direct sends no log-probability probe), then the two failed requests"
    assert any("retried live" in n["message"] for n in result.notes)


def test_an_expired_batch_resubmits_its_unfinished_requests(tmp_path):
    live = _live(tmp_path)
    api = FakeBatchAPI(outcomes=deque(["expire"]), expire_answered=3)
    with FakeOpenAIServer(default=Behaviour(kind="varying"), batch_api=api) as server:
        result = _run(server, tmp_path / "batch", batch=FAST)
        assert max(server.asked.values()) == 1, "an answered request is never asked again"
    assert result.scores() == live and result.complete
    assert len(api.batches) == 2 and api.batches["batch_2"]["request_counts"]["total"] == 5
    assert sorted(api.submitted.values()) == [1] * 3 + [2] * 5
    assert any("ended expired with 5 request(s) unfinished; resubmitted" in n["message"] for n in result.notes)


def test_a_stage_beyond_the_file_limit_is_split_into_batches(tmp_path):
    live = _live(tmp_path)
    api = FakeBatchAPI()
    with FakeOpenAIServer(default=Behaviour(kind="varying"), batch_api=api) as server:
        result = _run(server, tmp_path / "batch", batch=FAST.model_copy(update={"max_requests": 3}))
    assert result.scores() == live
    assert [b["request_counts"]["total"] for b in api.batches.values()] == [3, 3, 2]
    assert max(api.submitted.values()) == 1


def test_a_batch_that_fails_validation_stops_the_run_with_its_errors(tmp_path):
    api = FakeBatchAPI(outcomes=deque(["fail"]))
    with FakeOpenAIServer(default=Behaviour(text="4"), batch_api=api) as server, \
            pytest.raises(FatalJudgeError, match="batch batch_1 ended failed: invalid_file: scripted failure"):
        _run(server, tmp_path / "batch", batch=FAST)
    with RunStore(tmp_path / "batch", readonly=True) as store:
        assert [(b["batch_id"], b["status"], b["detail"]["provider_status"]) for b in store.batches.listed()] == [
            ("batch_1", "done", "failed")]


def test_the_key_goes_in_headers_only_never_into_batch_files_or_the_run(tmp_path, monkeypatch):
    key = "sk-batch-secret-0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    api = FakeBatchAPI()
    with FakeOpenAIServer(default=Behaviour(text="4"), batch_api=api) as server:
        result = _run(server, tmp_path / "run", batch=FAST, limit=2)
        auth = list(server.auth)
    assert result.complete and auth and all(a == f"Bearer {key}" for a in auth)
    assert all(key.encode() not in content for content in api.files.values())
    assert all(key.encode() not in p.read_bytes() for p in (tmp_path / "run").rglob("*") if p.is_file())


def test_batch_mode_needs_an_openai_judge_and_says_so_before_any_call(tmp_path):
    judge = ScriptedJudge(["4"])
    with pytest.raises(ConfigError, match="--batch needs an openai: judge"):
        assay.evaluate("summeval", method="direct", judge=judge, limit=1, dimensions=DIMS, run_dir=tmp_path / "r",
                       batch=True)
    assert judge.requests == [] and not (tmp_path / "r").exists()


def test_a_batch_created_but_not_recorded_is_found_again_not_resubmitted(tmp_path, monkeypatch):
    """A process killed between creating a batch and recording its id: the re-run finds it by its input file."""
    api = FakeBatchAPI(polls=2)
    original = BatchRecords.update

    def crash_once(self, input_file, *, status, batch_id=None, detail=None):
        if batch_id is not None:
            monkeypatch.setattr(BatchRecords, "update", original)
            raise RuntimeError("killed right after the batch was created")
        return original(self, input_file, status=status, batch_id=batch_id, detail=detail)

    with FakeOpenAIServer(default=Behaviour(kind="varying"), batch_api=api) as server:
        monkeypatch.setattr(BatchRecords, "update", crash_once)
        with pytest.raises(RuntimeError, match="killed right after"):
            _run(server, tmp_path / "batch", batch=FAST)
        assert len(api.batches) == 1
        result = _run(server, tmp_path / "batch", batch=FAST)
    assert result.complete and len(api.batches) == 1 and max(api.submitted.values()) == 1
    assert api.polls_by_batch["batch_1"] >= 2


def test_a_live_resume_of_a_run_with_unfinished_batches_says_it_pays_again(tmp_path):
    with FakeOpenAIServer(default=Behaviour(text="4")) as server:
        _run(server, tmp_path / "run", limit=1)
        with RunStore(tmp_path / "run") as store:
            store.batches.add("file-9", [])
            store.batches.update("file-9", status="in_progress", batch_id="batch_9")
        result = _run(server, tmp_path / "run", limit=2)
    assert result.complete
    assert any("1 batch(es) of an earlier --batch session are unfinished (batch_9)" in n["message"]
               and "pays again" in n["message"] for n in result.notes)


# -- kill and resume ------------------------------------------------------------------------------


def _batch_rows(run_dir: Path) -> list[tuple]:
    db = run_dir / "run.sqlite"
    if not db.exists():
        return []
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
            return con.execute("SELECT batch_id, status FROM batches").fetchall()
    except sqlite3.OperationalError:
        return []


def test_sigkill_after_the_first_batch_then_resume_polls_the_same_batch(tmp_path):
    run_dir = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI")}
    api = FakeBatchAPI(polls=40)  # 2 s at 0.05 s a poll: the kill lands while the batch is in progress
    with FakeOpenAIServer(default=Behaviour(kind="varying"), batch_api=api) as server:
        cmd = [sys.executable, "-m", "assay.cli", "run", "--method", "direct", "--dataset", "summeval", "--limit", "6",
               "--dimension", "coherence", "--dimension", "fluency", "--judge", f"openai:fake-model@{server.url}",
               "--run-dir", str(run_dir), "--quiet", "--batch", "--batch-poll", "0.05"]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.time() + 60
        while not any(b for b, _ in _batch_rows(run_dir)) and time.time() < deadline:
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        polls_before = api.polls_by_batch["batch_1"]
        assert len(api.batches) == 1 and polls_before < 40, "killed while the first batch was in progress"
        second = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        assert second.returncode == 0, second.stderr
        assert "batches: 0 created, 1 taken up from an earlier session" in second.stdout
    assert len(api.batches) == 1, "the re-run created no batch: it polled the one it found in the run store"
    assert api.polls_by_batch["batch_1"] > polls_before
    assert len(api.submitted) == 12 and max(api.submitted.values()) == 1, "no request submitted twice"
    assert max(server.asked.values()) == 1
    with RunStore(run_dir, readonly=True) as store:
        assert store.unit_counts()["scored"] == 12
        assert [(b["batch_id"], b["status"]) for b in store.batches.listed()] == [("batch_1", "done")]


def test_cli_refuses_a_bad_batch_retry_before_any_call(tmp_path):
    done = subprocess.run([sys.executable, "-m", "assay.cli", "run", "--judge", "openai:m@http://127.0.0.1:9/v1",
                           "--batch", "--batch-retry", "sometimes", "--run-dir", str(tmp_path / "r"), "--quiet"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "--batch-retry 'sometimes'" in done.stderr
    assert not (tmp_path / "r").exists()


def _fast_retry() -> RetryPolicy:
    return RetryPolicy(base_delay_s=0.01)
