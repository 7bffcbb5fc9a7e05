"""Consistency and transfer of rubric application (GER-Eval sections 4.2-4.3, tables 3, 6-8 and 13).

Input: two or more run directories that applied the same rubric: the same judge zero-shot and
few-shot (cross-prompt consistency), or judges B, C, ... applying a rubric written by judge A
(transfer). Per criterion:

- pairwise, for every two runs: exact agreement (share of units with the same score), Pearson and
  Spearman correlation over the units both scored (table 3);
- with the runs as raters: ICC(2,1) and ICC(2,k), Krippendorff's alpha (interval) and Fleiss' kappa
  over the criterion's scale values (tables 6-8 and 13). The statistics are
  :mod:`assay.meta.agreement`'s; this module only arranges the scores. It reads no run: the runs'
  manifests and scores come from :func:`assay.meta.inputs.load_transfer_runs`.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from assay.errors import ConfigError
from assay.meta.agreement import fleiss_kappa, icc, krippendorff_alpha
from assay.meta.correlation import correlate
from assay.types import Scale

Scores = dict[tuple[str, str], float | None]


@dataclass
class LoadedRuns:
    """The scores of several runs, keyed by (sample id, criterion), with the criteria's scales.

    Attributes:
        labels: One label per run (directory, judge, shots).
        scores: One score table per run; None for a unit the run could not score.
        scales: The scale of each criterion (from the first run that has it).
        notes: Mismatches worth knowing (different rubrics, other methods, criteria not shared).
    """

    labels: list[str]
    scores: list[Scores]
    scales: dict[str, Scale]
    notes: list[str] = field(default_factory=list)

    def criteria(self) -> list[str]:
        """Criteria every run judged, in the first run's order."""
        shared = set.intersection(*({c for _, c in s} for s in self.scores)) if self.scores else set()
        return [c for c in self.scales if c in shared]


def collect_runs(runs: list[tuple[Path, dict[str, Any], Scores]]) -> LoadedRuns:
    """The runs' scores, labels and scales, with notes on what does not match.

    Args:
        runs: Per run: its directory, its manifest and its scores by (sample id, criterion).

    Raises:
        ConfigError: No criterion judged by all of them.
    """
    labels, tables, notes, hashes, methods = [], [], [], set(), set()
    scales: dict[str, Scale] = {}
    for path, manifest, table in runs:
        judge = manifest.get("judge", {})
        settings = manifest.get("method_settings", {})
        labels.append(f"{path.name} ({judge.get('backend')}:{judge.get('model')}, {settings.get('shots', 0)}-shot)")
        methods.add(manifest.get("method"))
        hashes.add((manifest.get("artifacts") or {}).get("rubric", {}).get("criteria_sha256"))
        for d in manifest.get("dimensions", []):
            scales.setdefault(d["name"], Scale.model_validate(d["scale"]))
        tables.append(table)
    if len(methods) > 1:
        notes.append(f"the runs were made with different methods ({', '.join(sorted(map(str, methods)))}): "
                     "criteria are matched by name")
    if len(hashes) > 1:
        notes.append("the runs applied different rubrics: criteria are matched by name")
    loaded = LoadedRuns(labels, tables, scales, notes)
    if not loaded.criteria():
        raise ConfigError("the runs share no criterion")
    dropped = sorted({c for t in tables for _, c in t} - set(loaded.criteria()))
    if dropped:
        notes.append(f"criteria not judged by every run are left out: {', '.join(dropped)}")
    return loaded


def criterion_matrix(loaded: LoadedRuns, criterion: str) -> np.ndarray:
    """Scores of one criterion as ``[n_runs, n_items]`` (NaN where a run has no score)."""
    items = sorted({sid for t in loaded.scores for sid, c in t if c == criterion})
    rows = [[_nan(t.get((sid, criterion))) for sid in items] for t in loaded.scores]
    return np.asarray(rows, dtype=float)


def _nan(x: float | None) -> float:
    return float("nan") if x is None else float(x)


def _clean(x: float) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def pair_stats(a: np.ndarray, b: np.ndarray) -> dict[str, Any]:
    """Exact agreement, Pearson and Spearman (:func:`assay.meta.correlation.correlate`) over the items both
    runs scored."""
    both = ~np.isnan(a) & ~np.isnan(b)
    x, y = a[both], b[both]
    out: dict[str, Any] = {"n": int(both.sum()), "agreement": None, "pearson": None, "spearman": None}
    if len(x) == 0:
        return out
    out["agreement"] = float(np.mean(x == y))
    out["pearson"] = _clean(correlate(x, y, "pearson"))
    out["spearman"] = _clean(correlate(x, y, "spearman"))
    return out


def reliability(matrix: np.ndarray, scale: Scale) -> dict[str, Any]:
    """ICC(2,1), ICC(2,k), Krippendorff's alpha (interval) and Fleiss' kappa of the runs as raters.

    Fleiss' kappa uses the scale's values as categories; a continuous scale is cut into five
    equal bins.
    """
    complete = int((~np.isnan(matrix)).all(axis=0).sum())
    iccs = icc(matrix)
    if scale.integer:
        kappa = fleiss_kappa(matrix, categories=scale.values())
    else:
        kappa = fleiss_kappa(matrix, bins=list(np.linspace(scale.low, scale.high, 6)))
    return {"n": complete, "icc2_1": _clean(iccs["icc2_1"]), "icc2_k": _clean(iccs["icc2_k"]),
            "alpha": _clean(krippendorff_alpha(matrix, "interval")), "kappa": _clean(kappa)}


def transfer_tables(loaded: LoadedRuns) -> dict[str, list[dict[str, Any]]]:
    """The pairwise table (every two runs, per criterion) and the reliability table (per criterion)."""
    pairwise, multi = [], []
    for criterion in loaded.criteria():
        m = criterion_matrix(loaded, criterion)
        for i, j in itertools.combinations(range(len(loaded.labels)), 2):
            pairwise.append({"criterion": criterion, "a": loaded.labels[i], "b": loaded.labels[j]}
                            | pair_stats(m[i], m[j]))
        multi.append({"criterion": criterion} | reliability(m, loaded.scales[criterion]))
    return {"pairwise": pairwise, "reliability": multi}
