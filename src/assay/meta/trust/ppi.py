"""Mean human rating from a few labels and many judge scores: human-only, PPI++ and judge-only (pure, numpy).

The estimators come from ``ppi_py`` (Angelopoulos et al. 2023, "Prediction-powered inference";
Angelopoulos, Duchi and Zrnic 2023, "PPI++: Efficient prediction-powered inference", arXiv:2311.01453).
Only the power-tuning parameter is computed here as well (the same formula ``ppi_py`` uses,
:func:`power_tuning`), because ``ppi_py`` does not return it and the report shows it.

The estimand is the mean human rating over a pool of units (a run's samples for one dimension). A
unit is labelled (a person rated it) or not; the judge scored every unit, or a unit it failed takes a
fixed stand-in prediction (PPI is valid for any prediction that does not look at the labels).
Assumption behind every interval: the labelled units are a random draw from the pool, or a draw
with known inclusion probabilities (then ``weights`` are ``1 / probability``).

``ppi_py`` gives each estimate and its standard error; the interval around them is built by
:mod:`~assay.meta.trust.small` (``interval``: ``normal`` is ``ppi_py``'s own, ``t`` and ``bootstrap-t`` are the
small-sample ones; ``auto`` takes bootstrap-t below :data:`AUTO_BELOW` labels and normal from there on).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from assay.meta.trust.small import BOOT_REPS, INTERVALS, bounds

__all__ = ["AUTO_BELOW", "CHOICES", "Interval", "MeanEstimate", "choose_interval", "difference", "estimate_mean",
           "power_tuning", "require_ppi"]

#: ``auto`` takes the bootstrap-t interval below this many labels and the normal one from there on: on SummEval and
#: Topical-Chat the normal interval covered at least 94.9% at K = 200 and missed 94% at K = 50-100 on skewed
#: dimensions, where bootstrap-t held it (docs/benchmarks.md, "Trust on your own data").
AUTO_BELOW = 200
#: What ``--interval`` accepts.
CHOICES = ("auto", *INTERVALS)


def choose_interval(interval: str, n: int) -> str:
    """The interval kind used for an estimate from ``n`` labels (``auto`` resolved).

    Raises:
        ValueError: An unknown kind.
    """
    if interval not in CHOICES:
        raise ValueError(f"--interval {interval!r}: choose one of {', '.join(CHOICES)}")
    if interval != "auto":
        return interval
    return "bootstrap-t" if n < AUTO_BELOW else "normal"


def require_ppi() -> Any:
    """The ``ppi_py`` module, or a clear error naming the extra that installs it."""
    try:
        import ppi_py
    except ImportError as exc:  # pragma: no cover - depends on the environment
        from assay.errors import ConfigError

        raise ConfigError("prediction-powered intervals need the ppi-python package: "
                          "pip install 'assay[trust]' (or pip install ppi-python)") from exc
    return ppi_py


@dataclass(frozen=True)
class Interval:
    """A point estimate with its two-sided interval (``low``/``high`` None where no valid interval exists)."""

    estimate: float
    low: float | None = None
    high: float | None = None

    @property
    def half_width(self) -> float | None:
        """Half the interval's width, if there is one (the interval may be asymmetric: see ``low``/``high``)."""
        return None if self.low is None or self.high is None else (self.high - self.low) / 2

    def to_dict(self) -> dict[str, float | None]:
        """``{estimate, low, high}``; the judge-only figure carries ``estimate`` alone."""
        if self.low is None:
            return {"estimate": self.estimate}
        return {"estimate": self.estimate, "low": self.low, "high": self.high}


