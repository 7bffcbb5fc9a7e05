"""Kill a run with SIGKILL in the middle, resume it: nothing lost, nothing duplicated, nothing paid twice."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from assay.run.store import RunStore
from assay.testing import Behaviour, FakeOpenAIServer

LIMIT = 40


def run_cmd(url: str, run_dir: Path) -> list[str]:
    return [sys.executable, "-m", "assay.cli", "run", "--method", "direct", "--dataset", "summeval",
            "--limit", str(LIMIT), "--dimension", "coherence", "--dimension", "fluency",
            "--judge", f"openai:fake-model@{url}", "--concurrency", "4", "--run-dir", str(run_dir), "--quiet"]


def judgments_so_far(run_dir: Path) -> int:
    db = run_dir / "run.sqlite"
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
            return con.execute("SELECT COUNT(*) FROM judgments").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def prompt_of(body: dict) -> str:
    return body["messages"][-1]["content"]


def test_sigkill_then_resume(tmp_path):
    run_dir = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI")}
    with FakeOpenAIServer(default=Behaviour(delay_s=0.05, text="4")) as server:
        proc = subprocess.Popen(run_cmd(server.url, run_dir), env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        deadline = time.time() + 60
        while judgments_so_far(run_dir) < 15 and time.time() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert proc.returncode == -signal.SIGKILL
        with RunStore(run_dir, readonly=True) as store:
            done_first = len(store.judgments())
            completed = {prompt_of(json.loads(r[0])) for r in store._db.execute("SELECT request FROM calls")}
        assert 15 <= done_first < 2 * LIMIT, "the kill must land in the middle of the run"
        first_requests = len(server.requests)

        second = subprocess.run(run_cmd(server.url, run_dir), env=env, capture_output=True, text=True, timeout=120)
        assert second.returncode == 0, second.stderr
        resumed_prompts = [prompt_of(b) for b in server.requests[first_requests:]]

    with RunStore(run_dir, readonly=True) as store:
        units = [(j.sample_id, j.dimension) for j in store.judgments()]
    assert len(units) == 2 * LIMIT and len(set(units)) == 2 * LIMIT
    assert not completed & set(resumed_prompts), "the resumed run paid again for a completed call"
    assert len(resumed_prompts) == len(set(resumed_prompts))
    assert "resuming" in second.stderr


def test_ctrl_c_stops_cleanly_and_resumes(tmp_path):
    run_dir = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI")}
    with FakeOpenAIServer(default=Behaviour(delay_s=0.05, text="2")) as server:
        proc = subprocess.Popen(run_cmd(server.url, run_dir), env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 60
        while judgments_so_far(run_dir) < 10 and time.time() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        assert "re-run the same command to resume" in err and "Traceback" not in err
        stopped_at = judgments_so_far(run_dir)
        assert stopped_at < 2 * LIMIT
        done = subprocess.run(run_cmd(server.url, run_dir), env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
    assert judgments_so_far(run_dir) == 2 * LIMIT
