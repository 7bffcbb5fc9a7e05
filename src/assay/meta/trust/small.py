"""Small-sample intervals for a mean of independent terms: normal, Student-t and bootstrap-t (pure, numpy/scipy).

``ppi_py`` gives the estimate and its standard error; its intervals use the normal quantile, which undercovers
with 50-100 labels on skewed ratings (most 5s on a 1-5 scale: docs/benchmarks.md). This module only replaces the
quantile:

- ``normal``: ``estimate +/- z * se`` (``ppi_py``'s own interval).
- ``t``: ``estimate +/- t(n-1) * se``, Student's quantile with n - 1 degrees of freedom: wider by a fixed factor
  (1.04 at n = 50), still symmetric, so it does not correct for skewness.
- ``bootstrap-t``: the studentized bootstrap (Efron and Tibshirani 1993, "An Introduction to the Bootstrap",
  ch. 12.5; Hall 1988, "Theoretical comparison of bootstrap confidence intervals", Ann. Statist. 16(3)): the
  labelled terms are resampled with replacement, each resample's t-statistic ``(mean* - mean) / se*`` is formed,
  and its quantiles replace +/- z. The interval is asymmetric where the terms are skewed and its coverage error
  is of order 1/n instead of 1/sqrt(n) for the normal and t intervals.
- ``hall``: Hall's skewness-removing transformation of the studentized statistic (Hall 1992, "On the removal of
  skewness by transformation", J. R. Statist. Soc. B 54(1), 221-228): ``g(T) = T + a T^2 + a^2 T^3 / 3 + b`` with
  ``a = s / 3`` and ``b = s / 6``, where ``s`` is the estimate's own skewness (``m3(r) / n^2 / se^3``; for a plain
  mean ``gamma / sqrt(n)``). ``g`` is monotone and inverted in closed form, so the interval is asymmetric like
  bootstrap-t's, of the same order of accuracy, deterministic and without resampling. The unlabelled term counts as
  normal: it adds to ``se`` and so dilutes ``s`` (the studentized statistic's mean ``-s/2`` and third cumulant
  ``-2s``, on which ``a`` and ``b`` rest, hold with ``s`` so defined: a delta-method step of ours, checked by the
  benchmark's coverage, not taken from the paper).

Both estimators are a labelled mean plus, for PPI++, an independent term from the unlabelled units:
``theta = mean(r_i) + m_u`` with ``r_i = w_i (y_i - lambda * yhat_i)`` (``w_i y_i`` for human-only) and
``m_u = mean(w_u lambda yhat_u)`` (0 for human-only), ``se^2 = var(r) / n + se_u^2``. The bootstrap resamples the
labelled terms; the unlabelled mean, averaged over N >> n units, enters each resample as a normal draw with its
standard error ``se_u`` (the CLT for N units; its skewness is divided by sqrt(N)), so its variance is kept in both
the numerator and the denominator of each t*. lambda is held at its tuned value.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import norm
from scipy.stats import t as student

__all__ = ["BOOT_REPS", "INTERVALS", "bounds"]

#: The interval kinds, in the order the docs and the benchmark list them.
INTERVALS = ("normal", "t", "bootstrap-t", "hall")
#: Bootstrap resamples per interval: the 2.5% tail rests on 25 of them (Efron and Tibshirani 1993, ch. 12.5, use 1,000).
BOOT_REPS = 1000
_CHUNK = 2_000_000  # resampled terms held in memory at once (x 8 bytes)


def _t_star(terms: np.ndarray, se_u: np.ndarray, reps: int, rng: np.random.Generator) -> np.ndarray:
    """Bootstrap t-statistics, ``(S, reps)``, for each row of ``terms`` (``S x n``) with the unlabelled SE ``se_u``."""
    s, n = terms.shape
    centre = terms.mean(1, keepdims=True)
    out = np.empty((s, reps))
    rows = max(1, _CHUNK // (reps * n))
    for a in range(0, s, rows):
        part = terms[a:a + rows]
        idx = rng.integers(0, n, size=(part.shape[0], reps, n))
        boot = np.take_along_axis(part[:, None, :], idx, axis=2)
        mean_b, var_b = boot.mean(2), boot.var(2)
        su = se_u[a:a + rows, None]
        shift = rng.standard_normal(mean_b.shape) * su  # the unlabelled mean's own fluctuation
        se_b = np.sqrt(var_b / n + su**2)
        num = mean_b + shift - centre[a:a + rows]
        with np.errstate(divide="ignore", invalid="ignore"):
            t = num / se_b
        # a resample with no spread: t* is 0 if it sits on the estimate, else +/- infinity (an open tail)
        flat = se_b == 0
        t[flat] = np.where(num[flat] > 0, np.inf, np.where(num[flat] < 0, -np.inf, 0.0))
        out[a:a + rows] = t
    return out


def _hall(estimate: np.ndarray, se: np.ndarray, terms: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Hall's (1992) transformation interval: ``T`` between ``g^-1(-z)`` and ``g^-1(z)``, ``mu = est - se * T``."""
    n = terms.shape[1]
    m3 = ((terms - terms.mean(1, keepdims=True)) ** 3).mean(1)
    with np.errstate(divide="ignore", invalid="ignore"):
        skew = np.where(se > 0, m3 / n**2 / se**3, 0.0)
    a, b = skew / 3, skew / 6
    z = norm.ppf(1 - alpha / 2)

    def g_inv(y: float) -> np.ndarray:
        # g(x) = ((1 + a x)^3 - 1) / (3 a) + b, so x = (cbrt(1 + 3 a (y - b)) - 1) / a (x = y - b when a = 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            x = (np.cbrt(1 + 3 * a * (y - b)) - 1) / a
        return np.where(a == 0, y - b, x)

    return estimate - se * g_inv(z), estimate - se * g_inv(-z)


