"""The small result table printed after a run: coverage, mean score and agreement with humans per dimension."""

from __future__ import annotations

from pathlib import Path
from typing import Any

# The two correlations the papers print at each level: sample-level rho and tau (G-Eval and
# CheckEval on SummEval), turn/dataset-level r and rho (Topical-Chat, QAGS).
_LEVEL_MEASURES = {"sample": ("spearman", "kendall"), "system": ("pearson", "spearman"),
                   "dataset": ("pearson", "spearman")}


def run_summary(run_dir: str | Path) -> dict[str, Any]:
    """Per dimension (and their average): units asked, share scored, mean score, correlations with humans.

    The ``judged`` column counts every unit the run was asked for, failed and never-finished ones
    included, so that coverage (scored / asked) shows how much of the run is missing.

    Correlations are computed by :mod:`assay.meta` at the dataset's conventional level (sample-level
    for SummEval, dataset/turn-level for the dialogue sets and QAGS); ``assay meta RUN_DIR`` adds
    intervals, the third measure and agreement.
    """
    from assay.meta.inputs import read_run
    from assay.meta.levels import choose_level, correlation_rows

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
