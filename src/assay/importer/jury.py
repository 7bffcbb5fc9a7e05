"""``assay jury``: several judges' run directories on one dataset combined into a jury run directory.

Nothing calls a judge: each member's stored judgments are read, put on the human scale and combined per
unit (:func:`assay.meta.trust.jury.combine`), and the result is written as a run directory in one
transaction (:meth:`assay.run.store.RunStore.record_import`, as ``assay import`` writes one), so ``meta``,
``compare``, ``view``, ``export`` and ``meta --human`` read it like any run. Each unit's trace keeps
every member's score; the manifest keeps each member's coverage, usage and cost beside the jury's.
"""

from __future__ import annotations

import platform
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from assay._version import __version__
from assay.errors import ConfigError
from assay.judges.base import JudgeIdentity
from assay.meta.inputs import read_run
from assay.meta.trust.assess import to_human_scale
from assay.meta.trust.jury import combine
from assay.meta.trust.session import judge_scales, load_labels
from assay.run.store import RunStore, check_run_dir
from assay.types import Judgment, Sample, Usage

__all__ = ["JuryResult", "make_jury"]


@dataclass
class JuryResult:
    """What ``assay jury`` wrote: the run directory, per dimension the counts and weights, the notes."""

    run_dir: Path
    members: list[dict[str, Any]]
    dimensions: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _member(run_dir: Path) -> dict[str, Any]:
    """One member run: manifest, judgments by unit, samples, usage and its table."""
    with RunStore(run_dir, readonly=True) as store:
        manifest = store.manifest()
        if not manifest:
            raise ConfigError(f"{run_dir}: not a run directory (no manifest)")
        judgments = {(j.sample_id, j.dimension): j for j in store.iter_judgments()}
        samples = store.samples()
    judge = manifest.get("judge") or {}
    label = f"{judge['backend']}:{judge['model']}" if judge.get("backend") else run_dir.name
    usage = Usage()
    for j in judgments.values():
        usage = usage + j.total_usage()
    return {"dir": run_dir, "manifest": manifest, "judgments": judgments, "samples": samples, "label": label,
            "usage": usage, "table": read_run(run_dir), "scales": judge_scales(run_dir)}


def _check_members(members: list[dict[str, Any]]) -> list[str]:
    """The dimensions every member scored; refuse members on other datasets or samples."""
    first = members[0]
    ds = first["manifest"].get("dataset") or {}
    for m in members[1:]:
        other = m["manifest"].get("dataset") or {}
        if (other.get("name"), other.get("sha256")) != (ds.get("name"), ds.get("sha256")):
            raise ConfigError(f"{m['dir']} judged dataset {other.get('name')} (sha256 {str(other.get('sha256'))[:16]})"
                              f", {first['dir']} judged {ds.get('name')} (sha256 {str(ds.get('sha256'))[:16]}): "
                              "a jury's members judge the same dataset")
    labels = [m["label"] for m in members]
    if len(set(labels)) != len(labels):
        raise ConfigError(f"two members have the same judge label ({', '.join(labels)}): give runs of different "
                          "judges (or methods)")
    dims = [d for d in first["table"].dimensions() if all(d in m["table"].dimensions() for m in members)]
    if not dims:
        raise ConfigError("the member runs share no dimension")
    return dims


def make_jury(runs: Sequence[str | Path], run_dir: str | Path, *, weights: str = "equal", missing: str = "none",
              human: str | Path | None = None, labels: int | None = None, seed: int = 0, folds: int = 5,
              dimensions: Sequence[str] | None = None, **label_fields: Any) -> JuryResult:
    """Combine member runs into a jury run directory.

    Args:
        runs: The member run directories (at least two, same dataset).
        run_dir: The jury's run directory (new or empty).
        weights: ``equal`` or ``learned`` (needs ``human`` or ``labels``).
        missing: ``none`` (a unit some member did not score has no jury score) or ``mean``.
        human / labels / seed / label_fields: The labels for learned weights (as ``assay meta``).
        folds: Cross-fitting folds for learned weights.
        dimensions: Which of the dimensions every member scored (default all of them).

    Raises:
        ConfigError: Fewer than two runs, members on different datasets, a non-empty target, bad options.
    """
    run_dir = Path(run_dir)
    if len(runs) < 2:
        raise ConfigError("a jury needs at least two member runs")
    check_run_dir(run_dir)
    if (run_dir / "run.sqlite").exists():
        raise ConfigError(f"{run_dir} already holds a run: write the jury to a new directory")
    if weights == "learned" and human is None and labels is None:
        raise ConfigError("--weights learned fits weights on human labels: give --human FILE or --labels K")
    members = [_member(Path(r)) for r in runs]
    dims = _check_members(members)
    if dimensions:
        unknown = [d for d in dimensions if d not in dims]
        if unknown:
            raise ConfigError(f"--dimension {', '.join(unknown)}: not scored by every member (they share {dims})")
        dims = list(dimensions)
    lab = None
    if human is not None or labels is not None:
        _, lab, _, _ = load_labels(members[0]["table"], human=human, labels=labels, seed=seed, dimensions=dims,
                                   **label_fields)
    names = [m["label"] for m in members]
    ids = list(dict.fromkeys(s["id"] for m in members for s in m["samples"]))
    result = JuryResult(run_dir, [], {}, [])
    judgments: list[Judgment] = []
    dim_entries = []
    for dim in dims:
        human_scale = members[0]["table"].scales.get(dim)
        hs = human_scale[:2] if human_scale else None
        matrix = np.full((len(ids), len(members)), np.nan)
        for k, m in enumerate(members):
            raw = np.array([_score(m, sid, dim) for sid in ids], float)
            matrix[:, k] = to_human_scale(raw, m["scales"].get(dim), hs)
        y = None if lab is None else np.array([lab.ratings.get(dim, {}).get(sid, np.nan) for sid in ids], float)
        try:
            res = combine(matrix, names, weights=weights, missing=missing, labels=y, folds=folds, seed=seed)
        except ValueError as exc:
            raise ConfigError(f"{dim}: {exc} (label it, or leave it out with --dimension)") from None
        judgments += _judgments(ids, dim, members, matrix, res, names)
        result.dimensions[dim] = {"weights": dict(zip(["intercept", *names], map(float, res["weights"]), strict=True)),
                                  "scored": int(np.isfinite(res["score"]).sum()), "units": len(ids),
                                  "notes": res["notes"]}
        result.notes += [f"{dim}: {n}" for n in res["notes"]]
        low, high = hs if hs else (float(np.nanmin(matrix)), float(np.nanmax(matrix)))
        base = next(d for d in members[0]["manifest"]["dimensions"] if d["name"] == dim)
        dim_entries.append({**base, "scale": {"low": low, "high": high, "integer": False}})
    result.members = [_member_entry(m, dims) for m in members]
    _write(run_dir, members, judgments, dim_entries, result, weights, missing, lab.source if lab else None)
    return result


