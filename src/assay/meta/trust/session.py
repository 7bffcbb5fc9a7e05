"""Trust on a run, end to end: read the run and the labels, estimate, calibrate (the I/O around the pure parts).

``assay meta RUN --human FILE`` / ``--labels K`` and :func:`assess` share this path; so do ``assay labels``
(:func:`units`, :func:`judge_scales`) and ``assay jury``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from assay.errors import ConfigError
from assay.meta.inputs import load_scores
from assay.meta.table import ScoreTable
from assay.meta.trust.assess import Labels, simulate_labels, to_human_scale, trust
from assay.meta.trust.calibrate import KINDS, calibrate
from assay.meta.trust.plan import labels_needed
from assay.meta.trust.ppi import CHOICES, choose_interval
from assay.types import Sample

__all__ = ["CALIBRATION_FILE", "assess", "judge_scales", "load_labels", "plan", "read_calibration", "run_samples",
           "units", "write_calibration"]

CALIBRATION_FILE = "calibration.json"


def judge_scales(source: str | Path) -> dict[str, tuple[float, float]]:
    """The judge's scale per dimension, from a run directory's manifest (empty for a scores file)."""
    path = Path(source)
    if not path.is_dir():
        return {}
    from assay.run.store import RunStore

    with RunStore(path, readonly=True) as store:
        manifest = store.manifest() or {}
    return {d["name"]: (float(d["scale"]["low"]), float(d["scale"]["high"]))
            for d in manifest.get("dimensions") or [] if "low" in (d.get("scale") or {})}


def run_samples(table: ScoreTable, dataset: str | None = None, *, texts: bool = False) -> list[Sample]:
    """The run's samples: ids and groups from the table, or with their texts from the dataset (``texts``).

    Raises:
        ConfigError: Texts are needed but the run's dataset is unknown or does not hold its samples.
    """
    ids = table.frame.drop_duplicates("sample_id")
    if not texts:
        return [Sample(id=r.sample_id, doc_id=r.doc_id, system_id=r.system_id, output="")
                for r in ids.itertuples()]
    name = dataset or table.dataset
    if not name:
        raise ConfigError(f"{table.name}: the run's texts are in its dataset, which the run does not name; "
                          "pass --dataset")
    from assay.datasets import load_dataset

    by_id = {s.id: s for s in load_dataset(name).samples}
    lost = [sid for sid in ids["sample_id"] if sid not in by_id]
    if lost:
        raise ConfigError(f"dataset {name} lacks {len(lost)} of the run's samples (first: {lost[0]}): "
                          "is it the dataset the run judged?")
    return [by_id[sid] for sid in ids["sample_id"]]


def units(table: ScoreTable, scales: dict[str, tuple[float, float]]) -> pd.DataFrame:
    """One row per sample: ids, system and the judge's mean score over dimensions on the human scale."""
    frame = table.frame.copy()
    frame["yhat"] = np.nan
    for dim in table.dimensions():
        rows = frame["dimension"] == dim
        human = table.scales.get(dim)
        frame.loc[rows, "yhat"] = to_human_scale(frame.loc[rows, "score"].to_numpy(), scales.get(dim),
                                                 human[:2] if human else None)
    out = frame.groupby("sample_id", sort=False).agg(doc_id=("doc_id", "first"), system_id=("system_id", "first"),
                                                     judge=("yhat", "mean"))
    return out.reset_index()


def _calibration(table: ScoreTable, labels: Labels, scales: dict[str, tuple[float, float]], kind: str,
                 dims: Sequence[str], seed: int) -> dict[str, Any]:
    """Per dimension: cross-fitted calibration on the labelled samples, figures before and after, and the map's
    output for every sample (``calibrated``: {sample_id: score})."""
    out: dict[str, Any] = {}
    for dim in dims:
        frame, human, x, lab, y = _labelled(table, labels, scales, dim)
        try:
            res = calibrate(kind, x[lab], y, x, seed=seed, scale=human)
        except ValueError as exc:
            out[dim] = {"error": str(exc)}
            continue
        res.pop("held_out")
        cal = res.pop("calibrated")
        res["calibrated"] = {sid: (None if np.isnan(v) else float(v))
                             for sid, v in zip(frame["sample_id"], cal, strict=True)}
        out[dim] = res
    return out


