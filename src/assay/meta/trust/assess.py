"""A score table and some human labels -> per dimension and per system, the mean human rating three ways (pure).

The table is a run's (or a scores file's) :class:`~assay.meta.table.ScoreTable`; the labels are a
user's ratings of some of its samples (:class:`Labels`: read from a file, or simulated on a benchmark
by hiding all but K of its ratings). Judge scores are put on the human scale by the linear map between
the two scales before anything is estimated, so that PPI's power tuning (clipped to [0, 1]) is not
starved by a judge on another scale.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from assay.meta.table import ScoreTable
from assay.meta.trust.ppi import MeanEstimate, choose_interval, difference, estimate_mean

__all__ = ["FEW_LABELS", "Labels", "few_warning", "simulate_labels", "to_human_scale", "trust"]

ScaleT = tuple[float, float]
#: Below this many labels an estimate carries a warning (docs/benchmarks.md, per system): on SummEval's skewed scales
#: normal and t intervals from 8-17 labels covered well under 95%; bootstrap-t held it, at widths that rarely
#: separate two systems.
FEW_LABELS = 30


def few_warning(kind: str) -> str:
    """The warning for an estimate from fewer than :data:`FEW_LABELS` labels, true to the interval kind it used."""
    if kind == "bootstrap-t":
        return (f"fewer than {FEW_LABELS} labels: the bootstrap-t interval widens for it and held its level per "
                "system on SummEval, but so wide that it rarely tells systems apart; label more (docs/trust.md)")
    return (f"fewer than {FEW_LABELS} labels: the {kind} interval is approximate and can cover well under its "
            "nominal level; --interval bootstrap-t (auto's choice here) holds it (docs/trust.md)")


@dataclass
class Labels:
    """Human ratings of some of a run's samples.

    Attributes:
        ratings: ``{dimension: {sample_id: rating}}``.
        inclusion: ``{sample_id: probability}`` the sample had of being picked, where the samples were
            drawn with unequal probabilities (``assay labels pick --strategy stratified``); None for a
            simple random draw.
        source: Where the labels came from, for the report.
        simulated: True when they are a benchmark's own ratings with all but K hidden (``--labels K``).
    """

    ratings: dict[str, dict[str, float]]
    inclusion: dict[str, float] | None = None
    source: str = ""
    simulated: bool = False
    notes: list[str] = field(default_factory=list)


def simulate_labels(table: ScoreTable, k: int, *, seed: int = 0, dimensions: Sequence[str] | None = None) -> Labels:
    """K samples drawn at random (seeded) among those rated by humans on every dimension asked; their ratings kept.

    Raises:
        ValueError: K below 2, or not fewer than the rated samples (nothing would stay unlabelled).
    """
    dims = list(dimensions or table.dimensions())
    wide = table.frame[table.frame["dimension"].isin(dims)].pivot_table(
        index="sample_id", columns="dimension", values="human", aggfunc="first", dropna=False)
    rated = sorted(wide.index[wide.reindex(columns=dims).notna().all(axis=1)])
    if k < 2 or k >= len(rated):
        raise ValueError(f"--labels {k}: choose 2 <= K < {len(rated)} (the samples with human ratings)")
    picked = np.random.default_rng(seed).choice(len(rated), size=k, replace=False)
    ids = [rated[i] for i in sorted(picked)]
    notes = []
    if len(rated) < wide.shape[0]:
        notes.append(f"{wide.shape[0] - len(rated)} sample(s) without a human rating on every dimension are "
                     "outside the simulation's pool")
    return Labels({d: {s: float(wide.at[s, d]) for s in ids} for d in dims}, None,
                  f"simulated: {k} of {len(rated)} rated samples drawn at random (seed {seed})", True, notes)


def to_human_scale(scores: np.ndarray, judge: ScaleT | None, human: ScaleT | None) -> np.ndarray:
    """Judge scores moved linearly from the judge's scale onto the human one (unchanged when either is unknown)."""
    if judge is None or human is None or tuple(judge) == tuple(human) or judge[1] == judge[0]:
        return np.asarray(scores, float)
    return human[0] + (np.asarray(scores, float) - judge[0]) / (judge[1] - judge[0]) * (human[1] - human[0])


def _pool(table: ScoreTable, dim: str, labels: Labels, judge: ScaleT | None, human: ScaleT | None,
          notes: list[str]) -> pd.DataFrame:
    """The dimension's units with the judge's score on the human scale (a failed unit's stand-in filled) and labels."""
    frame = table.dim(dim)[["sample_id", "doc_id", "system_id", "score", "human"]].copy()
    frame["yhat"] = to_human_scale(frame["score"].to_numpy(), judge, human)
    missing = frame["yhat"].isna()
    if missing.all():
        raise ValueError(f"{dim}: the judge scored none of the {len(frame)} units")
    if missing.any():
        stand_in = float(frame.loc[~missing, "yhat"].mean())
        frame.loc[missing, "yhat"] = stand_in
        notes.append(f"{int(missing.sum())} unit(s) the judge did not score enter PPI with the judge's mean "
                     f"({stand_in:.3f}) as their prediction (valid: PPI holds for any prediction made without "
                     "the labels) and are left out of the judge-only mean")
    rated = labels.ratings.get(dim, {})
    frame["y"] = frame["sample_id"].map(rated).astype(float)
    frame["labelled"] = frame["y"].notna()
    frame["judged"] = ~missing
    if labels.inclusion is not None:
        frame["p"] = frame["sample_id"].map(labels.inclusion).astype(float)
    return frame