def _score(member: dict[str, Any], sid: str, dim: str) -> float:
    j = member["judgments"].get((sid, dim))
    return np.nan if j is None or j.score is None else float(j.score)


def _judgments(ids: list[str], dim: str, members: list[dict[str, Any]], matrix: np.ndarray, res: dict[str, Any],
               names: list[str]) -> list[Judgment]:
    """One jury judgment per unit: the score or the error, every member's score and usage in it."""
    out = []
    label = "jury:" + "+".join(names)
    for i, sid in enumerate(ids):
        usage = {}
        for m in members:
            j = m["judgments"].get((sid, dim))
            if j is not None:
                usage[m["label"]] = j.total_usage()
        trace: dict[str, Any] = {"members": {n: (None if np.isnan(matrix[i, k]) else float(matrix[i, k]))
                                             for k, n in enumerate(names)}}
        if res["partial"][i]:
            trace["partial_mean_without"] = res["partial"][i]
        score = res["score"][i]
        ok = bool(np.isfinite(score))
        out.append(Judgment(sample_id=sid, dimension=dim, method="jury", judge=label,
                            score=float(score) if ok else None, error=None if ok else res["error"][i],
                            status="scored" if ok else "failed", trace=trace, usage=usage))
    return out


def _member_entry(m: dict[str, Any], dims: list[str]) -> dict[str, Any]:
    """A member's figures for the jury's manifest: judge, method, coverage per dimension, usage and cost."""
    frame = m["table"].frame
    coverage = {d: float(frame.loc[frame["dimension"] == d, "score"].notna().mean()) for d in dims}
    return {"run": str(m["dir"]), "judge": m["label"], "method": m["manifest"].get("method"),
            "coverage": coverage, "usage": m["usage"].model_dump(), "cost_usd": m["manifest"].get("cost_usd")}


def _write(run_dir: Path, members: list[dict[str, Any]], judgments: list[Judgment], dims: list[dict[str, Any]],
           result: JuryResult, weights: str, missing: str, labels: str | None) -> None:
    first = members[0]["manifest"]
    costs = [m["manifest"].get("cost_usd") for m in members]
    identity = JudgeIdentity(backend="jury", model="+".join(m["label"] for m in members),
                             settings={"weights": weights, "missing": missing})
    manifest = {"method": "jury", "method_settings": {"weights": weights, "missing": missing,
                                                      "members": [m["label"] for m in members]},
                "judge": identity.model_dump(mode="json"), "dataset": first.get("dataset"), "dimensions": dims,
                "dataset_level": first.get("dataset_level"), "artifacts": {}, "prices": None,
                "usage": {m["label"]: m["usage"].model_dump() for m in members},
                "cost_usd": None if any(c is None for c in costs) else float(sum(costs)),
                "jury": {"members": result.members, "weights": {d: v["weights"] for d, v in result.dimensions.items()},
                         "labels": labels},
                "assay_version": __version__, "python": platform.python_version(),
                "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    by_id = {s["id"]: s for m in members for s in m["samples"]}
    samples = [Sample(id=s["id"], doc_id=s["doc_id"], system_id=s["system_id"], output="", human=s["human"],
                      annotators=s["annotators"]) for s in by_id.values()]
    notes = [("jury", f"{len(members)} member runs combined ({weights} weights, missing: {missing}); no judge "
                      "was called"), *[("jury", n) for n in result.notes]]
    failed = sum(j.status == "failed" for j in judgments)
    if failed:
        notes.append(("jury", f"{failed} unit(s) without a jury score: a member gave none (each unit's error names "
                              "it; --missing mean takes the others' mean instead)"))
    with RunStore(run_dir) as store:
        store.record_import(samples, judgments, manifest, notes)
        manifest["units"] = store.unit_counts()
        manifest["notes"] = store.notes()
        store.set_meta("manifest", manifest)
