"""Several runs (methods x judges) side by side: correlations, agreement per judge group, significance, stability.

This is the shape of CheckEval 2025's analysis: one run per (method, judge); agreement among the
judges of one method, per named group (CheckEval's Large / Medium / Small / GPT); a rank-sum test
of the per-judge correlations of two methods with Benjamini-Hochberg over the family; the mean and
variance of the correlations across judges (or repeated runs) with their density.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from assay.common.files import read_yaml
from assay.errors import ConfigError
from assay.meta.agreement import agreement_row, ratings_matrix
from assay.meta.bootstrap import paired_bootstrap
from assay.meta.correlation import MEASURES, KendallVariant, Measure
from assay.meta.human import human_agreement
from assay.meta.levels import choose_level, correlation_rows
from assay.meta.significance import adjust_family, rank_sum, signed_rank
from assay.meta.stability import density, stability
from assay.meta.table import ScoreTable

__all__ = ["compare", "fleiss_rule_for", "load_groups", "rater_labels"]


def load_groups(path: str | Path) -> dict[str, list[str]]:
    """Named judge groups from a JSON or YAML file: ``{group: [judge or run name, ...]}``."""
    data, _ = read_yaml(path, what="groups file")
    if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
        raise ConfigError(f"{path}: groups must map a group name to a list of judge or run names")
    return {str(k): [str(x) for x in v] for k, v in data.items()}


def rater_labels(tables: Sequence[ScoreTable]) -> list[str]:
    """A label per run within its method: the judge when it is unique there, else the run's name."""
    labels = []
    for t in tables:
        same = [u for u in tables if u.method == t.method and u.judge == t.judge]
        labels.append(t.judge if t.judge and len(same) == 1 else t.name)
    return labels


def fleiss_rule_for(values: np.ndarray, scale: tuple[float, float, bool] | None,
                    bins: Sequence[float] | None = None) -> dict[str, Any]:
    """How scores become Fleiss categories: given bins; integer scores as they are; scores on a Likert
    scale rounded to its values; otherwise five equal-width bins over the observed range (stated)."""
    if bins is not None:
        return {"bins": list(bins)}
    ok = values[~np.isnan(values)]
    if len(ok) == 0 or np.all(ok == np.round(ok)):
        return {}
    if scale and scale[2] and ok.min() >= scale[0] and ok.max() <= scale[1]:
        return {"categories": list(range(int(np.ceil(scale[0])), int(np.floor(scale[1])) + 1))}
    lo, hi = float(ok.min()), float(ok.max())
    return {"bins": list(np.linspace(lo, hi, 6))} if hi > lo else {}


def _group_members(groups: Mapping[str, Sequence[str]] | None, runs: list[tuple[str, ScoreTable]],
                   method: str | None, notes: list[str]) -> dict[str, list[str]]:
    """The runs of one method in each group (matched by label, judge or run name); groups of fewer than two
    runs have no agreement to measure and are named in ``notes``."""
    wanted = groups or {"all": [label for label, _ in runs]}
    out = {}
    for name, members in wanted.items():
        picked = [label for label, t in runs if label in members or t.judge in members or t.name in members]
        if len(picked) >= 2:
            out[name] = picked
        else:
            notes.append(f"group {name!r}: {len(picked)} run(s) of method {method or '-'}; agreement needs two")
    return out


def _agreement(tables: Sequence[ScoreTable], labels: list[str], dims: list[str],
               groups: Mapping[str, Sequence[str]] | None, bins: Sequence[float] | None,
               notes: list[str]) -> list[dict[str, Any]]:
    rows = []
    for method in dict.fromkeys(t.method for t in tables):
        runs = [(lab, t) for lab, t in zip(labels, tables, strict=True) if t.method == method]
        for gname, members in _group_members(groups, runs, method, notes).items():
            chosen = [t for lab, t in runs if lab in members]
            for dim in dims:
                scores = {lab: dict(zip(t.dim(dim)["sample_id"], t.dim(dim)["score"], strict=True))
                          for lab, t in runs if lab in members}
                mat, _, _ = ratings_matrix(scores, members)
                rule = fleiss_rule_for(mat.ravel(), chosen[0].scales.get(dim), bins)
                rows.append({"method": method or "-", "group": gname, "judges": list(members), "dimension": dim,
                             **agreement_row(mat, **rule)})
    return rows


