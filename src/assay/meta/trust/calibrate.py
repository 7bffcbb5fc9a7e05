"""Judge scores mapped onto the human scale, fitted on labelled samples with K-fold cross-fitting (pure).

``isotonic``: the monotone map that best fits the labels in squared error (``scipy.optimize.
isotonic_regression`` on the judge's sorted scores, read off by linear interpolation and held at the
ends); ``linear``: least squares ``a + b * score``. Each labelled sample's calibrated score comes from
a map fitted on the other folds, so the held-out MAE, Spearman and (on an integer human scale)
quadratic-weighted kappa before and after measure what calibration does on samples it never saw.
Unlabelled samples take the map fitted on every label.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["KINDS", "calibrate", "fit_map", "held_out_metrics"]

KINDS = ("isotonic", "linear")
Map = Callable[[np.ndarray], np.ndarray]


def fit_map(kind: str, x: np.ndarray, y: np.ndarray, scale: tuple[float, float] | None = None) -> Map:
    """The calibration map fitted on (judge score, human rating) pairs, clipped to the human scale when known.

    Raises:
        ValueError: An unknown kind, or fewer than two pairs.
    """
    x, y = np.asarray(x, float), np.asarray(y, float)
    if kind not in KINDS:
        raise ValueError(f"--calibrate {kind!r}: choose {' or '.join(KINDS)}")
    if len(x) < 2:
        raise ValueError("calibration needs at least two labelled samples")
    if kind == "linear":
        slope, icpt = np.polyfit(x, y, 1) if np.ptp(x) > 0 else (0.0, float(np.mean(y)))
        fn: Map = lambda s: icpt + slope * np.asarray(s, float)  # noqa: E731
    else:
        from scipy.optimize import isotonic_regression  # scipy.optimize loads slowly: only when it is asked for

        ux, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
        means = np.bincount(inverse, weights=y) / counts  # tied scores share one value: their mean, weighted
        fy = isotonic_regression(means, weights=counts.astype(float), increasing=True).x
        fn = lambda s: np.interp(np.asarray(s, float), ux, fy)  # noqa: E731
    if scale is None:
        return fn
    return lambda s: np.clip(fn(s), scale[0], scale[1])


def _folds(n: int, k: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).permutation(n) % k


def held_out_metrics(y: np.ndarray, pred: np.ndarray, integer: bool) -> dict[str, Any]:
    """MAE, Spearman and, on an integer human scale, quadratic-weighted kappa (both rounded to the scale)."""
    from scipy.stats import spearmanr
    from sklearn.metrics import cohen_kappa_score

    y, pred = np.asarray(y, float), np.asarray(pred, float)
    out: dict[str, Any] = {"mae": float(np.mean(np.abs(y - pred))),
                                    "spearman": float(spearmanr(y, pred).statistic) if np.ptp(pred) > 0 else None}
    if integer and np.all(y == np.round(y)):
        out["qwk"] = float(cohen_kappa_score(y.astype(int), np.round(pred).astype(int), weights="quadratic"))
    return out


def calibrate(kind: str, x_lab: np.ndarray, y_lab: np.ndarray, x_all: np.ndarray, *, folds: int = 5,
              seed: int = 0, scale: tuple[float, float, bool] | None = None) -> dict[str, Any]:
    """Fit a calibration with cross-fitting and report held-out figures before and after.

    Args:
        kind: ``isotonic`` or ``linear``.
        x_lab / y_lab: Judge scores (on the human scale) and human ratings of the labelled samples.
        x_all: Judge scores of every sample, to calibrate (NaN stays NaN).
        folds: K for cross-fitting (at most the number of labels).
        seed: Fold assignment seed.
        scale: The human scale ``(low, high, integer)``: maps are clipped to it, kappa needs ``integer``.

    Returns:
        ``{kind, folds, n_labelled, before, after, improved, held_out (per labelled sample), calibrated (every
        sample, from the map fitted on every label)}``; ``improved`` is True only when the held-out MAE fell.
    """
    x_lab, y_lab, x_all = (np.asarray(a, float) for a in (x_lab, y_lab, x_all))
    k = min(folds, len(x_lab))
    if k < 2:
        raise ValueError(f"{len(x_lab)} labelled sample(s): cross-fitting needs at least 2")
    bounds = None if scale is None else (scale[0], scale[1])
    fold = _folds(len(x_lab), k, seed)
    held = np.empty(len(x_lab))
    for f in range(k):
        test = fold == f
        held[test] = fit_map(kind, x_lab[~test], y_lab[~test], bounds)(x_lab[test])
    integer = bool(scale and scale[2])
    before, after = held_out_metrics(y_lab, x_lab, integer), held_out_metrics(y_lab, held, integer)
    full = fit_map(kind, x_lab, y_lab, bounds)
    calibrated = np.where(np.isnan(x_all), np.nan, full(np.nan_to_num(x_all)))
    return {"kind": kind, "folds": k, "n_labelled": len(x_lab), "before": before, "after": after,
            "improved": after["mae"] < before["mae"], "held_out": held, "calibrated": calibrated}
