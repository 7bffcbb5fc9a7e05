"""The probe's statistics as pure functions: lengths, (partial) rank correlations, bootstrap, agreement, scale use.

Every function takes plain arrays and returns numbers (NaN where a statistic is undefined), so that each is
tested on hand-computed cases and the checks only arrange data around them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from assay.meta.correlation import MIN_PAIRS

#: The stated tokenizer of the length check: runs of word characters, and each other non-space character.
TOKEN_PATTERN = re.compile(r"\w+|[^\w\s]")
TOKENIZER = r"regex \w+|[^\w\s] (words and punctuation marks)"
#: A partial correlation holds one variable fixed, which costs a degree of freedom, and its reference
#: (``pingouin.partial_corr``, Fisher z with standard error 1/sqrt(n - 3 - 1)) is undefined below 5 pairs.
MIN_PARTIAL_PAIRS = MIN_PAIRS + 2


def token_count(text: str) -> int:
    """Tokens of ``text`` by :data:`TOKEN_PATTERN`: model-independent, so lengths compare across judges."""
    return len(TOKEN_PATTERN.findall(text))


def _ranks(a: np.ndarray) -> np.ndarray:
    """Average ranks along the last axis (ties share their mean rank), as Spearman's rho needs."""
    from scipy import stats

    return stats.rankdata(a, axis=-1)


