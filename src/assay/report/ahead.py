"""The run summary computed by a helper process that loads its libraries (pandas, scipy) while the run judges.

The summary table after ``assay run`` costs about 0.85 s for SummEval's 6,400 units, three quarters of it
importing pandas and scipy.stats (docs/benchmarks.md). Imported in the run's own process, that comes after the
last answer; imported by a thread beside the run, it holds the interpreter lock and slows the judging. A helper
process started as soon as the run's plan says it is large (``python -m assay.report.ahead``, from
``evaluate(on_plan=)``) imports them on another core while the judge is loaded and asked, then waits for the run
directory on its standard input and answers with :func:`assay.report.summary.run_summary`'s table as
one JSON line. A run that fails or is interrupted ends it (:meth:`SummaryAhead.close`); one that is killed
closes the pipe, and the helper ends with it.

Where the helper cannot answer (it failed to start, died, timed out or printed anything else) the table is
computed in the run's own process instead: the same function on the same store, so the table is the same, only
later; :attr:`SummaryAhead.fell_back` says why.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

#: Seconds the run waits for the helper's table before computing it itself (only a hung helper takes that long:
#: the table of 6,400 units takes about 0.16 s once its libraries are imported).
ANSWER_TIMEOUT_S = 300.0


class SummaryAhead:
    """A helper process that will compute a run's summary table; start it as soon as the run's size is known."""

    def __init__(self, proc: subprocess.Popen[str] | None, reason: str = "") -> None:
        self._proc = proc
        self.fell_back = reason

    @classmethod
    def start(cls) -> SummaryAhead:
        """Start the helper (its imports run while the caller goes on).

        It runs in a session of its own, so that a Ctrl-C at the terminal reaches the run, which ends it, and not
        the helper; and with ``-P``, so that a folder named ``assay`` in the working directory is not imported.
        """
        try:
            proc = subprocess.Popen([sys.executable, "-P", "-m", "assay.report.ahead"], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                    start_new_session=True)
        except OSError as exc:
            return cls(None, f"the helper did not start ({exc})")
        return cls(proc)

    def summary(self, run_dir: str | Path) -> dict[str, Any]:
        """The run's summary table (:func:`assay.report.summary.run_summary`), from the helper where it answers."""
        if self._proc is not None:
            proc, self._proc = self._proc, None
            try:
                out, _ = proc.communicate(f"{Path(run_dir).resolve()}\n", timeout=ANSWER_TIMEOUT_S)
                lines = out.strip().splitlines()  # the answer is the last line (a library may print before it)
                answer = json.loads(lines[-1]) if lines else {}
                if "summary" in answer:
                    return dict(answer["summary"])
                self.fell_back = f"the helper failed ({answer.get('error', 'no table')})"
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                self.fell_back = f"the helper gave no table within {ANSWER_TIMEOUT_S:g} s"
            except (OSError, ValueError, TypeError, AttributeError) as exc:
                proc.kill()
                proc.wait()
                self.fell_back = f"the helper's answer was unreadable ({type(exc).__name__})"
        from assay.report.summary import run_summary

        return run_summary(run_dir)

    def close(self) -> None:
        """End a helper that was never asked (the run failed or was interrupted) at once: it holds nothing."""
        if self._proc is not None:
            proc, self._proc = self._proc, None
            proc.kill()
            proc.wait()


def preload() -> None:
    """Import everything :func:`assay.report.summary.run_summary` imports, so that none of it is left for the
    answer (``import assay`` loads none of it since its names are imported on first use)."""
    import scipy.stats  # noqa: F401  (imported by the correlations when first called)

    import assay.meta.inputs
    import assay.meta.levels
    import assay.meta.table
    import assay.report.summary
    import assay.run.store  # noqa: F401  (read_run opens the store)


def main() -> None:
    """The helper: import what the summary needs, then answer one run directory read from standard input."""
    preload()
    from assay.meta.table import jsonable
    from assay.report.summary import run_summary

    line = sys.stdin.readline().strip()
    if not line:  # the run ended without asking
        return
    try:
        answer: dict[str, Any] = {"summary": run_summary(line)}
    except Exception as exc:  # the parent computes it itself and shows the error there
        answer = {"error": f"{type(exc).__name__}: {exc}"}
    sys.stdout.write(json.dumps(jsonable(answer)) + "\n")
    sys.stdout.flush()
    os._exit(0)  # the run waits for the pipe to close: the interpreter's teardown (pandas, scipy: ~0.15 s) is skipped


if __name__ == "__main__":
    main()
