"""Bootstrap uncertainty for correlations: percentile intervals and a paired test of two methods on the same items.

The resampling unit follows the level: whole source documents for sample-level (a document's
outputs stay together, as the statistic is a mean over documents), items otherwise (system-level
means are recomputed from the resampled items). Dimensions are resampled jointly, so the
interval of the average row is consistent with the per-dimension ones. The seed is part of every
result so an interval can be reproduced exactly.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from assay.meta.correlation import MIN_PAIRS, KendallVariant, Measure, correlate, per_document
from assay.meta.table import normalise_level

__all__ = ["bootstrap_ci", "bootstrap_intervals", "paired_bootstrap", "percentile_interval", "resample_indices",
           "unit_key"]


def unit_key(level: str) -> str:
    """The column whose values are resampled at ``level``: ``doc_id`` for sample-level, else ``sample_id``."""
    return "doc_id" if normalise_level(level) == "sample" else "sample_id"


def resample_indices(n_units: int, n_boot: int, seed: int) -> np.ndarray:
    """``[n_boot, n_units]`` indices drawn with replacement from a seeded generator."""
    return np.random.default_rng(seed).integers(0, n_units, size=(n_boot, n_units))


def percentile_interval(values: np.ndarray, level: float) -> tuple[float, float] | None:
    """The percentile interval of bootstrap values covering ``level`` (NaN values dropped); None when none is left."""
    ok = values[~np.isnan(values)]
    if len(ok) == 0:
        return None
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(ok, [tail, 100 - tail])
    return float(lo), float(hi)


def bootstrap_ci(stat: Callable[[np.ndarray], np.ndarray], n: int, *, n_boot: int = 1000, seed: int = 0,
                 level: float = 0.95, groups: Sequence[Any] | None = None) -> tuple[float, float]:
    """Percentile bootstrap interval of any statistic over ``n`` items resampled with replacement.

    The one bootstrap of assay: meta-evaluation's intervals (:func:`bootstrap_intervals`) and the probe's
    (:mod:`assay.probe.stats`) draw their resamples with :func:`resample_indices` and read them with
    :func:`percentile_interval`, so that one seed gives one set of resamples everywhere.

    Args:
        stat: Maps an index matrix ``[rows, n_items]`` to one value per row (NaN rows are dropped).
        n: Number of items.
        n_boot: Resamples.
        seed: Generator seed (recorded with every interval, so it is reproducible).
        level: Coverage of the interval.
        groups: The group of each item (its source document): whole groups are resampled, as the outputs of
            one document are not independent (the resampling unit of sample-level meta-evaluation).

    Returns:
        (low, high), or (NaN, NaN) when fewer than half the resamples give a value.
    """
    if n < 2 or n_boot < 1:
        return float("nan"), float("nan")
    if groups is None or len(set(groups)) == n:
        values = np.asarray(stat(resample_indices(n, n_boot, seed)), float)
    else:
        members: dict[Any, list[int]] = {}
        for i, g in enumerate(groups):
            members.setdefault(g, []).append(i)
        blocks = [np.array(m) for m in members.values()]
        draws = resample_indices(len(blocks), n_boot, seed)
        values = np.array([stat(np.concatenate([blocks[b] for b in row])[None, :])[0] for row in draws], float)
    interval = percentile_interval(values, level)
    if interval is None or np.count_nonzero(~np.isnan(values)) < n_boot / 2:
        return float("nan"), float("nan")
    return interval


def _nanmean(a: np.ndarray, axis: int) -> np.ndarray:
    with warnings.catch_warnings():  # an all-NaN row (every resampled document skipped) stays NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(a, axis=axis)


def _item_stat(score: np.ndarray, human: np.ndarray, systems: np.ndarray | None, measure: Measure,
               variant: KendallVariant) -> float:
    if systems is None:
        return correlate(score, human, measure, variant)
    counts = np.bincount(systems)
    keep = counts > 0
    means_s = np.bincount(systems, weights=score)[keep] / counts[keep]
    means_h = np.bincount(systems, weights=human)[keep] / counts[keep]
    return correlate(means_s, means_h, measure, variant)


def _rowwise(x: np.ndarray, y: np.ndarray, measure: Measure) -> np.ndarray:
    """Pearson (or Spearman, on ranks) of each row pair at once: the fast path for pooled items."""
    from scipy import stats

    if measure == "spearman":
        x, y = stats.rankdata(x, axis=1), stats.rankdata(y, axis=1)
    xc, yc = x - x.mean(axis=1, keepdims=True), y - y.mean(axis=1, keepdims=True)
    den = np.sqrt((xc * xc).sum(axis=1) * (yc * yc).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (xc * yc).sum(axis=1) / den
    undefined = (np.ptp(x, axis=1) == 0) | (np.ptp(y, axis=1) == 0) | (x.shape[1] < MIN_PAIRS)
    return np.where(undefined, np.nan, np.clip(r, -1.0, 1.0))


def _dim_stats(frame: pd.DataFrame, level: str, measure: Measure, variant: KendallVariant,
               units: list[str], idx: np.ndarray) -> np.ndarray:
    """The level's statistic of one dimension on every resample ``idx`` (rows of unit positions)."""
    if level == "sample":
        per_doc = per_document(frame, measure, variant).reindex(units).to_numpy(float)
        return _nanmean(per_doc[idx], axis=1)
    pairs = frame.dropna(subset=["score", "human"])
    pos = {u: i for i, u in enumerate(pairs["sample_id"])}
    rowpos = np.array([pos.get(u, -1) for u in units], dtype=int)
    score, human = pairs["score"].to_numpy(float), pairs["human"].to_numpy(float)
    systems = pd.factorize(pairs["system_id"])[0] if level == "system" else None
    if systems is None and measure != "kendall" and np.all(rowpos >= 0):
        return _rowwise(score[rowpos[idx]], human[rowpos[idx]], measure)
    out = np.empty(len(idx))
    for b, row in enumerate(idx):
        r = rowpos[row]
        r = r[r >= 0]
        out[b] = _item_stat(score[r], human[r], None if systems is None else systems[r], measure, variant)
    return out


