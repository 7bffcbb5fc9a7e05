"""Correlation with human ratings at the papers' levels (sample/summary, system, dataset/turn), per dimension.

- **sample-level** (G-Eval's summary-level; CheckEval 2024 section 4.1.2): for each source
  document, correlate the scores of its outputs across systems with the human ratings, then
  average over documents. A document whose predicted or human scores are constant (or that has
  fewer than three rated outputs) has no correlation; it is skipped and counted.
- **system-level**: the mean score and mean human rating of each system, correlated across systems.
- **dataset-level** (turn-level for dialogue, whole-set for QAGS): all items pooled.

An item enters a correlation only when it has both a predicted score and a human rating; items
without a predicted score are reported by :mod:`assay.meta.coverage`, never imputed. A correlation
needs at least three such pairs (:data:`MIN_PAIRS`): two points always correlate at +1 or -1, which
says nothing and would pull a mean over documents toward the extremes. The probe's checks use the same floor
(one more pair for a partial correlation), so that a correlation is "computed" by one rule everywhere.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from assay.meta.table import normalise_level

Measure = Literal["pearson", "spearman", "kendall"]
KendallVariant = Literal["a", "b", "c"]
MEASURES: tuple[str, ...] = ("pearson", "spearman", "kendall")
MIN_PAIRS = 3
SYMBOLS = {"pearson": "r", "spearman": "rho", "kendall": "tau"}

__all__ = [
    "MEASURES", "MIN_PAIRS", "SYMBOLS", "KendallVariant", "Measure", "correlate", "dataset_level", "kendall_tau",
    "level_correlation", "per_document", "sample_level", "system_level",
]


def _constant(a: np.ndarray) -> bool:
    return len(a) == 0 or bool(np.all(a == a[0]))


def kendall_tau(x: Sequence[float], y: Sequence[float], variant: KendallVariant = "b") -> float:
    """Kendall's tau in the chosen variant; the variants differ only in how ties are treated.

    - ``"a"``: (concordant - discordant) / all pairs; ties lower it.
    - ``"b"``: ties in either variable removed from the denominator (scipy's default; the papers').
    - ``"c"`` (Stuart's): adjusted for rectangular tables, ``2m (C - D) / (n^2 (m - 1))`` with
      ``m`` the smaller number of distinct values.

    Returns:
        Tau, or NaN when either variable is constant or fewer than :data:`MIN_PAIRS` pairs exist.
    """
    from scipy import stats

    x_arr, y_arr = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(x_arr) < MIN_PAIRS or _constant(x_arr) or _constant(y_arr):
        return float("nan")
    if variant in ("b", "c"):
        return float(stats.kendalltau(x_arr, y_arr, variant=variant).statistic)
    if variant != "a":
        raise ValueError(f"Kendall variant must be a, b or c, not {variant!r}")
    n0 = len(x_arr) * (len(x_arr) - 1) / 2
    ties = [sum(c * (c - 1) / 2 for c in np.unique(v, return_counts=True)[1]) for v in (x_arr, y_arr)]
    tau_b = float(stats.kendalltau(x_arr, y_arr, variant="b").statistic)
    s = tau_b * math.sqrt((n0 - ties[0]) * (n0 - ties[1]))  # C - D
    return s / n0


def correlate(x: Sequence[float], y: Sequence[float], measure: Measure, variant: KendallVariant = "b") -> float:
    """One correlation coefficient between predicted ``x`` and human ``y``.

    Returns:
        The coefficient, or NaN when it is undefined (fewer than :data:`MIN_PAIRS` items, or constant input).
    """
    from scipy import stats

    x_arr, y_arr = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(x_arr) < MIN_PAIRS or _constant(x_arr) or _constant(y_arr):
        return float("nan")
    if measure == "pearson":
        return float(stats.pearsonr(x_arr, y_arr).statistic)
    if measure == "spearman":
        return float(stats.spearmanr(x_arr, y_arr).statistic)
    if measure == "kendall":
        return kendall_tau(x_arr, y_arr, variant)
    raise ValueError(f"measure must be pearson, spearman or kendall, not {measure!r}")


def _pairs(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.dropna(subset=["score", "human"])


def per_document(frame: pd.DataFrame, measure: Measure, variant: KendallVariant = "b") -> pd.Series:
    """The correlation within each source document (one dimension's rows); NaN marks a skipped document.

    Documents with the same number of rated outputs (SummEval: 16 systems each) are computed together, scipy
    working along the rows of one array (:func:`_along_rows`), which gives the same values as :func:`correlate` on
    each document in a few hundredths of the time (the run summary and ``assay meta`` compute 100 documents x
    dimensions x measures).
    """
    pairs = _pairs(frame)
    docs = list(dict.fromkeys(frame["doc_id"]))
    score, human = pairs["score"].to_numpy(float), pairs["human"].to_numpy(float)
    by_size: dict[int, list[tuple[Any, np.ndarray]]] = {}
    for doc, rows in pairs.groupby("doc_id", sort=False).indices.items():
        by_size.setdefault(len(rows), []).append((doc, rows))
    values: dict[Any, float] = {}
    for n, group in by_size.items():
        x, y = np.stack([score[rows] for _, rows in group]), np.stack([human[rows] for _, rows in group])
        defined = (n >= MIN_PAIRS) & (x != x[:, :1]).any(axis=1) & (y != y[:, :1]).any(axis=1)
        result = np.full(len(group), np.nan)
        if defined.any():
            result[defined] = _along_rows(x[defined], y[defined], measure, variant)
        values.update(zip([doc for doc, _ in group], result.tolist(), strict=True))
    return pd.Series([values.get(d, float("nan")) for d in docs], index=docs, dtype=float)


def _along_rows(x: np.ndarray, y: np.ndarray, measure: Measure, variant: KendallVariant) -> np.ndarray:
    """One coefficient per row pair of two 2-D arrays (each row a document; no row constant), by scipy.

    Spearman's rho is Pearson's r of the average ranks (what ``scipy.stats.spearmanr`` computes); Kendall's tau-b
    and tau-c come from ``scipy.stats.kendalltau`` along the axis, tau-a from :func:`kendall_tau` per row.
    """
    from scipy import stats

    if measure == "pearson":
        return np.asarray(stats.pearsonr(x, y, axis=1).statistic, dtype=float)
    if measure == "spearman":
        return np.asarray(stats.pearsonr(stats.rankdata(x, axis=1), stats.rankdata(y, axis=1), axis=1).statistic,
                          dtype=float)
    if measure == "kendall" and variant in ("b", "c"):
        return np.asarray(stats.kendalltau(x, y, variant=variant, axis=1).statistic, dtype=float)
    return np.array([correlate(a, b, measure, variant) for a, b in zip(x, y, strict=True)], dtype=float)


def sample_level(frame: pd.DataFrame, measure: Measure, variant: KendallVariant = "b") -> dict[str, Any]:
    """Sample-level correlation: per document across systems, averaged over the documents that have one.

    Returns:
        ``value``, ``n_units`` (documents averaged), ``skipped`` (documents without a correlation:
        constant scores or fewer than three rated outputs) and ``n_items`` (pairs used).
    """
    per_doc = per_document(frame, measure, variant)
    valid = per_doc.dropna()
    pairs = _pairs(frame)
    used = pairs[pairs["doc_id"].isin(valid.index)]
    return {"value": float(valid.mean()) if len(valid) else float("nan"), "n_units": len(valid),
            "skipped": int(per_doc.isna().sum()), "n_items": len(used)}


def system_level(frame: pd.DataFrame, measure: Measure, variant: KendallVariant = "b") -> dict[str, Any]:
    """System-level correlation: mean predicted and mean human score per system, correlated across systems."""
    pairs = _pairs(frame)
    means = pairs.groupby("system_id", sort=False)[["score", "human"]].mean()
    return {"value": correlate(means["score"].to_numpy(), means["human"].to_numpy(), measure, variant),
            "n_units": len(means), "skipped": 0, "n_items": len(pairs)}


def dataset_level(frame: pd.DataFrame, measure: Measure, variant: KendallVariant = "b") -> dict[str, Any]:
    """Dataset-level (turn-level) correlation: every item with both scores pooled."""
    pairs = _pairs(frame)
    return {"value": correlate(pairs["score"].to_numpy(), pairs["human"].to_numpy(), measure, variant),
            "n_units": len(pairs), "skipped": 0, "n_items": len(pairs)}


def level_correlation(frame: pd.DataFrame, level: str, measure: Measure,
                      variant: KendallVariant = "b") -> dict[str, Any]:
    """The correlation of one dimension's rows at ``level`` (sample/summary, system, dataset/turn)."""
    fn = {"sample": sample_level, "system": system_level, "dataset": dataset_level}[normalise_level(level)]
    return fn(frame, measure, variant)

