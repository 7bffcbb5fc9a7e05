"""The ``assay`` command's launcher (issue 23): a native crash is told in words, Ctrl-C is safe at every stage.

The command is run as its console script runs it: the ``assay`` entry point declared in pyproject.toml, called
from a fresh interpreter (what pip's generated script does), so that these tests hold before the package is
reinstalled with the new entry point.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

import assay_launcher
from assay.judges.native import CRASH_TEST_ENV, cpu_flags
from assay.run.store import DB_NAME

ROOT = Path(__file__).resolve().parents[1]


def assay_command() -> list[str]:
    """The installed ``assay`` command: its entry point from pyproject.toml, called as pip's script calls it."""
    target = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]["assay"]
    module, _, func = target.partition(":")
    return [sys.executable, "-c", f"import sys; from {module} import {func}; sys.exit({func}())"]


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    tmp = tmp_path / "tmp"
    tmp.mkdir(exist_ok=True)
    return {**os.environ, "TMPDIR": str(tmp), "COLUMNS": "200",
            "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]), **extra}


def test_the_entry_point_is_the_launcher_and_it_starts_without_the_package():
    assert assay_command()[-1].endswith("from assay_launcher import main; sys.exit(main())")
    code = "import sys, assay_launcher; print(sorted(m for m in sys.modules if m.startswith('assay')))"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert res.stdout.strip() == "['assay_launcher']"  # importing `assay` would load the whole API first


def test_exit_codes_output_and_errors_pass_through(tmp_path):
    env = _env(tmp_path)
    res = subprocess.run([*assay_command(), "datasets"], capture_output=True, text=True, env=env)
    assert res.returncode == 0 and "topical-chat" in res.stdout and "Usage" not in res.stderr
    res = subprocess.run([*assay_command(), "run", "--dataset", "nope", "--run-dir", str(tmp_path / "x")],
                         capture_output=True, text=True, env=env)
    assert res.returncode == 1 and "unknown dataset 'nope'" in res.stderr and "Traceback" not in res.stderr
    res = subprocess.run([*assay_command(), "--help"], capture_output=True, text=True, env=env)
    assert res.returncode == 0 and "Usage: assay " in res.stdout  # named as the user typed it, not `python -c`
    assert list((tmp_path / "tmp").iterdir()) == []  # the breadcrumb files are removed


@pytest.mark.parametrize(("sig", "code"), [("SIGILL", 132), ("SIGSEGV", 139)])
def test_a_native_crash_of_the_embedded_judge_is_told_with_its_cause_and_fix(tmp_path, sig, code):
    """A real signal raised in the judge's worker thread at its first evaluation, as llama.cpp's AMX kernels
    raised it (SIGILL at tileloadd, SIGSEGV at ldtilecfg): the user reads what happened and what to do."""
    res = subprocess.run([*assay_command(), "run", "--dataset", "qags-xsum", "--limit", "1", "-q",
                          "--run-dir", str(tmp_path / "run")],
                         capture_output=True, text=True, env=_env(tmp_path, **{CRASH_TEST_ENV: sig}), timeout=300)
    assert res.returncode == code, res.stderr[-3000:]
    err = res.stderr
    assert "Fatal Python error" in err and "_generate_sync" in err  # faulthandler: the Python stack of the thread
    message = err[err.index("assay: the process was killed"):]
    assert f"killed by {sig} (exit {code})" in message
    assert "the embedded judge (llama.cpp through llama-cpp-python" in message and "extra_buffers=false" in message
    assert 'CMAKE_ARGS="-DGGML_NATIVE=OFF"' in message and "re-run the same command" in message
    assert list((tmp_path / "tmp").iterdir()) == []


def test_the_crash_message_without_the_judge_and_with_extra_buffers_on():
    assert "If it shows llama_cpp" in assay_launcher.crash_message(signal.SIGSEGV, None)
    facts = {"pid": 1, "extra_buffers": True, "cpu_amx": ["amx_tile"], "llama_cpp_python": "0.3.36",
             "model": "m.gguf", "system_info": "CPU : AMX_INT8 = 1", "stage": "loaded"}
    message = assay_launcher.crash_message(signal.SIGILL, facts)
    assert "This CPU reports AMX (amx_tile)" in message and "drop --judge-opt extra_buffers=true" in message
    assert "If it still crashes: rebuild llama-cpp-python" in message


def test_a_breadcrumb_of_another_process_is_not_the_childs(tmp_path):
    path = tmp_path / "b.json"
    path.write_text(json.dumps({"pid": 12345, "model": "m"}))
    assert assay_launcher.read_breadcrumb(str(path), 12345) == {"pid": 12345, "model": "m"}
    assert assay_launcher.read_breadcrumb(str(path), 999) is None  # a Ray worker's, say
    assert assay_launcher.read_breadcrumb(str(tmp_path / "none.json"), 1) is None


def test_amx_flags_are_read_from_the_cpu_flags_line():
    assert cpu_flags("processor : 0\nflags\t\t: fpu avx2 amx_bf16 amx_tile\n") == ["amx_tile", "amx_bf16"]
    assert cpu_flags("flags : fpu sse2\n") == []


# --- Ctrl-C at every stage -----------------------------------------------------------------------------------------

RUN = ["run", "--method", "geval", "--dataset", "summeval", "--limit", "2", "--dimension", "coherence",
       "--steps-max-tokens", "48"]


def _judgments(run_dir: Path) -> int:
    db = run_dir / DB_NAME
    if not db.exists():
        return 0
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return con.execute("SELECT COUNT(*) FROM judgments").fetchone()[0]
    except sqlite3.OperationalError:  # not created yet
        return 0
    finally:
        con.close()


def _stage(breadcrumb: Path) -> str | None:
    try:
        return json.loads(breadcrumb.read_text()).get("stage")
    except (OSError, ValueError):
        return None


def _interrupt(tmp_path: Path, run_dir: Path, ready, after_s: float = 0.0) -> subprocess.CompletedProcess:
    """Start the run in its own process group, wait until ``ready(breadcrumb)``, then press Ctrl-C: SIGINT to the
    whole group, as a terminal sends it."""
    breadcrumb = tmp_path / f"breadcrumb-{time.monotonic_ns()}.json"
    env = _env(tmp_path, ASSAY_NATIVE_BREADCRUMB=str(breadcrumb))
    proc = subprocess.Popen([*assay_command(), *RUN, "--run-dir", str(run_dir)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    deadline = time.monotonic() + 240
    while not ready(breadcrumb) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(after_s)
    assert proc.poll() is None, "the run ended before it could be interrupted"
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def test_ctrl_c_while_loading_writing_steps_and_judging_exits_130_and_the_run_resumes(tmp_path):
    """Issue 23: SIGINT during an embedded G-Eval run exited 139 (the model freed under a thread still in
    llama.cpp). At each stage now: exit 130, the "interrupted" line, and a re-run that finishes the run."""
    run_dir = tmp_path / "run"
    stages = {
        "loading": (lambda b: _stage(b) == "loading", 0.3),
        "steps": (lambda b: _stage(b) == "loaded", 1.5),  # the steps call is the first one
        "judging": (lambda b: _judgments(run_dir) >= 1, 0.0),
    }
    for stage, (ready, after_s) in stages.items():
        res = _interrupt(tmp_path, run_dir, ready, after_s)
        assert res.returncode == 130, f"{stage}: exit {res.returncode}\n{res.stderr[-3000:]}"
        assert "interrupted: finished judgments are stored" in res.stderr, stage
        assert "killed by" not in res.stderr and "Fatal Python error" not in res.stderr, stage
        assert "Traceback" not in res.stderr, f"{stage}: {res.stderr[-3000:]}"
        if stage != "judging":
            assert _judgments(run_dir) == 0, stage  # interrupted before any unit was judged
    done = _judgments(run_dir)
    assert 1 <= done < 2
    res = subprocess.run([*assay_command(), *RUN, "--run-dir", str(run_dir)], capture_output=True, text=True,
                         env=_env(tmp_path), timeout=600)
    assert res.returncode in (0, 3), res.stderr[-3000:]  # 3: a unit failed, stored and counted
    assert f"resuming {run_dir}" in res.stderr.replace("\n", "") and f"{done} units already done" in res.stderr
    assert _judgments(run_dir) == 2
