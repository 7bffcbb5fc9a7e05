"""The level a table is correlated at, and its rows per dimension there (the run summary's, meta's, compare's)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from assay.meta.correlation import KendallVariant, Measure, level_correlation
from assay.meta.coverage import coverage
from assay.meta.table import ScoreTable, normalise_level

__all__ = ["choose_level", "correlation_rows"]


def choose_level(table: ScoreTable, level: str | None) -> tuple[str, str]:
    """The level to use and why: as asked, else the dataset's convention, else dataset-level."""
    if level:
        return normalise_level(level), "requested"
    conv = table.conventional_level()
    if conv:
        return conv, f"the convention for {table.dataset}"
    return "dataset", "default (dataset unknown)"


def correlation_rows(table: ScoreTable, level: str, measures: Sequence[Measure], dimensions: Sequence[str],
                     variant: KendallVariant = "b") -> list[dict[str, Any]]:
    """Per dimension: coverage and each measure at ``level``; then the average row (mean over dimensions).

    The average row's coverage pools all rows; its correlations are the unweighted mean of the
    dimensions that have one (``dimensions_averaged`` says how many), as the papers' tables do.
    """
    rows = []
    for dim in dimensions:
        frame = table.dim(dim)
        row: dict[str, Any] = {"dimension": dim, **coverage(frame)}
        for m in measures:
            res = level_correlation(frame, level, m, variant)
            row[m] = res["value"]
            row["n_units"], row["skipped"] = res["n_units"], res["skipped"]
        rows.append(row)
    if len(rows) > 1:
        pooled = coverage(table.frame[table.frame["dimension"].isin(dimensions)])
        avg: dict[str, Any] = {"dimension": "average", **pooled, "n_units": None, "skipped": None}
        for m in measures:
            vals = [r[m] for r in rows if not np.isnan(r[m])]
            avg[m] = float(np.mean(vals)) if vals else float("nan")
            avg["dimensions_averaged"] = len(vals)
        rows.append(avg)
    return rows
