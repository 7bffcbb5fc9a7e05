"""What a run loads: only what it needs, so that its first judge call leaves soon after the process starts."""

from __future__ import annotations

import subprocess
import sys

from assay.testing import FakeOpenAIServer

#: Loaded when used, never by a direct run over HTTP (benchmarks/run_overhead.py measures the start-up time).
NOT_NEEDED = ("openai", "scipy", "pandas", "statsmodels", "pingouin", "plotly", "assay.meta", "assay.methods.geval",
              "assay.methods.checkeval", "assay.methods.seal", "assay.methods.gereval",
              # the batch API, the estimate, Ray and the context check (the judge's context size is unknown here)
              "assay.judges.batch", "assay.run.estimate", "assay.run.ray_executor", "assay.run.counting")

SCRIPT = """
import sys
from assay import evaluate
result = evaluate("summeval", method="direct", judge="openai:fake-model@{url}", limit=3, run_dir={run_dir!r})
assert result.complete and len(result.judgments) == 12, result.units
print(sorted(m for m in sys.modules if m.startswith({not_needed!r})))
"""


def test_a_direct_run_over_http_loads_no_sdk_no_statistics_and_no_other_method(tmp_path):
    """The SDK (its import alone took longer than a run's start), the statistics stack and the other methods
    are imported when used: a run's summary table, ``assay meta``, the batch API, another ``--method``."""
    with FakeOpenAIServer() as srv:
        code = SCRIPT.format(url=srv.url, run_dir=str(tmp_path / "run"), not_needed=NOT_NEEDED)
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert len(srv.requests) == 13  # the log-probability probe, then one call per unit
    assert done.stdout.strip() == "[]"



# -- the end of a CLI process ----------------------------------------------------------------------------------

ENDING = """
import atexit, sys, threading, time
atexit.register(lambda: print("exit handler ran", flush=True))
if {thread!r}:
    threading.Thread(target=time.sleep, args=(0.2,)).start()
sys.argv = ["assay", *{argv!r}]
from assay.cli.main import main_process
print("partial line without a newline", end="")
main_process()
"""


def _ending(argv: list[str], thread: bool = False) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", ENDING.format(argv=argv, thread=thread)], capture_output=True,
                          text=True, timeout=120)


def test_a_cli_process_ends_with_its_status_its_exit_handlers_and_its_output_flushed():
    """``main_process`` skips the interpreter's teardown, never what a normal exit does before it."""
    for argv, status in ((["nosuchcmd"], 2), (["judges"], 0)):
        for thread in (False, True):  # with another thread alive, the normal exit
            done = _ending(argv, thread)
            assert done.returncode == status, (argv, thread, done.stderr)
            assert done.stdout.startswith("partial line without a newline")
            assert done.stdout.rstrip().endswith("exit handler ran")
    assert "No such command 'nosuchcmd'" in _ending(["nosuchcmd"]).stderr


HELPER_IMPORTS = """
import sys
import assay.report.ahead
import assay
print(sorted(m for m in ("assay.api", "assay.judges", "assay.methods", "assay.run.session") if m in sys.modules))
print(assay.evaluate.__module__, assay.Scale.__module__, sorted(set(assay.__all__) - set(dir(assay))))
"""


def test_the_summary_helper_imports_no_run_machinery_and_assay_still_names_its_api():
    """``import assay.report.ahead`` (the helper process that computes a run's table beside the run, competing with
    it for the CPU) loads the package without the API behind ``assay.evaluate``; each public name is imported when
    first asked for, and every name in ``__all__`` is there."""
    done = subprocess.run([sys.executable, "-c", HELPER_IMPORTS], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    loaded, names = done.stdout.strip().splitlines()
    assert loaded == "[]"
    assert names == "assay.api assay.types []"
