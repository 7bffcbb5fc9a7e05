"""SEAL's deterministic aggregation (Algorithm 1, equations 5-7) and the checks on the judge's weights.

Pure functions only: the same decisions and weights always give the same score, and a stored trace
can be re-aggregated offline (for instance with uniform weights, the w/o-weighting ablation) without a
single judge call.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: Weights whose sum is this close to 1 count as already normalised.
SUM_TOLERANCE = 1e-6


@dataclass(frozen=True)
class WeightCheck:
    """The outcome of checking the judge's weights.

    Attributes:
        weights: The weights used (summing to 1), or None when they are unusable.
        renormalised: True when the judge's weights did not sum to 1 and were divided by their sum.
        raw_sum: The sum of the judge's weights.
        error: Why the weights are unusable (negative, all zero, wrong count), else None.
    """

    weights: list[float] | None
    renormalised: bool
    raw_sum: float
    error: str | None = None


def uniform_weights(k: int) -> list[float]:
    """Equal weights over ``k`` sub-dimensions (the w/o-weighting ablation and the failure fallback)."""
    if k < 1:
        raise ValueError("need at least one sub-dimension")
    return [1.0 / k] * k


def check_weights(values: Sequence[float], k: int) -> WeightCheck:
    """Validate the judge's weights and normalise them to sum 1 (equation 5).

    Negative, non-finite or all-zero weights, or a count other than ``k``, make the weights unusable;
    the caller then falls back to uniform weights and records it. A sum other than 1 is repaired by
    renormalising, and flagged so the caller can record that it happened.
    """
    vals = [float(v) for v in values]
    total = math.fsum(vals) if all(math.isfinite(v) for v in vals) else float("nan")
    if len(vals) != k:
        return WeightCheck(None, False, total, f"expected {k} weights, got {len(vals)}")
    if not math.isfinite(total):
        return WeightCheck(None, False, total, "a weight is not a finite number")
    if any(v < 0 for v in vals):
        return WeightCheck(None, False, total, "negative weight")
    if total <= 0:
        return WeightCheck(None, False, total, "the weights sum to 0")
    renormalised = abs(total - 1.0) > SUM_TOLERANCE
    return WeightCheck([v / total for v in vals], renormalised, total)


def unit_score(weights: Sequence[float], decisions: Sequence[float]) -> float:
    """Equation 6: score(d, u) = sum over sub-dimensions s of w(s) * v(u, s)."""
    if len(weights) != len(decisions):
        raise ValueError(f"{len(weights)} weights for {len(decisions)} decisions")
    return math.fsum(w * v for w, v in zip(weights, decisions, strict=True))


def dimension_score(weights: Sequence[float], matrix: Sequence[Sequence[float]]) -> float:
    """Equation 7: the mean of the unit scores, every unit counting equally.

    Args:
        weights: One weight per sub-dimension, summing to 1.
        matrix: One row per unit, one decision (0/1, or a rating mapped onto [0, 1]) per sub-dimension.
    """
    if not matrix:
        raise ValueError("no units to aggregate")
    return math.fsum(unit_score(weights, row) for row in matrix) / len(matrix)


def rating_to_unit_interval(rating: float, low: float, high: float) -> float:
    """A scalar rating on [low, high] mapped onto [0, 1], so that w/o-SV scores share SEAL's range."""
    return (rating - low) / (high - low)


def rescore(trace: dict[str, Any], *, uniform: bool = False) -> float | None:
    """Re-aggregate a stored SEAL trace offline: no judge call.

    Args:
        trace: A judgment's trace (it holds ``matrix`` and ``weights.values``).
        uniform: Use uniform weights instead of the judge's (the w/o-weighting ablation).

    Returns:
        The dimension score, or None when the trace has no decisions (an unscored judgment).
    """
    matrix = trace.get("matrix")
    if not matrix:
        return None
    k = len(matrix[0])
    weights = uniform_weights(k) if uniform else trace["weights"]["values"]
    return dimension_score(weights, matrix)
