"""Stability: mean and variance of correlations across judges or repeated runs, and the data for a density plot.

CheckEval 2025 (section 6.1, table 8, figure 2) reports the mean and variance of the correlation
with humans across 12 judge models; SEAL (table 11) the mean and standard deviation over three
runs. A stable method has a high mean and a small spread.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["density", "stability"]


def stability(values: Mapping[str, float | None] | Sequence[float | None], ddof: int = 1) -> dict[str, Any]:
    """Mean, variance and standard deviation of correlations across judges or runs.

    Args:
        values: One correlation per judge or run (a mapping keeps the names); None/NaN are left out.
        ddof: Delta degrees of freedom (1: the sample variance; 0: the population variance).

    Returns:
        ``{"n", "mean", "variance", "std", "min", "max", "ddof", "values"}``; variance NaN with
        fewer than ``ddof + 1`` values.
    """
    items = list(values.items()) if isinstance(values, Mapping) else list(enumerate(values))
    kept = {str(k): float(v) for k, v in items if v is not None and not np.isnan(v)}
    arr = np.array(list(kept.values()), dtype=float)
    nan = float("nan")
    if len(arr) == 0:
        return {"n": 0, "mean": nan, "variance": nan, "std": nan, "min": nan, "max": nan, "ddof": ddof,
                "values": kept}
    var = float(np.var(arr, ddof=ddof)) if len(arr) > ddof else nan
    return {"n": len(arr), "mean": float(arr.mean()), "variance": var, "std": float(np.sqrt(var)),
            "min": float(arr.min()), "max": float(arr.max()), "ddof": ddof, "values": kept}


def density(values: Sequence[float | None], grid: Sequence[float] | None = None, points: int = 101) -> dict[str, Any]:
    """A Gaussian kernel density estimate of correlation values, for the stability plot.

    Args:
        values: Correlations across judges or runs.
        grid: Where to evaluate; default ``points`` values over [-1, 1] (the range of a correlation).

    Returns:
        ``{"x", "y", "values", "bandwidth"}``; ``y`` is None (with ``reason``) when the density is
        undefined: fewer than two values or no spread (the plot then shows the values as ticks).
    """
    from scipy import stats

    arr = np.array([v for v in values if v is not None and not np.isnan(v)], dtype=float)
    x = np.asarray(grid, dtype=float) if grid is not None else np.linspace(-1.0, 1.0, points)
    out: dict[str, Any] = {"x": x.tolist(), "values": arr.tolist(), "y": None, "bandwidth": None}
    if len(arr) < 2 or np.all(arr == arr[0]):
        out["reason"] = "fewer than two distinct values"
        return out
    kde = stats.gaussian_kde(arr)
    out["y"] = kde(x).tolist()
    out["bandwidth"] = float(kde.factor * arr.std(ddof=1))
    return out
