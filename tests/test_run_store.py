"""The run store's opening: one writer per run directory, damaged databases refused, settings checked before calls."""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import sys

import pytest

import assay
from assay.errors import ConfigError, InputError
from assay.judges.scripted import ScriptedJudge
from assay.run.store import DB_NAME, LOCK_NAME, RunInUseError, RunStore, fingerprint_diff

# A process that opens a run directory for writing, says so, and waits to be killed.
HOLDER = ("import sys, time\nfrom assay.run.store import RunStore\nstore = RunStore(sys.argv[1])\n"
          "print('ready', flush=True)\ntime.sleep(120)\n")


@pytest.fixture
def holder(tmp_path):
    """Start a process holding ``tmp_path / 'run'`` open for writing; yields (process, run_dir)."""
    run_dir = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(run_dir)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        yield proc, run_dir
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        if proc.stdout is not None:
            proc.stdout.close()


def counting_judge() -> ScriptedJudge:
    """A judge answering 3 to everything and keeping every request (so tests can count the calls)."""
    return ScriptedJudge(lambda req: "3")


# -- one writer per run directory ------------------------------------------------------------------

def test_second_writable_store_in_one_process_is_refused_until_the_first_closes(tmp_path):
    first = RunStore(tmp_path)
    with pytest.raises(RunInUseError, match=rf"pid {os.getpid()} on {socket.gethostname()}, started 20"):
        RunStore(tmp_path)
    with RunStore(tmp_path, readonly=True) as reader:  # meta, export, report, replay take no lock
        assert reader.manifest() is None
    first.close()
    with RunStore(tmp_path) as again:
        assert len(again.judgments()) == 0


def test_run_on_a_directory_another_process_writes_stops_at_once_then_runs_after_kill(holder, topical_chat):
    proc, run_dir = holder
    judge = counting_judge()
    with pytest.raises(RunInUseError) as err:
        assay.evaluate(topical_chat, method="direct", judge=judge, limit=2, run_dir=run_dir)
    assert f"pid {proc.pid} on {socket.gethostname()}" in str(err.value) and str(run_dir) in str(err.value)
    assert judge.requests == []
    # SIGKILL: the holder cannot clean up; its lock file stays, naming it, but the kernel dropped the lock
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert f'"pid": {proc.pid}' in (run_dir / LOCK_NAME).read_text()
    result = assay.evaluate(topical_chat, method="direct", judge=judge, limit=2, run_dir=run_dir)
    assert result.progress.done == 2 * 4 and len(judge.requests) == 2 * 4


def test_cli_run_on_a_locked_directory_is_one_line_naming_the_holder(holder, cli):
    proc, run_dir = holder
    code, _, err = cli("run", "--dataset", "qags-xsum", "--limit", "1", "--run-dir", str(run_dir),
                       "--judge", "openai:m@http://127.0.0.1:9/v1", "-q")
    assert code == 1 and "Traceback" not in err
    assert err.count("\n") == 1 and err.startswith("error: ") and f"in use by another run (pid {proc.pid}" in err


# -- damaged databases -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def real_db(tmp_path_factory, topical_chat) -> bytes:
    """The bytes of a finished run's database (a few pages: samples, judgments, calls, manifest)."""
    run_dir = tmp_path_factory.mktemp("real") / "run"
    assay.evaluate(topical_chat, method="direct", judge=counting_judge(), limit=6, run_dir=run_dir)
    return (run_dir / DB_NAME).read_bytes()


