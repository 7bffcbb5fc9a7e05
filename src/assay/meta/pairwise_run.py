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
    from assay.store import RunStore

    with RunStore(Path(run_dir), readonly=True) as store:
        manifest = store.manifest() or {}
        if manifest.get("method") != "pairwise":
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


def is_pairwise(source: str | Path) -> bool:
    """Whether ``source`` is a run directory holding a pairwise run."""
    from assay.store import RunStore

    path = Path(source)
    if not path.is_dir():
        return False
    try:
        with RunStore(path, readonly=True) as store:
            return (store.manifest() or {}).get("method") == "pairwise"
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
