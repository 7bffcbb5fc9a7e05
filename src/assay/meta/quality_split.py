"""Quality split: correlations on the items humans rated high and on those they rated low (CheckEval 2025 section 6.2).

CheckEval splits each dimension at a human rating of 3 on the 1-5 scale (High >= 3, Low < 3) and
reports the correlation within each group. The threshold is configurable per dimension; by default
it is the midpoint of the dimension's scale (3 on 1-5, 2 on 1-3, 0.5 on 0-1).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from assay.meta.correlation import KendallVariant, Measure, level_correlation
from assay.meta.coverage import coverage
from assay.meta.table import ScoreTable

__all__ = ["default_threshold", "quality_split"]


def default_threshold(table: ScoreTable, dimension: str) -> tuple[float, str]:
    """The split point of a dimension and where it came from: the scale's midpoint, else the observed one."""
    if dimension in table.scales:
        low, high, _ = table.scales[dimension]
        return (low + high) / 2, f"midpoint of the {low:g}-{high:g} scale"
    human = table.dim(dimension)["human"].dropna()
    if human.empty:
        return float("nan"), "no human ratings"
    mid = float((human.min() + human.max()) / 2)
    return mid, "midpoint of the observed human ratings (scale unknown)"


def quality_split(table: ScoreTable, level: str, measures: Sequence[Measure], *,
                  dimensions: Sequence[str] | None = None, thresholds: Mapping[str, float] | None = None,
                  variant: KendallVariant = "b") -> list[dict[str, Any]]:
    """Per dimension, correlations within the High (human >= threshold) and Low (< threshold) groups.

    Returns:
        One row per dimension: ``dimension``, ``threshold``, ``rule`` and, for ``high`` and ``low``,
        the items in the group and each measure's value (with ``n_units``/``skipped`` of the level).
    """
    rows = []
    for dim in dimensions or table.dimensions():
        if thresholds and dim in thresholds:
            thr, rule = float(thresholds[dim]), "given"
        else:
            thr, rule = default_threshold(table, dim)
        frame = table.dim(dim)
        row: dict[str, Any] = {"dimension": dim, "threshold": thr, "rule": rule}
        for group, mask in (("high", frame["human"] >= thr), ("low", frame["human"] < thr)):
            part = frame[mask]
            cells: dict[str, Any] = {"items": coverage(part)["paired"]}
            for m in measures:
                res = level_correlation(part, level, m, variant)
                cells[m] = res["value"]
                cells["n_units"], cells["skipped"] = res["n_units"], res["skipped"]
            row[group] = cells
        rows.append(row)
    return rows