def bounds(estimate: np.ndarray, se: np.ndarray, n: int, *, alpha: float, kind: str,
           terms: np.ndarray | None = None, se_u: np.ndarray | None = None, reps: int = BOOT_REPS,
           seed: int | np.random.Generator = 0) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds of a (1 - alpha) interval for one or many estimates (vectorised over rows).

    Args:
        estimate: The point estimates (``ppi_py``'s), shape ``(S,)``.
        se: Their standard errors (``ppi_py``'s: the normal interval's half-width over z), shape ``(S,)``.
        n: Labelled units behind each estimate.
        alpha: Error level.
        kind: One of :data:`INTERVALS`.
        terms: ``(S, n)`` labelled terms whose mean is the labelled part of the estimate (bootstrap-t, hall).
        se_u: ``(S,)`` standard error of the unlabelled part (0 for human-only; bootstrap-t only: hall reads it
            through ``se``).
        reps: Bootstrap resamples.
        seed: Seed or generator of the resampling (the same seed gives the same interval).

    Returns:
        ``(low, high)`` arrays; infinite where a bootstrap tail is open (resamples with no spread beyond the
        quantile: fewer labels than the tail needs), for the caller to clip to the rating scale.

    Raises:
        ValueError: An unknown kind, or bootstrap-t without its terms.
    """
    estimate, se = np.atleast_1d(np.asarray(estimate, float)), np.atleast_1d(np.asarray(se, float))
    if kind == "normal":
        q = norm.ppf(1 - alpha / 2)
        return estimate - q * se, estimate + q * se
    if kind == "t":
        q = student.ppf(1 - alpha / 2, n - 1)
        return estimate - q * se, estimate + q * se
    if kind not in INTERVALS:
        raise ValueError(f"interval {kind!r}: choose one of {', '.join(INTERVALS)}")
    if terms is None:
        raise ValueError(f"a {kind} interval needs the labelled terms")
    terms = np.atleast_2d(np.asarray(terms, float))
    se_u = np.zeros(len(terms)) if se_u is None else np.atleast_1d(np.asarray(se_u, float))
    if kind == "hall":
        return _hall(estimate, se, terms, alpha)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    t = _t_star(terms, se_u, reps, rng)
    hi_q = np.quantile(t, 1 - alpha / 2, axis=1, method="higher")
    lo_q = np.quantile(t, alpha / 2, axis=1, method="lower")
    flat = se == 0  # no spread at all: no quantile to scale, the caller reports no interval
    with np.errstate(invalid="ignore"):
        return (np.where(flat, estimate, estimate - hi_q * se), np.where(flat, estimate, estimate - lo_q * se))