def damaged(kind: str, real: bytes) -> bytes:
    if kind == "empty":
        return b""
    if kind == "random":
        return random.Random(13).randbytes(16384)
    return real[: len(real) // 2]


@pytest.mark.parametrize("readonly", [False, True], ids=["writable", "readonly"])
@pytest.mark.parametrize("kind", ["empty", "random", "truncated"])
def test_damaged_database_is_refused_naming_the_file_and_left_as_it_was(tmp_path, real_db, kind, readonly):
    data = damaged(kind, real_db)
    db = tmp_path / DB_NAME
    db.write_bytes(data)
    with pytest.raises(InputError) as err:
        RunStore(tmp_path, readonly=readonly)
    message = str(err.value)
    assert message.startswith(f"{db}: damaged or not a run database")
    assert ("move it away" in message and "--run-dir" in message) is (not readonly)
    assert db.read_bytes() == data  # never a silent fresh run over it
    if not readonly:  # the refused open let go of the lock: the file can be moved away and the run started
        db.rename(tmp_path / "run.sqlite.damaged")
        with RunStore(tmp_path) as fresh:
            assert fresh.manifest() is None


def test_cli_run_and_export_on_an_empty_database_exit_1_with_one_line(tmp_path, cli):
    from assay.testing import FakeOpenAIServer

    db = tmp_path / "run" / DB_NAME
    db.parent.mkdir()
    db.write_bytes(b"")
    with FakeOpenAIServer() as server:
        code, _, err = cli("run", "--dataset", "qags-xsum", "--limit", "1", "--run-dir", str(db.parent),
                               "--judge", f"openai:fake-model@{server.url}", "-q")
    assert code == 1 and err.count("\n") == 1 and "Traceback" not in err
    assert f"{db}: damaged or not a run database (the file is empty)" in err and "move it away" in err
    assert server.requests == [] and db.read_bytes() == b""
    code, _, err = cli("export", str(db.parent))
    assert code == 1 and err.count("\n") == 1 and f"{db}: damaged or not a run database" in err


# -- the settings check comes before any call ------------------------------------------------------

def test_other_method_on_a_run_directory_is_refused_before_any_call_and_writes_nothing(tmp_path, topical_chat):
    run_dir = tmp_path / "run"
    assay.evaluate(topical_chat, method="direct", judge=counting_judge(), limit=2, run_dir=run_dir,
                   dimensions=["naturalness"])
    with RunStore(run_dir, readonly=True) as store:
        before = (len(list(store.calls.requests())), store.artifacts(), store.notes(), store.manifest(),
                  len(store.judgments()))
    shutil.copy(run_dir / DB_NAME, tmp_path / "before.sqlite")
    judge = counting_judge()
    with pytest.raises(ConfigError) as err:
        assay.evaluate(topical_chat, method="geval", judge=judge, limit=2, run_dir=run_dir,
                       dimensions=["naturalness"], options={"n": 3})
    assert judge.requests == []  # G-Eval's steps were never asked for
    with RunStore(run_dir, readonly=True) as store:
        after = (len(list(store.calls.requests())), store.artifacts(), store.notes(), store.manifest(),
                 len(store.judgments()))
    assert after == before
    lines = str(err.value).splitlines()
    assert lines[0] == f"{run_dir} holds a run with other settings:"
    assert "  method: stored 'direct' | now 'geval'" in lines
    assert "  method_settings.n: stored (absent) | now 3" in lines
    assert "  method_settings.max_tokens: stored 8 | now (absent)" not in lines  # only the new run's options
    assert lines[-1].startswith("Use a new --run-dir")


def test_changed_option_is_refused_before_any_call(tmp_path, topical_chat):
    run_dir = tmp_path / "run"
    assay.evaluate(topical_chat, method="direct", judge=counting_judge(), limit=1, run_dir=run_dir)
    judge = counting_judge()
    with pytest.raises(ConfigError, match=r"method_settings.temperature: stored 0.0 \| now 0.5"):
        assay.evaluate(topical_chat, method="direct", judge=judge, limit=1, run_dir=run_dir,
                       options={"temperature": 0.5})
    assert judge.requests == []


def test_fingerprint_diff_shows_only_differing_leaves_side_by_side():
    dims = [{"name": "coherence", "definition": "d", "scale": {"low": 1, "high": 5, "integer": True}},
            {"name": "fluency", "definition": "f", "scale": {"low": 1, "high": 3, "integer": True}}]
    old = {"method": "geval", "method_settings": {"mode": "auto", "n": 20, "steps": {"coherence": "a" * 300}},
           "judge": {"backend": "openai", "model": "m1", "base_url": None},
           "dataset": {"name": "summeval", "sha256": "abc"}, "dimensions": dims, "artifacts": {"x": 1}}
    new_dims = [dims[0] | {"scale": {"low": 1, "high": 10, "integer": True}}, dims[1]]
    new = old | {"method_settings": {"mode": "auto", "n": 5, "steps": {"coherence": "a" * 300}},
                 "judge": {"backend": "openai", "model": "m2", "base_url": None}, "dimensions": new_dims,
                 "artifacts": {"x": 2}}
    assert fingerprint_diff(old, new) == [
        "method_settings.n: stored 20 | now 5",
        "judge.model: stored 'm1' | now 'm2'",
        "dimensions.coherence.scale.high: stored 5 | now 10",
    ]
    assert fingerprint_diff(old, old | {"dimensions": dims[::-1]}) == [  # same leaves, other order
        f"dimensions: stored {_short(dims)} | now {_short(dims[::-1])}"]
    long_old = old | {"method_settings": {"steps": "x" * 500}}
    line = fingerprint_diff(long_old, old)[0]
    assert line.startswith("method_settings.steps: stored 'xxx") and len(line) < 300
    assert fingerprint_diff(old, {"method": "geval"}, partial=("method_settings",))[0] == \
        "judge.backend: stored 'openai' | now (absent)"


def _short(value) -> str:
    import json

    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 100 else text[:97] + "..."


def test_run_dir_that_is_a_file_is_refused(tmp_path):
    path = tmp_path / "not-a-dir"
    path.write_text("x")
    with pytest.raises(ConfigError, match="is a file, not a directory"):
        RunStore(path)
    assert path.read_text() == "x"


def test_a_trace_reads_back_as_json_dumps_would_have_stored_it(tmp_path):
    """The store writes traces with pydantic-core's encoder; every value reads back as it did through json.dumps."""
    import json
    import math

    import numpy as np

    from assay.common.jsontext import dumps as json_text
    from assay.types import Judgment, Usage

    trace = {"distribution": {1: 0.25, 5: 0.75}, "missing": float("nan"), "top": float("inf"), "pair": (1, "x"),
             "text": "café\u2028– «ok»", "mass": np.float64(0.5), "nested": [{"a": None, "b": True}], "tiny": 1e-06}
    with RunStore(tmp_path) as store:
        store.add_judgment(Judgment(sample_id="s", dimension="d", method="direct", judge="j", score=1.0, trace=trace,
                                    usage={"score": Usage(calls=1, latency_s=0.5)}))
        [stored] = store.judgments()
    expected = json.loads(json.dumps(trace, ensure_ascii=False))
    assert math.isnan(stored.trace.pop("missing")) and math.isnan(expected.pop("missing"))
    assert stored.trace == expected and stored.usage == {"score": Usage(calls=1, latency_s=0.5)}
    for refused in ({"n": np.int64(3)}, {"f": np.float32(0.5)}):  # what json.dumps refused is refused still
        with pytest.raises(TypeError):
            json_text(refused)