def load_labels(source: str | Path | ScoreTable, *, human: str | Path | None = None, labels: int | None = None,
                seed: int = 0, dimensions: Sequence[str] | None = None, id_field: str | None = None,
                match: str | None = None, dimension: str | None = None, rating: str | None = None,
                dataset: str | None = None, scales: dict[str, tuple[float, float]] | None = None,
                ) -> tuple[ScoreTable, Labels, dict[str, tuple[float, float]], list[str]]:
    """The run's table, the labels (read or simulated), the judge's scales and the dimensions that have labels.

    ``scales`` gives the judge's scale per dimension where the source does not (a scores file), or overrides it.

    Raises:
        ConfigError: Neither or both of ``human`` and ``labels``, unknown dimensions, a bad K.
        InputError: A bad labels file (naming file, record and field).
    """
    if (human is None) == (labels is None):
        raise ConfigError("give human labels (--human FILE) or a number of labels to simulate (--labels K), "
                          "not both")
    table = source if isinstance(source, ScoreTable) else load_scores(source, dataset=dataset)
    scales = {**({} if isinstance(source, ScoreTable) else judge_scales(source)), **(scales or {})}
    dims = list(dimensions or table.dimensions())
    unknown = [d for d in dims if d not in table.dimensions()]
    if unknown:
        raise ConfigError(f"{table.name}: no scores for dimension(s) {unknown}; it has {table.dimensions()}")
    if labels is not None:
        try:
            return table, simulate_labels(table, labels, seed=seed, dimensions=dims), scales, dims
        except ValueError as exc:
            raise ConfigError(f"{table.name}: {exc}") from None
    from assay.meta.trust.human import needs_texts, read_human  # assay.datasets.matching: loaded when a file is read

    samples = run_samples(table, dataset, texts=needs_texts(id_field, match))
    lab = read_human(human, samples, table.dimensions(), scales=table.scales,  # type: ignore[arg-type]
                     id_field=id_field, match=match, dimension=dimension, rating=rating)
    dims = [d for d in dims if lab.ratings.get(d)]
    if not dims:
        raise ConfigError(f"{human}: no ratings for the dimension(s) asked")
    return table, lab, scales, dims


def assess(source: str | Path | ScoreTable, *, human: str | Path | None = None, labels: int | None = None,
           seed: int = 0, alpha: float = 0.05, dimensions: Sequence[str] | None = None, id_field: str | None = None,
           match: str | None = None, dimension: str | None = None, rating: str | None = None,
           calibrate_kind: str | None = None, dataset: str | None = None, systems: bool = True,
           scales: dict[str, tuple[float, float]] | None = None, interval: str = "auto") -> dict[str, Any]:
    """Trust on a run or scores file: ``{"labels", "alpha", "table", "trust", "calibration"}``.

    Args:
        source: A run directory, a scores file or a loaded table.
        human: A human labels file (:func:`assay.meta.trust.human.read_human`).
        labels: Instead, simulate K labels on a benchmark (its own ratings, all but K hidden).
        seed: The simulation's draw, calibration's folds and the bootstrap-t interval's resamples.
        alpha: Error level of every interval.
        dimensions: Which dimensions (default all with labels).
        id_field / match / dimension / rating: How the labels file is read.
        calibrate_kind: ``isotonic`` or ``linear`` to add cross-fitted calibration.
        dataset: The dataset (scores files; runs whose texts are needed for ``match``).
        systems: Add per-system estimates and differences.
        scales: The judge's scale per dimension, ``{dimension: (low, high)}``, where the source does not say it
            (a scores file) or says it wrongly.
        interval: ``auto``, ``normal``, ``t`` or ``bootstrap-t`` (:func:`~assay.meta.trust.ppi.choose_interval`).

    Raises:
        ConfigError: Neither or both of ``human`` and ``labels``, an unknown calibration or interval, a bad alpha.
        InputError: A bad labels file (naming file, record and field).
    """
    if calibrate_kind and calibrate_kind not in KINDS:
        raise ConfigError(f"--calibrate {calibrate_kind!r}: choose {' or '.join(KINDS)}")
    if not 0 < alpha < 1:
        raise ConfigError(f"--alpha {alpha}: the error level lies between 0 and 1 (0.05 for 95% intervals)")
    if interval not in CHOICES:
        raise ConfigError(f"--interval {interval!r}: choose one of {', '.join(CHOICES)}")
    table, lab, scales, dims = load_labels(source, human=human, labels=labels, seed=seed, dimensions=dimensions,
                                           id_field=id_field, match=match, dimension=dimension, rating=rating,
                                           dataset=dataset, scales=scales)
    result = {"labels": {"source": lab.source, "simulated": lab.simulated, "weighted": lab.inclusion is not None,
                         "n": {d: len(lab.ratings.get(d, {})) for d in dims}},
              "alpha": alpha, "interval": interval, "table": table.describe(),
              "trust": trust(table, lab, alpha=alpha, dimensions=dims, judge_scales=scales, systems=systems,
                             interval=interval, seed=seed),
              "calibration": None}
    if calibrate_kind:
        result["calibration"] = _calibration(table, lab, scales, calibrate_kind, dims, seed)
    return result


