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
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Interval", "MeanEstimate", "difference", "estimate_mean", "power_tuning", "require_ppi"]


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
        """Half the interval's width (the normal quantile times the standard error), if there is one."""
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
        notes: What was done that a reader must know.
    """

    human_only: Interval
    ppi: Interval
    judge_only: Interval
    n_labelled: int
    n_unlabelled: int
    lam: float
    rho: float
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of ``trust.<dimension>`` (without the per-system parts)."""
        return {"human_only": self.human_only.to_dict(), "ppi": self.ppi.to_dict(),
                "judge_only": self.judge_only.to_dict(), "n_labelled": self.n_labelled,
                "n_unlabelled": self.n_unlabelled, "lambda": self.lam, "rho": self.rho, "notes": list(self.notes)}


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
                  judge_all: np.ndarray | None = None) -> MeanEstimate:
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

    Raises:
        ValueError: Fewer than two labelled units, or arrays of different lengths.
    """
    ppi_py = require_ppi()
    y, yhat, yhat_unl = (np.asarray(a, float) for a in (y, yhat, yhat_unl))
    if len(y) != len(yhat):
        raise ValueError(f"{len(y)} labels but {len(yhat)} judge scores for them")
    if len(y) < 2:
        raise ValueError(f"{len(y)} labelled unit(s): an interval needs at least 2")
    if len(yhat_unl) < 1:
        raise ValueError("no unlabelled units: every unit is labelled, use the labels' mean")
    notes = []
    w = None if weights is None else np.asarray(weights, float)
    w_unl = None if weights_unl is None else np.asarray(weights_unl, float)
    m = _norm_weights(w, len(y))
    lo, hi = ppi_py.classical_mean_ci(y, w=w, alpha=alpha)
    human = Interval(float(np.mean(m * y)), float(lo), float(hi))
    lam = power_tuning(y, yhat, yhat_unl, w, w_unl)
    lo, hi = ppi_py.ppi_mean_ci(y, yhat, yhat_unl, alpha=alpha, lam=lam, w=w, w_unlabeled=w_unl)
    est = ppi_py.ppi_mean_pointestimate(y, yhat, yhat_unl, lam=lam, w=w, w_unlabeled=w_unl)
    ppi = Interval(float(np.ravel(est)[0]), float(np.ravel(lo)[0]), float(np.ravel(hi)[0]))
    if np.ptp(y) == 0:
        notes.append(f"all {len(y)} labels are {y[0]:g}: the normal interval has zero width and is not to be "
                     "trusted with so few labels")
    if lam == 0.0:
        notes.append("power tuning chose lambda = 0: the judge's scores do not help here, PPI is the labels alone")
    everyone = np.concatenate([yhat, yhat_unl]) if judge_all is None else np.asarray(judge_all, float)
    rho = float(np.corrcoef(y, yhat)[0, 1]) if len(y) > 2 and np.std(y) > 0 and np.std(yhat) > 0 else float("nan")
    return MeanEstimate(human, ppi, Interval(float(np.mean(everyone))), len(y), len(yhat_unl), lam, rho, notes)


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
        if ia.half_width is None or ib.half_width is None:
            out[name] = {"estimate": est}
            continue
        hw = float(np.hypot(ia.half_width, ib.half_width))  # both at the same alpha: half-widths add as SEs do
        out[name] = {"estimate": est, "low": est - hw, "high": est + hw}
    out["n_labelled"] = [a.n_labelled, b.n_labelled]
    return out
