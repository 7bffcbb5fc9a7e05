"""A pairwise run's verdicts read from its run directory, and the pairwise report of ``assay meta``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from assay.meta.pairwise import default_margin, pairwise_report, verdict_table
from assay.types import Scale


def read_pairwise(run_dir: str | Path) -> tuple[Any, dict[str, Any]]:
    """The verdict table of a pairwise run and its manifest.

    Raises:
        ValueError: The run is not a pairwise run.
    """
    from assay.run.store import RunStore

    with RunStore(Path(run_dir), readonly=True) as store:
        manifest = store.manifest() or {}
        if not compares_pairs(manifest):
            raise ValueError(f"{run_dir}: not a pairwise run (method {manifest.get('method')!r})")
        rows = store.rows()
    for r in rows:
        r["trace"] = json.loads(r["trace"]) if isinstance(r["trace"], str) else r["trace"]
    return verdict_table(rows), manifest


def human_margins(manifest: dict[str, Any], human_scales: dict[str, Scale] | None = None,
                  margin: float | None = None) -> dict[str, float]:
    """Per dimension, the least human mean difference read as a preference: ``margin`` where given, else a third
    of the step of the human ratings' scale (the card's human scale where it has one, else the run's)."""
    out = {}
    for d in manifest.get("dimensions") or []:
        scale = (human_scales or {}).get(d["name"]) or Scale(**d["scale"])
        out[d["name"]] = margin if margin is not None else default_margin(scale)
    return out


def compares_pairs(manifest: dict[str, Any]) -> bool:
    """Whether a run's method judges pairs of outputs (:attr:`assay.methods.base.Method.compares_pairs`); a method
    that is not installed here is taken for one that does not."""
    from assay.errors import ConfigError
    from assay.methods import get_method

    try:
        return bool(manifest.get("method")) and get_method(str(manifest["method"])).compares_pairs
    except ConfigError:
        return False


def is_pairwise(source: str | Path) -> bool:
    """Whether ``source`` is a run directory holding a pairwise run."""
    from assay.run.store import RunStore

    path = Path(source)
    if not path.is_dir():
        return False
    try:
        with RunStore(path, readonly=True) as store:
            return compares_pairs(store.manifest() or {})
    except Exception:  # not a run directory: the caller's own reader says why
        return False


def run_report(run_dir: str | Path, *, n_boot: int = 1000, seed: int = 0, ci: float = 0.95,
               human_margin: float | None = None, pointwise: dict[str, dict[str, float | None]] | None = None,
               dimensions: list[str] | None = None) -> dict[str, Any]:
    """``pairwise.<dimension>`` of ``assay meta`` for a pairwise run: :func:`assay.meta.pairwise.pairwise_report`
    with the run's own ``inconsistent`` setting and human margins from its dataset's scales."""
    from assay.datasets import CATALOG

    frame, manifest = read_pairwise(run_dir)
    if dimensions:
        frame = frame[frame["dimension"].isin(dimensions)]
    info = CATALOG.get((manifest.get("dataset") or {}).get("name") or "")
    scales = {d.name: info.human_scale(d.name) for d in info.dimensions} if info is not None else None
    settings = manifest.get("method_settings") or {}
    return pairwise_report(frame, inconsistent=settings.get("inconsistent", "tie"), n_boot=n_boot, seed=seed,
                           ci=ci, human_margin=human_margins(manifest, scales, human_margin), pointwise=pointwise)


def _closer(pairwise: dict[str, Any], pointwise: dict[str, Any]) -> str:
    key = "kappa" if pairwise.get("kappa") is not None and pointwise.get("kappa") is not None else "accuracy"
    a, b = pairwise.get(key), pointwise.get(key)
    if a is None or b is None:
        return "-"
    return "pairwise" if a > b else "pointwise" if b > a else "neither"


def compare_protocols(pairwise_run: str | Path, pointwise_scores: dict[str, dict[str, float | None]], *,
                      human_margin: float | None = None) -> list[dict[str, Any]]:
    """Per dimension, the pairwise judge's and a pointwise run's agreement with people on the same pairs (those
    both judged and people decided), and which is closer (``assay compare POINTWISE_RUN PAIRWISE_RUN``).

    Args:
        pairwise_run: The pairwise run directory.
        pointwise_scores: ``{dimension: {sample_id: score}}`` of the pointwise run on the same outputs.
        human_margin: As in :func:`run_report`.
    """
    report = run_report(pairwise_run, n_boot=0, human_margin=human_margin, pointwise=pointwise_scores)
    rows = []
    for dim, rep in report.items():
        point, pair = rep.get("pointwise_agreement"), rep.get("human_agreement_shared")
        if point is None or pair is None:
            continue
        rows.append({"dimension": dim, "pairwise": pair, "pointwise": point, "n_pairs": point["n_pairs"],
                     "margin": point["margin"], "closer": _closer(pair, point)})
    return rows