def plan(source: str | Path | ScoreTable, *, width: float, price: float | None = None, alpha: float = 0.05,
         interval: str = "normal", **how: Any) -> dict[str, Any]:
    """Labels needed per dimension for a half-width ``width``, from pilot labels (``how``: as :func:`load_labels`).

    ``interval``: the kind the labels will be read with (``auto`` resolves at the planned human-only n;
    :func:`~assay.meta.trust.plan.labels_needed` says how each is planned).
    """
    if interval not in CHOICES:
        raise ConfigError(f"--interval {interval!r}: choose one of {', '.join(CHOICES)}")
    table, lab, scales, dims = load_labels(source, **how)
    out: dict[str, Any] = {}
    for dim in dims:
        frame, _, x, use, y = _labelled(table, lab, scales, dim)
        try:
            first = labels_needed(y, x[use], width=width, pool=len(frame), alpha=alpha, price=price)
            kind = choose_interval(interval, first["human_only"]["labels"])
            out[dim] = labels_needed(y, x[use], width=width, pool=len(frame), alpha=alpha, price=price,
                                     interval=kind)
        except ValueError as exc:
            out[dim] = {"error": str(exc)}
    return {"labels": lab.source, "interval": interval, "plans": out}


def _labelled(table: Any, labels: Any, scales: dict[str, Any], dim: str) -> tuple[Any, Any, Any, Any, Any]:
    """One dimension's rows, its human scale, the judge's scores on that scale, which rows are labelled (and
    scored), and their labels: what calibration and the label plan both start from."""
    frame = table.dim(dim)
    human = table.scales.get(dim)
    x = to_human_scale(frame["score"].to_numpy(), scales.get(dim), human[:2] if human else None)
    rated = labels.ratings.get(dim, {})
    use = frame["sample_id"].isin(list(rated)).to_numpy() & ~np.isnan(x)
    return frame, human, x, use, frame.loc[use, "sample_id"].map(rated).to_numpy(float)


def write_calibration(run_dir: str | Path, calibration: dict[str, Any], source: str) -> Path:
    """Keep a run's calibrated scores beside it (``calibration.json``), for ``assay export``'s own column."""
    path = Path(run_dir) / CALIBRATION_FILE
    data = {"labels": source, "dimensions": {d: {k: v for k, v in c.items()}
                                             for d, c in calibration.items() if "error" not in c}}
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def read_calibration(run_dir: str | Path) -> tuple[dict[str, dict[str, float | None]] | None, str | None]:
    """A run's kept calibrated scores (``{dimension: {sample_id: score}}``) and a line saying where they came from;
    ``(None, None)`` when the run has none."""
    path = Path(run_dir) / CALIBRATION_FILE
    if not path.is_file():
        return None, None
    data = json.loads(path.read_text(encoding="utf-8"))
    dims = data.get("dimensions") or {}
    told = ", ".join(f"{d} ({c['kind']}, {c['n_labelled']} labels)" for d, c in dims.items())
    return ({d: c["calibrated"] for d, c in dims.items()},
            f"score_calibrated: the calibration in {path} ({told}; labels: {data.get('labels')}); "
            "score is the judge's own")
