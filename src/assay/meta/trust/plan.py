"""How many labels a wanted interval needs, and which samples to send to people (pure).

Power analysis. For a mean, the classical interval's half-width is ``z * sigma / sqrt(n)``; PPI++ with
the variance-minimising lambda has the variance of ``n_eff = n (n + N) / (n + (1 - rho^2) N)`` labels
(Angelopoulos, Duchi and Zrnic 2023, PPI++, eq. for the tuned mean; the "effective sample size" of
Broska, Howes and van Loon 2024 that ``ppi_py.ppi_power`` uses). With a pool of M units of which n
are labelled (N = M - n), solving ``n_eff = n0`` for n gives ``n = n0 M (1 - rho^2) / (M - rho^2 n0)``,
the formula ``ppi_py``'s power analysis uses when the unlabelled set is capped at ``n_max``
(``_get_cheap_pair``); tests check the two agree. sigma and rho come from pilot labels.

Sampling plans. ``random``: a simple random draw. ``stratified``: strata are the system crossed with
bins of the judge's score (up to tertiles of the judge's mean over dimensions, fewer when K would give a
stratum under about 3 labels), K allocated in proportion to the strata's sizes with at least one per
stratum; each picked sample carries its inclusion probability ``n_h / N_h`` so that PPI can weight it by
``1 / p``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["labels_needed", "pick"]


def _n0(sigma: float, width: float, alpha: float, df: float | None = None) -> float:
    """Labels the classical interval needs for half-width ``width`` (normal quantile; Student's with ``df``)."""
    from scipy.stats import norm
    from scipy.stats import t as student

    q = norm.ppf(1 - alpha / 2) if df is None else student.ppf(1 - alpha / 2, max(df, 1.0))
    return (q * sigma / width) ** 2


def _solve(n_of: Any, planning: str) -> float:
    """``n_of(df)`` at its fixed point ``df = n - 1`` for Student's quantile (a few steps settle it); normal: once."""
    n = n_of(None)
    if planning == "normal":
        return n
    for _ in range(30):
        if not math.isfinite(n):
            return n
        n = n_of(n - 1)
    return n


def labels_needed(y: np.ndarray, yhat: np.ndarray, *, width: float, pool: int, alpha: float = 0.05,
                  price: float | None = None, interval: str = "normal") -> dict[str, Any]:
    """Labels needed for a two-sided interval of half-width ``width``, human-only and with PPI, from pilot labels.

    Args:
        y: Pilot human ratings.
        yhat: The judge's scores of the same units, on the human scale.
        width: The wanted half-width, on the human scale.
        pool: How many units the estimate covers (the run's samples): labels beyond it are impossible.
        alpha: Error level.
        price: Cost of one label, to report the cost of each plan.
        interval: The interval the labels will be read with: ``normal`` plans with the normal quantile, every
            other kind with Student's t at the planned n (bootstrap-t and hall have no closed-form width: the plan
            is the t interval's, and says so in ``notes``).

    Returns:
        ``{sigma, rho, human_only, ppi, interval, notes}``, each plan ``{labels, cost, feasible}``; a plan needing
        more labels than the pool is infeasible (``labels`` is then the pool, the most one can have).
    """
    y, yhat = np.asarray(y, float), np.asarray(yhat, float)
    if len(y) < 3:
        raise ValueError(f"{len(y)} pilot label(s): a power analysis needs at least 3")
    if width <= 0:
        raise ValueError(f"--width {width}: a half-width must be positive")
    sigma = float(np.std(y))
    rho = float(np.corrcoef(y, yhat)[0, 1]) if np.std(yhat) > 0 and sigma > 0 else 0.0
    planning = "normal" if interval == "normal" else "t"
    r2 = max(rho, 0.0) ** 2  # power tuning clips lambda at 0: a judge that runs against the labels adds nothing

    def ppi_n(df: float | None) -> float:
        n_h = _n0(sigma, width, alpha, df)
        denom = pool - r2 * n_h
        return n_h * pool * (1 - r2) / denom if denom > 0 else math.inf

    n0 = _solve(lambda df: _n0(sigma, width, alpha, df), planning)
    n_ppi = _solve(ppi_n, planning)
    notes = []
    if planning != interval:
        notes.append(f"planned with Student's t: the {interval} interval has no closed-form width; on skewed "
                     "ratings it runs wider than t's (docs/benchmarks.md)")

    def plan(n: float) -> dict[str, Any]:
        labels = math.ceil(n) if math.isfinite(n) else pool
        feasible = math.isfinite(n) and labels <= pool
        labels = min(labels, pool)
        return {"labels": labels, "feasible": feasible, "cost": None if price is None else labels * price}

    return {"sigma": sigma, "rho": rho, "width": width, "alpha": alpha, "pool": pool, "pilot": len(y),
            "human_only": plan(n0), "ppi": plan(n_ppi), "interval": planning, "notes": notes}


def _strata(units: pd.DataFrame, k: int, bins: int = 3) -> tuple[pd.Series, list[str]]:
    """Each unit's stratum (system x judge-score bin), with fewer bins when K cannot cover every stratum."""
    notes = []
    systems = units["system_id"].nunique()
    bins_fit = max(1, min(bins, k // (3 * max(systems, 1))))  # about 3 labels a stratum: close to proportional
    by_system = systems > 1 and k >= systems
    if not by_system and systems > 1:
        bins_fit = max(1, min(bins, k // 3))
        notes.append(f"K = {k} is fewer than the {systems} systems: strata are judge-score bins only")
    elif bins_fit < bins:
        notes.append(f"K = {k} covers {bins_fit} judge-score bin(s) per system, not {bins}")
    score = units["judge"].rank(method="first")
    score_bin = pd.qcut(score, bins_fit, labels=False) if bins_fit > 1 else pd.Series(0, index=units.index)
    key = (units["system_id"].astype(str) + "|" if by_system else "") + score_bin.astype(str)
    return key, notes


def _allocate(sizes: pd.Series, k: int) -> pd.Series:
    """K split in proportion to the strata's sizes (largest remainder), at least one per stratum."""
    if k < len(sizes):
        raise ValueError(f"K = {k} cannot give each of {len(sizes)} strata a label")
    raw = sizes / sizes.sum() * (k - len(sizes))
    alloc = np.floor(raw).astype(int) + 1
    rest = k - int(alloc.sum())
    for key in (raw - np.floor(raw)).sort_values(ascending=False).index[:rest]:
        alloc[key] += 1
    return alloc.clip(upper=sizes)


def pick(units: pd.DataFrame, k: int, *, strategy: str = "random", seed: int = 0) -> tuple[pd.DataFrame, list[str]]:
    """Which K units to label.

    Args:
        units: One row per sample: ``sample_id``, ``system_id`` and ``judge`` (the judge's mean score over
            dimensions on the human scale; NaN where it scored none).
        k: How many to pick.
        strategy: ``random`` or ``stratified``.
        seed: The draw's seed.

    Returns:
        The picked rows with ``inclusion_probability`` (and ``stratum`` when stratified), in the units'
        order, and notes on what was decided.

    Raises:
        ValueError: An unknown strategy, or K not between 1 and the number of units.
    """
    if strategy not in ("random", "stratified"):
        raise ValueError(f"--strategy {strategy!r}: choose random or stratified")
    if not 1 <= k <= len(units):
        raise ValueError(f"-n {k}: choose between 1 and {len(units)} (the run's samples)")
    rng = np.random.default_rng(seed)
    units = units.reset_index(drop=True)
    if strategy == "random":
        out = units.iloc[np.sort(rng.choice(len(units), size=k, replace=False))].copy()
        out["inclusion_probability"] = k / len(units)
        return out, []
    filled = units.assign(judge=units["judge"].fillna(units["judge"].mean()))
    key, notes = _strata(filled, k)
    sizes = key.value_counts().sort_index()
    alloc = _allocate(sizes, k)
    chosen: list[int] = []
    for stratum, n_h in alloc.items():
        members = np.flatnonzero((key == stratum).to_numpy())
        chosen += [int(i) for i in rng.choice(members, size=int(n_h), replace=False)]
    out = units.iloc[sorted(chosen)].copy()
    out["stratum"] = key.iloc[out.index].to_numpy()
    out["inclusion_probability"] = (out["stratum"].map(alloc) / out["stratum"].map(sizes)).astype(float)
    if units["judge"].isna().any():
        notes.append(f"{int(units['judge'].isna().sum())} sample(s) the judge scored on no dimension are binned "
                     "at the judge's mean")
    return out, notes