@dataclass
class MeanEstimate:
    """One mean three ways, with what it was computed from.

    Attributes:
        human_only: The classical interval from the labels alone.
        ppi: The prediction-powered interval (PPI++ with power tuning).
        judge_only: The judge's mean on the human scale (no valid interval: the judge's bias is unknown).
        n_labelled: Labelled units used.
        n_unlabelled: Units whose judge scores enter the imputed term.
        lam: The power-tuning parameter (0: the labels alone; 1: plain PPI).
        rho: Pearson correlation of judge and human on the labelled units (NaN below 3).
        interval: The interval kind used for ``human_only`` and ``ppi`` (``normal``, ``t``, ``bootstrap-t``).
        notes: What was done that a reader must know.
    """

    human_only: Interval
    ppi: Interval
    judge_only: Interval
    n_labelled: int
    n_unlabelled: int
    lam: float
    rho: float
    interval: str = "normal"
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of ``trust.<dimension>`` (without the per-system parts)."""
        return {"human_only": self.human_only.to_dict(), "ppi": self.ppi.to_dict(),
                "judge_only": self.judge_only.to_dict(), "n_labelled": self.n_labelled,
                "n_unlabelled": self.n_unlabelled, "lambda": self.lam, "rho": self.rho, "interval": self.interval,
                "notes": list(self.notes)}


def _norm_weights(w: np.ndarray | None, n: int) -> np.ndarray:
    """Weights scaled to mean one, as ``ppi_py`` scales them (all ones when none are given)."""
    return np.ones(n) if w is None else np.asarray(w, float) / np.sum(w) * n


def power_tuning(y: np.ndarray, yhat: np.ndarray, yhat_unl: np.ndarray, w: np.ndarray | None = None,
                 w_unl: np.ndarray | None = None) -> float:
    """PPI++'s variance-minimising lambda for a mean, clipped to [0, 1], as ``ppi_py.ppi_mean_ci(lam=None)``.

    lambda = Cov(Y, Yhat) / ((1 + n / N) Var(Yhat)), with the covariance from the labelled units and the
    variance of the predictions over labelled and unlabelled units together (PPI++, section 2, and
    ``ppi_py.ppi._calc_lam_glm``): tests check that the interval with this lambda is ``ppi_py``'s own.
    """
    n, big_n = len(y), len(yhat_unl)
    w, w_unl = _norm_weights(w, n), _norm_weights(w_unl, big_n)
    theta = float(np.mean(w_unl * yhat_unl) + np.mean(w * (y - yhat)))  # plain PPI (lambda = 1)
    g, gh, gu = w * (y - theta), w * (yhat - theta), w_unl * (yhat_unl - theta)
    cov = float(np.mean((g - g.mean()) * (gh - gh.mean())))
    var = float(np.var(np.concatenate([gh, gu]), ddof=1))
    if var <= 0 or not np.isfinite(var):
        return 0.0
    return float(np.clip(cov / ((1 + n / big_n) * var), 0.0, 1.0))


def estimate_mean(y: np.ndarray, yhat: np.ndarray, yhat_unl: np.ndarray, *, alpha: float = 0.05,
                  weights: np.ndarray | None = None, weights_unl: np.ndarray | None = None,
                  judge_all: np.ndarray | None = None, interval: str = "auto",
                  scale: tuple[float, float] | None = None, seed: int = 0) -> MeanEstimate:
    """The mean human rating three ways.

    Args:
        y: Human ratings of the labelled units.
        yhat: The judge's scores of the same units, on the human scale.
        yhat_unl: The judge's scores of the unlabelled units, on the human scale.
        alpha: Error level (0.05: 95% intervals).
        weights / weights_unl: Inverse inclusion probabilities of labelled / unlabelled units (None: a
            simple random draw).
        judge_all: The judge's scores of every unit for the judge-only mean (default labelled and
            unlabelled together).
        interval: ``auto``, ``normal``, ``t`` or ``bootstrap-t`` (:func:`choose_interval`).
        scale: The human scale ``(low, high)``: intervals are clipped to it (the mean cannot leave it), which
            closes a bootstrap tail left open by too few distinct labels.
        seed: The bootstrap's resampling seed (the same seed, the same interval).

    Raises:
        ValueError: Fewer than two labelled units, arrays of different lengths, an unknown interval.
    """
    ppi_py = require_ppi()
    y, yhat, yhat_unl = (np.asarray(a, float) for a in (y, yhat, yhat_unl))
    if len(y) != len(yhat):
        raise ValueError(f"{len(y)} labels but {len(yhat)} judge scores for them")
    if len(y) < 2:
        raise ValueError(f"{len(y)} labelled unit(s): an interval needs at least 2")
    if len(yhat_unl) < 1:
        raise ValueError("no unlabelled units: every unit is labelled, use the labels' mean")
    kind = choose_interval(interval, len(y))
    notes = []
    w = None if weights is None else np.asarray(weights, float)
    w_unl = None if weights_unl is None else np.asarray(weights_unl, float)
    m, m_unl = _norm_weights(w, len(y)), _norm_weights(w_unl, len(yhat_unl))
    lo, hi = ppi_py.classical_mean_ci(y, w=w, alpha=alpha)
    human = _widen(float(np.mean(m * y)), float(lo), float(hi), alpha, kind, m * y, 0.0, scale, seed)
    lam = power_tuning(y, yhat, yhat_unl, w, w_unl)
    lo, hi = ppi_py.ppi_mean_ci(y, yhat, yhat_unl, alpha=alpha, lam=lam, w=w, w_unlabeled=w_unl)
    est = ppi_py.ppi_mean_pointestimate(y, yhat, yhat_unl, lam=lam, w=w, w_unlabeled=w_unl)
    se_u = float(np.std(m_unl * lam * yhat_unl) / np.sqrt(len(yhat_unl)))
    ppi = _widen(float(np.ravel(est)[0]), float(np.ravel(lo)[0]), float(np.ravel(hi)[0]), alpha, kind,
                 m * (y - lam * yhat), se_u, scale, seed)
    if np.ptp(y) == 0:
        notes.append(f"all {len(y)} labels are {y[0]:g}: no interval (labels without spread cannot say how far "
                     "the mean may lie from them); label more units")
    elif human.low is None or ppi.low is None:
        notes.append(f"the {kind} interval is open on one side ({len(y)} labels with too few distinct values) and "
                     "no rating scale closes it: no interval; give the scale or label more units")
    if lam == 0.0:
        notes.append("power tuning chose lambda = 0: the judge's scores do not help here, PPI is the labels alone")
    everyone = np.concatenate([yhat, yhat_unl]) if judge_all is None else np.asarray(judge_all, float)
    rho = float(np.corrcoef(y, yhat)[0, 1]) if len(y) > 2 and np.std(y) > 0 and np.std(yhat) > 0 else float("nan")
    return MeanEstimate(human, ppi, Interval(float(np.mean(everyone))), len(y), len(yhat_unl), lam, rho, kind,
                        notes)


def _widen(est: float, lo: float, hi: float, alpha: float, kind: str, terms: np.ndarray, se_u: float,
           scale: tuple[float, float] | None, seed: int) -> Interval:
    """``ppi_py``'s normal interval ``(lo, hi)`` around ``est`` rebuilt as ``kind`` from its standard error.

    No interval (``low``/``high`` None) when the standard error is zero: every labelled term equal and nothing
    from the unlabelled units, a spread of zero that says nothing about the mean's uncertainty.
    """
    from scipy.stats import norm

    se = (hi - lo) / (2 * norm.ppf(1 - alpha / 2))
    if not se > 0:
        return Interval(est)
    a, b = bounds(np.array([est]), np.array([se]), len(terms), alpha=alpha, kind=kind, terms=terms[None, :],
                  se_u=np.array([se_u]), reps=BOOT_REPS, seed=seed)
    low, high = float(a[0]), float(b[0])
    if scale is not None:
        low, high = max(low, float(scale[0])), min(high, float(scale[1]))
    if not (np.isfinite(low) and np.isfinite(high)):
        return Interval(est)  # an open bootstrap tail and no scale to close it: no finite interval to give
    return Interval(est, low, high)


def difference(a: MeanEstimate, b: MeanEstimate) -> dict[str, Any]:
    """``a - b`` three ways, from two estimates on disjoint units (two systems' outputs).

    The two estimates' labelled units are different units, so their rectifier terms are independent and
    the variances add. Their imputed terms share inputs (both systems answered the same inputs); the
    judge's scores of two systems on one input are positively correlated in practice, so adding the
    variances overstates the difference's variance: the interval is conservative, never too narrow for
    that reason.
    """
    out: dict[str, Any] = {"judge_only": {"estimate": a.judge_only.estimate - b.judge_only.estimate}}
    for name in ("human_only", "ppi"):
        ia, ib = getattr(a, name), getattr(b, name)
        est = ia.estimate - ib.estimate
        if None in (ia.low, ia.high, ib.low, ib.high):
            out[name] = {"estimate": est}
            continue
        # each side from the matching sides of the two intervals (MOVER: Zou and Donner 2008, "Construction of
        # confidence limits about effect measures: a general approach", Stat. Med. 27(10)): equal to adding the
        # standard errors when both are symmetric, and keeps a bootstrap-t interval's asymmetry
        down = float(np.hypot(ia.estimate - ia.low, ib.high - ib.estimate))  # type: ignore[operator]
        up = float(np.hypot(ia.high - ia.estimate, ib.estimate - ib.low))  # type: ignore[operator]
        out[name] = {"estimate": est, "low": est - down, "high": est + up}
    out["n_labelled"] = [a.n_labelled, b.n_labelled]
    out["interval"] = a.interval if a.interval == b.interval else f"{a.interval} / {b.interval}"
    return out