def _stat_matrix(frames: Mapping[str, pd.DataFrame], level: str, measure: Measure, variant: KendallVariant,
                 units: list[str], idx: np.ndarray) -> np.ndarray:
    """``[n_resamples, n_dimensions + 1]``: each dimension's statistic, then their average."""
    cols = [_dim_stats(f, level, measure, variant, units, idx) for f in frames.values()]
    mat = np.column_stack(cols) if cols else np.empty((len(idx), 0))
    return np.column_stack([mat, _nanmean(mat, axis=1)])


def _units(frames: Mapping[str, pd.DataFrame], level: str) -> list[str]:
    key = unit_key(level)
    return list(dict.fromkeys(u for f in frames.values() for u in f[key]))


def _interval(values: np.ndarray, ci: float) -> list[float] | None:
    interval = percentile_interval(values, ci)
    return None if interval is None else list(interval)


def bootstrap_intervals(frames: Mapping[str, pd.DataFrame], level: str, measures: Sequence[Measure], *,
                        variant: KendallVariant = "b", n_boot: int = 1000, seed: int = 0,
                        ci: float = 0.95) -> dict[str, Any]:
    """Percentile bootstrap intervals of each dimension's correlation and of their average.

    Args:
        frames: ``{dimension: rows}`` of one score table.
        level: sample (documents resampled), system or dataset (items resampled).
        measures: Which correlations.
        variant: Kendall variant.
        n_boot: Resamples.
        seed: Seed of the generator (recorded in the result).
        ci: Coverage of the interval.

    Returns:
        ``{"n_boot", "seed", "ci", "unit", "n_units", "intervals": {dimension | "average": {measure: [lo, hi] |
        None}}, "undefined": {name: {measure: count}}}``; a resample where the correlation is undefined
        (e.g. constant scores) is left out of the interval and counted in ``undefined``.
    """
    level = normalise_level(level)
    units = _units(frames, level)
    idx = resample_indices(len(units), n_boot, seed)
    names = [*frames, "average"]
    intervals: dict[str, dict[str, list[float] | None]] = {n: {} for n in names}
    undefined: dict[str, dict[str, int]] = {}
    for m in measures:
        mat = _stat_matrix(frames, level, m, variant, units, idx)
        for j, n in enumerate(names):
            intervals[n][m] = _interval(mat[:, j], ci)
            if (k := int(np.isnan(mat[:, j]).sum())) and k < n_boot:
                undefined.setdefault(n, {})[m] = k
    return {"n_boot": n_boot, "seed": seed, "ci": ci, "unit": "document" if level == "sample" else "item",
            "n_units": len(units), "intervals": intervals, "undefined": undefined}


def _common(a: pd.DataFrame, b: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both methods restricted to the items each scored and the humans rated, in the same order."""
    ka = a.dropna(subset=["score", "human"]).set_index("sample_id")
    kb = b.dropna(subset=["score", "human"]).set_index("sample_id")
    common = ka.index.intersection(kb.index)
    return ka.loc[common].reset_index(), kb.loc[common].reset_index()


def paired_bootstrap(frames_a: Mapping[str, pd.DataFrame], frames_b: Mapping[str, pd.DataFrame], level: str,
                     measure: Measure, *, variant: KendallVariant = "b", n_boot: int = 1000, seed: int = 0,
                     ci: float = 0.95) -> dict[str, Any]:
    """Paired bootstrap test of the difference between two methods' correlations on the same items.

    Both methods are restricted to the items both scored, and every resample draws the same units
    for both. The two-sided p-value is that of the shifted bootstrap distribution (the null centred
    on zero): ``(1 + #{|d_b - d| >= |d|}) / (n_boot + 1)`` with ``d`` the observed difference A - B.

    Returns:
        ``{"measure", "level", "n_boot", "seed", "ci", "unit", "tests": {dimension | "average":
        {"a", "b", "delta", "interval", "p_value", "n_items"}}}``.
    """
    level = normalise_level(level)
    dims = [d for d in frames_a if d in frames_b]
    pa, pb = {}, {}
    for d in dims:
        pa[d], pb[d] = _common(frames_a[d], frames_b[d])
    units = _units(pa, level)
    idx = resample_indices(len(units), n_boot, seed)
    ident = np.arange(len(units))[None, :]
    obs_a = _stat_matrix(pa, level, measure, variant, units, ident)[0]
    obs_b = _stat_matrix(pb, level, measure, variant, units, ident)[0]
    boot = _stat_matrix(pa, level, measure, variant, units, idx) - _stat_matrix(pb, level, measure, variant,
                                                                               units, idx)
    tests = {}
    for j, name in enumerate([*dims, "average"]):
        delta = float(obs_a[j] - obs_b[j])
        col = boot[:, j][~np.isnan(boot[:, j])]
        p = float((1 + np.sum(np.abs(col - delta) >= abs(delta))) / (len(col) + 1)) if len(col) else float("nan")
        n_items = sum(len(f) for f in pa.values()) if name == "average" else len(pa[name])
        tests[name] = {"a": float(obs_a[j]), "b": float(obs_b[j]), "delta": delta,
                       "interval": _interval(boot[:, j], ci), "p_value": p, "n_items": n_items}
    return {"measure": measure, "level": level, "n_boot": n_boot, "seed": seed, "ci": ci,
            "unit": "document" if level == "sample" else "item", "tests": tests}