def _pearson_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson's r of each row pair (``[..., n]``); NaN where a row is constant."""
    xc, yc = x - x.mean(axis=-1, keepdims=True), y - y.mean(axis=-1, keepdims=True)
    den = np.sqrt((xc * xc).sum(axis=-1) * (yc * yc).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (xc * yc).sum(axis=-1) / den
    return np.where(den > 0, np.clip(r, -1.0, 1.0), np.nan)


def spearman(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    """Spearman's rho (Pearson on average ranks); NaN with fewer than :data:`MIN_PAIRS` pairs or a constant side."""
    xa, ya = np.asarray(x, float), np.asarray(y, float)
    if len(xa) < MIN_PAIRS:
        return float("nan")
    return float(_pearson_rows(_ranks(xa), _ranks(ya)))


def _partial_from_r(rxy: np.ndarray, rxz: np.ndarray, ryz: np.ndarray) -> np.ndarray:
    """First-order partial correlation of x and y given z from the three pairwise correlations."""
    den = np.sqrt((1 - rxz ** 2) * (1 - ryz ** 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (rxy - rxz * ryz) / den
    return np.where(den > 1e-12, np.clip(r, -1.0, 1.0), np.nan)


def partial_spearman(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray,
                     z: Sequence[float] | np.ndarray) -> float:
    """Spearman partial correlation of x and y controlling for z (what ``pingouin.partial_corr`` computes
    with ``method="spearman"``): the Pearson partial correlation of the ranks.

    Returns:
        NaN with fewer than :data:`MIN_PARTIAL_PAIRS` pairs, or when a variable is constant or x or y is fully
        determined by z (nothing is left to correlate).
    """
    xa, ya, za = (np.asarray(v, float) for v in (x, y, z))
    if len(xa) < MIN_PARTIAL_PAIRS:
        return float("nan")
    rx, ry, rz = _ranks(xa), _ranks(ya), _ranks(za)
    return float(_partial_from_r(_pearson_rows(rx, ry), _pearson_rows(rx, rz), _pearson_rows(ry, rz)))


def pingouin_partial(x: Sequence[float], y: Sequence[float], z: Sequence[float]) -> float:
    """``pingouin.partial_corr`` (Spearman) on the same data: the reference the bootstrap's fast form must match."""
    import pandas as pd
    import pingouin

    frame = pd.DataFrame({"x": x, "y": y, "z": z})
    return float(pingouin.partial_corr(data=frame, x="x", y="y", covar="z", method="spearman")["r"].iloc[0])


def spearman_boot(x: np.ndarray, y: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """The bootstrap statistic of Spearman's rho for :func:`assay.meta.bootstrap.bootstrap_ci` (ranks recomputed
    per resample)."""
    return lambda idx: _pearson_rows(_ranks(x[idx]), _ranks(y[idx]))


def partial_boot(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """The bootstrap statistic of :func:`partial_spearman` for :func:`assay.meta.bootstrap.bootstrap_ci`."""
    def stat(idx: np.ndarray) -> np.ndarray:
        rx, ry, rz = _ranks(x[idx]), _ranks(y[idx]), _ranks(z[idx])
        return _partial_from_r(_pearson_rows(rx, ry), _pearson_rows(rx, rz), _pearson_rows(ry, rz))
    return stat


def exact_agreement(runs: np.ndarray) -> float:
    """Share of items whose scored runs all give the same score (``runs``: ``[n_runs, n_items]``, NaN = no score).

    Items with fewer than two scores are left out; NaN when none is left.
    """
    arr = np.asarray(runs, float)
    keep = (~np.isnan(arr)).sum(axis=0) >= 2
    if not keep.any():
        return float("nan")
    same = [np.ptp(col[~np.isnan(col)]) < 1e-9 for col in arr[:, keep].T]
    return float(np.mean(same))


def mean_run_std(runs: np.ndarray) -> float:
    """Mean over items of the sample standard deviation (ddof 1) of an item's scores over runs: SEAL's
    stability figure (std over 3 runs). Only items scored in every run count; NaN when none is."""
    arr = np.asarray(runs, float)
    full = arr[:, ~np.isnan(arr).any(axis=0)]
    if arr.shape[0] < 2 or full.shape[1] == 0:
        return float("nan")
    return float(np.std(full, axis=0, ddof=1).mean())


def scale_use(scores: Sequence[float], low: float, high: float, integer: bool, *, bins: int = 10) -> dict[str, Any]:
    """How a judge uses its scale: histogram, share of the scale used, share of fractional ratings.

    On an integer (Likert) scale each rating is counted at its nearest scale value (fractional ones are
    counted there too, and also as ``fractional``); the share used is the share of scale values hit. On a
    continuous scale the range is cut into ``bins`` equal bins (the top one closed) and the share used is
    the share of bins hit.

    Returns:
        ``{"histogram": {label: count}, "share_used": float, "fractional": float | None, "n": int}``
        (``fractional`` is None on a continuous scale, where every value is valid).
    """
    arr = np.asarray(list(scores), float)
    if integer:
        values = list(range(math.ceil(low), math.floor(high) + 1))
        nearest = np.clip(np.rint(arr), values[0], values[-1]) if len(arr) else arr
        hist = {str(v): int((nearest == v).sum()) for v in values}
        fractional = float(np.mean(np.abs(arr - np.rint(arr)) > 1e-9)) if len(arr) else float("nan")
    else:
        edges = np.linspace(low, high, bins + 1)
        pos = np.clip(np.searchsorted(edges, arr, side="right") - 1, 0, bins - 1)
        hist = {f"{edges[i]:g}-{edges[i + 1]:g}": int((pos == i).sum()) for i in range(bins)}
        fractional = None
    used = sum(1 for c in hist.values() if c) / len(hist)
    return {"histogram": hist, "share_used": used, "fractional": fractional, "n": len(arr)}


def zscore(a: np.ndarray) -> np.ndarray:
    """Standardised values (population sd); NaN everywhere when ``a`` is constant."""
    sd = a.std()
    return (a - a.mean()) / sd if sd > 0 else np.full_like(a, np.nan)


def preference_gap(score: np.ndarray, human: np.ndarray, human_written: np.ndarray) -> float:
    """How much more the judge prefers human-written outputs than the humans do, in standard deviations.

    ``(mean z(score) of human-written - mean z(score) of the others) - (the same with the human ratings)``,
    each side standardised over all items so that judge and human scales compare. Negative: the judge
    favours the systems' outputs (G-Eval's finding for LLM-written text) more than the humans do.
    """
    hw = np.asarray(human_written, bool)
    if hw.all() or not hw.any():
        return float("nan")
    zs, zh = zscore(np.asarray(score, float)), zscore(np.asarray(human, float))
    return float((zs[hw].mean() - zs[~hw].mean()) - (zh[hw].mean() - zh[~hw].mean()))


def preference_boot(score: np.ndarray, human: np.ndarray, hw: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """The bootstrap statistic of :func:`preference_gap` for :func:`assay.meta.bootstrap.bootstrap_ci`."""
    return lambda idx: np.array([preference_gap(score[row], human[row], hw[row]) for row in idx])


def mean_boot(values: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """The bootstrap statistic of a mean for :func:`assay.meta.bootstrap.bootstrap_ci`."""
    return lambda idx: values[idx].mean(axis=1)


def alpha_boot(runs: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """The bootstrap statistic of interval Krippendorff's alpha over items (columns of ``runs``)."""
    from assay.meta.agreement import krippendorff_alpha

    return lambda idx: np.array([krippendorff_alpha(runs[:, row], "interval") for row in idx])


def clean(value: float | None) -> float | None:
    """A number for JSON: NaN and None become None, others are rounded to 4 places."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return round(float(value), 4)
