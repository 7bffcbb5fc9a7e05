"""The small result table printed after a run: coverage, mean score and agreement with humans per dimension."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

# The two correlations the papers print at each level: sample-level rho and tau (G-Eval and
# CheckEval on SummEval), turn/dataset-level r and rho (Topical-Chat, QAGS).
_LEVEL_MEASURES = {"sample": ("spearman", "kendall"), "system": ("pearson", "spearman"),
                   "dataset": ("pearson", "spearman")}


_warming: list[threading.Thread] = []


def _import_statistics() -> None:
    try:
        import scipy.stats  # noqa: F401  the correlations' functions, imported on first use

        import assay.meta.evaluate
        import assay.meta.inputs  # noqa: F401
    except Exception:  # an import that fails here fails again, with its message, in run_summary
        pass


def warm_up() -> None:
    """Start importing what the summary needs (pandas, scipy and :mod:`assay.meta`: about a second on a small
    machine) in a background thread, once per process.

    The CLI calls it when judging starts, so that the imports overlap the judge's latency instead of delaying the
    table after the last answer; :func:`run_summary` waits for it. A plain thread, not a daemon: an interrupted run
    waits for the import to end rather than tear an extension module down half-loaded.
    """
    if not _warming:
        _warming.append(threading.Thread(target=_import_statistics, name="assay-summary-imports"))
        _warming[0].start()


def run_summary(run_dir: str | Path) -> dict[str, Any]:
    """Per dimension (and their average): units asked, share scored, mean score, correlations with humans.

    The ``judged`` column counts every unit the run was asked for, failed and never-finished ones
    included, so that coverage (scored / asked) shows how much of the run is missing.

    Correlations are computed by :mod:`assay.meta` at the dataset's conventional level (sample-level
    for SummEval, dataset/turn-level for the dialogue sets and QAGS); ``assay meta RUN_DIR`` adds
    intervals, the third measure and agreement.
    """
    if _warming:
        _warming[0].join()
    from assay.meta.evaluate import choose_level, correlation_rows
    from assay.meta.inputs import read_run

    table = read_run(run_dir)
    level, reason = choose_level(table, None)
    measures = _LEVEL_MEASURES[level]
    dims = table.dimensions()
    rows = []
    skipped: list[str] = []
    partial = ""
    for r in correlation_rows(table, level, measures, dims):
        # no mean score on the average row: dimensions may have different scales
        mean = float("nan") if r["dimension"] == "average" else table.dim(r["dimension"])["score"].mean()
        rows.append([r["dimension"], r["items"], r["coverage"], None if mean != mean else float(mean),
                     *[None if r[m] != r[m] else r[m] for m in measures]])
        if r["dimension"] != "average" and r.get("skipped"):
            skipped.append(f"{r['dimension']} {r['skipped']}")
        if r["dimension"] == "average" and r.get("dimensions_averaged", len(dims)) < len(dims):
            partial = f"the average row's correlations cover {r['dimensions_averaged']} of {len(dims)} dimensions"
    note = f"{level}-level correlations ({reason})"
    if level == "sample":
        note += "; per document across systems, then averaged"
        if skipped:
            note += f"; documents skipped for constant scores: {', '.join(skipped)}"
    if partial:
        note += f"; {partial} (the others have none: constant scores or too few scored items)"
    note += "; `assay meta RUN_DIR --bootstrap 1000` adds intervals and agreement"
    return {"columns": ["dimension", "judged", "coverage", "mean score", *measures], "rows": rows,
            "level_note": note}
