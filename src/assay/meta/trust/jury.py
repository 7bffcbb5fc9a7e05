"""Several judges' scores of the same units combined into one jury score per unit (pure).

Each member's scores are first put on the human scale. ``equal``: the members' mean. ``learned``: least
squares of the human labels on the members' scores (with an intercept), fitted with K-fold
cross-fitting: a labelled unit's jury score comes from weights fitted without its fold, every other unit
from weights fitted on all labels. A unit some member did not score gets no jury score unless the
caller asks for ``missing="mean"`` (equal weights only), in which case it is the mean of the members
that scored it and says so in its trace: never a silent mean of fewer judges.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["WEIGHTS", "combine"]

WEIGHTS = ("equal", "learned")


def _fit(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least-squares intercept and member weights."""
    design = np.column_stack([np.ones(len(x)), x])
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    return coef


def _apply(coef: np.ndarray, x: np.ndarray) -> np.ndarray:
    return coef[0] + x @ coef[1:]


def combine(scores: np.ndarray, members: Sequence[str], *, weights: str = "equal", missing: str = "none",
            labels: np.ndarray | None = None, folds: int = 5, seed: int = 0) -> dict[str, Any]:
    """The jury's score per unit.

    Args:
        scores: ``units x members`` scores on the human scale, NaN where a member gave none.
        members: The members' names (for errors and weights).
        weights: ``equal`` or ``learned``.
        missing: ``none`` (a unit some member did not score gets no jury score) or ``mean`` (the mean of
            the members that did; equal weights only).
        labels: Human ratings per unit, NaN where unlabelled (``learned`` needs them).
        folds: K for the cross-fitting of learned weights.
        seed: Fold assignment seed.

    Returns:
        ``{score, error, partial, weights, notes}``: per unit the jury score (NaN without one) and the error
        saying why, ``partial`` the members missing where a partial mean was taken, ``weights`` the
        intercept and member weights fitted on every label (learned) or 1/m each (equal).

    Raises:
        ValueError: Unknown options, ``learned`` without enough complete labelled units, ``mean`` with learned.
    """
    scores = np.asarray(scores, float)
    if weights not in WEIGHTS:
        raise ValueError(f"--weights {weights!r}: choose {' or '.join(WEIGHTS)}")
    if missing not in ("none", "mean"):
        raise ValueError(f"--missing {missing!r}: choose none or mean")
    if weights == "learned" and missing == "mean":
        raise ValueError("--missing mean takes equal weights only: learned weights need every member's score")
    units, m = scores.shape
    absent = np.isnan(scores)
    complete = ~absent.any(axis=1)
    errors = [None if complete[i] else "jury: no score from " + ", ".join(
        members[j] for j in range(m) if absent[i, j]) for i in range(units)]
    partial: list[list[str] | None] = [None] * units
    notes: list[str] = []
    if weights == "equal":
        out = scores.mean(axis=1)  # NaN wherever a member gave no score
        if missing == "mean":
            some = ~complete & ~absent.all(axis=1)
            with np.errstate(all="ignore"):
                out[some] = np.nanmean(scores[some], axis=1)
            for i in np.flatnonzero(some):
                partial[i] = [members[j] for j in range(m) if absent[i, j]]
                errors[i] = None
            if some.any():
                notes.append(f"{int(some.sum())} unit(s) scored by the mean of fewer than {m} members (--missing "
                             "mean); each unit's trace names the missing members")
        coef = np.concatenate([[0.0], np.full(m, 1 / m)])
        return {"score": out, "error": errors, "partial": partial, "weights": coef, "notes": notes}
    y = np.full(units, np.nan) if labels is None else np.asarray(labels, float)
    train = complete & ~np.isnan(y)
    idx = np.flatnonzero(train)
    k = min(folds, len(idx))
    if len(idx) < m + 2 or k < 2:
        raise ValueError(f"learned weights need at least {m + 2} labelled units every member scored; "
                         f"there are {len(idx)}")
    coef = _fit(scores[idx], y[idx])
    out = np.full(units, np.nan)
    out[complete] = _apply(coef, scores[complete])
    fold = np.random.default_rng(seed).permutation(len(idx)) % k
    for f in range(k):
        held = idx[fold == f]
        out[held] = _apply(_fit(scores[idx[fold != f]], y[idx[fold != f]]), scores[held])
    notes.append(f"learned weights fitted on {len(idx)} labelled units with {k}-fold cross-fitting: a labelled "
                 "unit's jury score comes from weights that never saw its label")
    return {"score": out, "error": errors, "partial": partial, "weights": coef, "notes": notes}