@dataclass(frozen=True)
class How:
    """How every interval of one report is built: error level, interval kind, the human scale, bootstrap seed."""

    alpha: float = 0.05
    interval: str = "auto"
    scale: ScaleT | None = None
    seed: int = 0


def _estimate(frame: pd.DataFrame, how: How) -> MeanEstimate:
    """The three estimates on one pool (a dimension, or one system's units of it)."""
    lab, unl = frame[frame["labelled"]], frame[~frame["labelled"]]
    judge_all = frame.loc[frame["judged"], "yhat"].to_numpy()
    opts = {"alpha": how.alpha, "judge_all": judge_all, "interval": how.interval, "scale": how.scale,
            "seed": how.seed}
    if "p" in frame:
        # unequal inclusion: the labelled units are reweighted by 1/p, and the imputed term takes every unit's
        # prediction (the pool's exact mean), since the unlabelled units alone are not a fair picture of the pool
        return estimate_mean(lab["y"].to_numpy(), lab["yhat"].to_numpy(), frame["yhat"].to_numpy(),
                             weights=1 / lab["p"].to_numpy(), **opts)
    return estimate_mean(lab["y"].to_numpy(), lab["yhat"].to_numpy(), unl["yhat"].to_numpy(), **opts)


def _systems(frame: pd.DataFrame, how: How) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, MeanEstimate]]:
    """Per system the three estimates (or why there are none), and the paired differences between systems."""
    out: dict[str, Any] = {}
    fitted: dict[str, MeanEstimate] = {}
    for system, part in frame.groupby("system_id", sort=True):
        n_lab = int(part["labelled"].sum())
        if n_lab < 2 or n_lab == len(part):
            out[str(system)] = {"error": f"{n_lab} of {len(part)} units labelled: a system's interval needs at "
                                         "least 2 labelled and 1 unlabelled unit",
                                "judge_only": {"estimate": float(part.loc[part["judged"], "yhat"].mean())}}
            continue
        fitted[str(system)] = _estimate(part, how)
        out[str(system)] = fitted[str(system)].to_dict()
        if n_lab < FEW_LABELS:
            out[str(system)]["warning"] = few_warning(fitted[str(system)].interval)
    diffs = []
    for a, b in combinations(sorted(fitted), 2):
        docs_a = set(frame.loc[frame["system_id"] == a, "doc_id"])
        docs_b = set(frame.loc[frame["system_id"] == b, "doc_id"])
        diffs.append({"a": a, "b": b, **difference(fitted[a], fitted[b]), "same_inputs": docs_a == docs_b})
        if min(fitted[a].n_labelled, fitted[b].n_labelled) < FEW_LABELS:
            diffs[-1]["warning"] = few_warning(fitted[a].interval)
    return out, diffs, fitted


def trust(table: ScoreTable, labels: Labels, *, alpha: float = 0.05, dimensions: Sequence[str] | None = None,
          judge_scales: Mapping[str, ScaleT] | None = None, systems: bool = True, interval: str = "auto",
          seed: int = 0) -> dict[str, Any]:
    """Per dimension: the mean human rating over the table's samples three ways, per system, and system differences.

    Args:
        table: The run's scores (and, on a benchmark, its human ratings, used only for ``all_labels``).
        labels: The human labels to use (a file's, or simulated with :func:`simulate_labels`).
        alpha: Error level of the intervals.
        dimensions: Which dimensions (default every one that has labels).
        judge_scales: ``{dimension: (low, high)}`` of the judge's scores; the human scale comes from
            ``table.scales``. A dimension missing from either is taken as scored on the human scale.
        systems: Add the per-system estimates and the differences between systems.
        interval: ``auto``, ``normal``, ``t`` or ``bootstrap-t`` (:func:`~assay.meta.trust.ppi.choose_interval`);
            every estimate's JSON names the kind it used (``interval``).
        seed: The bootstrap's resampling seed.

    Returns:
        ``{dimension: {human_only, ppi, judge_only, n_labelled, n_unlabelled, lambda, rho, notes,
        [all_labels], systems: {system: {...}}, differences: [{a, b, human_only, ppi, judge_only}]}}``;
        a dimension that cannot be estimated holds ``{"error": why}``.
    """
    choose_interval(interval, 0)  # an unknown kind fails here, not once per dimension
    out: dict[str, Any] = {}
    for dim in dimensions or [d for d in table.dimensions() if labels.ratings.get(d)]:
        notes: list[str] = list(labels.notes)
        human = table.scales.get(dim)
        judge = (judge_scales or {}).get(dim)
        if judge is None or human is None:
            notes.append("the judge's scores are taken as on the human scale (one of the scales is unknown)")
        how = How(alpha, interval, tuple(human[:2]) if human else None, seed)
        try:
            frame = _pool(table, dim, labels, judge, human[:2] if human else None, notes)
            res = _estimate(frame, how)
        except ValueError as exc:
            out[dim] = {"error": str(exc), "n_labelled": len(labels.ratings.get(dim, {}))}
            continue
        row = res.to_dict()
        row["n_units"] = len(frame)
        row["notes"] = notes + row["notes"]
        if res.n_labelled < FEW_LABELS:
            row["warning"] = few_warning(res.interval)
        if labels.simulated:
            row["all_labels"] = float(frame["human"].mean())
        if systems:
            row["systems"], row["differences"], _ = _systems(frame, how)
            if labels.simulated:
                for system, part in frame.groupby("system_id"):
                    row["systems"][str(system)]["all_labels"] = float(part["human"].mean())
        out[dim] = row
    return out