def _significance(per_run: list[dict[str, Any]], measures: Sequence[Measure], alpha: float) -> list[dict[str, Any]]:
    methods = list(dict.fromkeys(r["method"] for r in per_run))
    tests = []
    for a, b in itertools.combinations(methods, 2):
        for m in measures:
            va = {r["label"]: r["average"][m] for r in per_run if r["method"] == a}
            vb = {r["label"]: r["average"][m] for r in per_run if r["method"] == b}
            base = {"method_a": a, "method_b": b, "measure": m, "on": "average correlation per judge"}
            tests.append({**base, **rank_sum(list(va.values()), list(vb.values()))})
            if len(set(va) & set(vb)) >= 2:
                tests.append({**base, **signed_rank(va, vb)})
    return adjust_family(tests, alpha) if tests else []


def _stability(per_run: list[dict[str, Any]], measures: Sequence[Measure], dims: list[str]) -> list[dict[str, Any]]:
    rows = []
    for method in dict.fromkeys(r["method"] for r in per_run):
        runs = [r for r in per_run if r["method"] == method]
        for m in measures:
            for dim in [*dims, "average"]:
                vals = {r["label"]: (r["average"] if dim == "average" else r["dims"][dim])[m] for r in runs}
                row = {"method": method, "measure": m, "dimension": dim, **stability(vals)}
                if dim == "average":
                    row["density"] = density(list(vals.values()))
                rows.append(row)
    return rows


def _paired(tables: Sequence[ScoreTable], dims: list[str], level: str, measure: Measure, variant: KendallVariant,
            n_boot: int, seed: int) -> list[dict[str, Any]]:
    out = []
    for a, b in itertools.combinations(tables, 2):
        if a.method == b.method or not a.judge or a.judge != b.judge:
            continue
        res = paired_bootstrap({d: a.dim(d) for d in dims}, {d: b.dim(d) for d in dims}, level, measure,
                               variant=variant, n_boot=n_boot, seed=seed)
        out.append({"judge": a.judge, "method_a": a.method, "method_b": b.method, "run_a": a.name,
                    "run_b": b.name, **res})
    return out


def compare(tables: Sequence[ScoreTable], *, groups: Mapping[str, Sequence[str]] | None = None,
            level: str | None = None, dimensions: Sequence[str] | None = None,
            measures: Sequence[Measure] = MEASURES, variant: KendallVariant = "b", bootstrap: int = 0,
            seed: int = 0, alpha: float = 0.05, fleiss_bins: Sequence[float] | None = None) -> dict[str, Any]:
    """Compare runs: per-run correlations, agreement per method and judge group, tests, stability.

    Args:
        tables: One score table per run (load with :func:`assay.meta.inputs.load_scores`).
        groups: ``{group: [judge or run name]}``; default one group of all judges of each method.
        level: Correlation level; default the first run's dataset convention.
        dimensions: Default the dimensions every run scored.
        measures: Correlations to compute.
        variant: Kendall variant.
        bootstrap: Resamples for the paired test between two methods run by the same judge (0: none).
        seed: Bootstrap seed.
        alpha: Family-wise false discovery rate for Benjamini-Hochberg.
        fleiss_bins: Bin edges for Fleiss' kappa on continuous scores (default: see :func:`fleiss_rule_for`).

    Returns:
        ``{"level", "level_reason", "dimensions", "runs", "agreement", "notes", "human_agreement",
        "significance", "stability", "paired_bootstrap"}``.
    """
    if not tables:
        raise ConfigError("compare needs at least one run")
    lvl, reason = choose_level(tables[0], level)
    common = [d for d in tables[0].dimensions() if all(d in t.dimensions() for t in tables)]
    dims = list(dimensions) if dimensions else common
    if not dims:
        raise ConfigError("the runs share no dimension; name one with --dimension")
    labels = rater_labels(tables)
    per_run = []
    for lab, t in zip(labels, tables, strict=True):
        rows = correlation_rows(t, lvl, measures, dims, variant)
        by_dim = {r["dimension"]: r for r in rows}
        avg = by_dim.get("average", rows[0])
        per_run.append({"label": lab, **t.describe(), "rows": rows, "dims": by_dim, "average": avg})
    human_src = next((t for t in tables if t.annotators), None)
    human = human_agreement(human_src.annotators, dims, scales=human_src.scales,
                            items=list(dict.fromkeys(human_src.frame["sample_id"]))) if human_src else []
    main = "spearman" if "spearman" in measures else measures[0]
    notes: list[str] = []
    agreement = _agreement(tables, labels, dims, groups, fleiss_bins, notes)
    return {
        "level": lvl, "level_reason": reason, "dimensions": dims, "measures": list(measures),
        "runs": [{k: v for k, v in r.items() if k not in ("dims", "average")} for r in per_run],
        "agreement": agreement, "notes": notes,
        "human_agreement": human,
        "significance": _significance(per_run, measures, alpha),
        "stability": _stability(per_run, measures, dims),
        "paired_bootstrap": _paired(tables, dims, lvl, main, variant, bootstrap, seed) if bootstrap > 0 else [],
    }
