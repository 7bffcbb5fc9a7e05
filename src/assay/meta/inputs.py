"""Reading score tables: a run directory, or a scores file (JSON, JSONL, CSV, Parquet) with a field mapping.

Layouts read without a mapping:

- a run directory (``run.sqlite`` of :class:`assay.run.store.RunStore`);
- UniEval's published layout: one record per item with a ``scores`` dict (human) beside a
  ``predict_scores`` dict (predicted), items grouped by ``doc_id`` or else by their ``source`` text;
- the long layout of ``assay export``: ``sample_id, doc_id, system_id, dimension, score, human``, and where
  present ``error`` (why an item has no score), ``method`` and ``judge``.

Any other layout needs a mapping (see :class:`FieldMap`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from assay.datasets.readers import Record, read_records
from assay.errors import ConfigError, InputError
from assay.meta.table import ScoreTable, make_frame
from assay.meta.transfer import LoadedRuns, collect_runs

__all__ = ["FieldMap", "load_scores", "parse_mapping", "read_run", "table_from_records"]


class FieldMap(BaseModel):
    """Where the fields of a scores file are. Dotted names reach into nested objects (``scores.coherence``).

    Attributes:
        id: The item id; default ``sample_id`` or ``id`` if present, else ``doc_id:system_id``.
        doc_id: The source document (sample-level groups by it); default ``doc_id``, else the
            ``source`` text (each distinct text is one document), else the item id.
        system_id: The system (system-level groups by it); default ``system_id`` or ``model_id``.
        score: Predicted scores: the name of an object holding one number per dimension
            (``predict_scores``), or ``{dimension: field}``; in the long layout, the score field.
        human: Human scores, in the same form as ``score``.
        dimension: Long layout only: the field naming the dimension of each record.
        error: Long layout only: why an item has no score (kept for the unscored-reasons table);
            default ``error`` if present.
        method: The field naming the method that scored the records; default ``method`` if present.
        judge: The field naming the judge; default ``judge`` if present.
    """

    model_config = ConfigDict(extra="forbid")

    id: str | None = None
    doc_id: str | None = None
    system_id: str | None = None
    score: str | dict[str, str] | None = None
    human: str | dict[str, str] | None = None
    dimension: str | None = None
    error: str | None = None
    method: str | None = None
    judge: str | None = None


def parse_mapping(pairs: list[str]) -> FieldMap:
    """A mapping from ``KEY=FIELD`` pairs, e.g. ``score=predict_scores`` or ``score.coherence=pred_coh``."""
    data: dict[str, Any] = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq or not value:
            raise InputError(f"mapping {pair!r} must be KEY=FIELD")
        head, _, dim = key.partition(".")
        if dim:
            if head not in ("score", "human"):
                raise InputError(f"mapping {pair!r}: only score.DIM and human.DIM take a dimension")
            data.setdefault(head, {})[dim] = value
        else:
            data[head] = value
    try:
        return FieldMap(**data)
    except Exception as exc:
        raise InputError(f"bad mapping: {exc}") from exc


def load_scores(path: str | Path, mapping: FieldMap | None = None, *, dataset: str | None = None,
                name: str | None = None) -> ScoreTable:
    """A score table from a run directory or a scores file.

    Args:
        path: A run directory or a ``.json``/``.jsonl``/``.csv``/``.parquet`` file (optionally gzipped).
        mapping: Field mapping for files in other layouts.
        dataset: The benchmark the file scores (gives its conventional level and scales).
        name: Label for tables; default the directory or file name.

    Raises:
        InputError: Not a run directory, unreadable file, or a layout that needs a mapping.
    """
    path = Path(path)
    if path.is_dir():
        table = read_run(path)
        if dataset and not table.dataset:
            table.dataset = dataset
    else:
        table = table_from_records(read_records(path), mapping, source=str(path), name=name or path.name)
        table.dataset = dataset
    if name:
        table.name = name
    if table.dataset:
        _fill_scales(table)
    return table


def read_run(run_dir: str | Path) -> ScoreTable:
    """The score table of a run directory: judgments joined with the stored samples' human ratings."""
    from assay.run.store import RunStore

    run_dir = Path(run_dir)
    with RunStore(run_dir, readonly=True) as store:
        rows = store.score_rows()
        samples = store.samples()
        manifest = store.manifest() or {}
        asked = store.asked_units()
    methods = {r["method"] for r in rows}
    judges = {r["judge"] for r in rows}
    rows += _undone_rows(rows, samples, asked)
    errors = {(r["sample_id"], r["dimension"]): r["error"] for r in rows if r["score"] is None and r["error"]}
    frame = make_frame([{k: r[k] for k in ("sample_id", "doc_id", "system_id", "dimension", "score", "human")}
                        for r in rows])
    judge = manifest.get("judge") or {}
    table = ScoreTable(
        frame=frame, name=run_dir.name, source=str(run_dir),
        method=manifest.get("method") or (methods.pop() if len(methods) == 1 else None),
        judge=(f"{judge['backend']}:{judge['model']}" if judge.get("backend") else None)
        or (judges.pop() if len(judges) == 1 else None),
        dataset=(manifest.get("dataset") or {}).get("name"),
        level=manifest.get("dataset_level"),
        annotators={s["id"]: s["annotators"] for s in samples if s.get("annotators")},
        errors=errors,
        order=[d["name"] for d in manifest.get("dimensions") or [] if d.get("name")],
    )
    for d in manifest.get("dimensions") or []:
        sc = d.get("scale") or {}
        if "low" in sc:
            table.scales[d["name"]] = (float(sc["low"]), float(sc["high"]), bool(sc.get("integer", True)))
    return table


def load_transfer_runs(paths: list[Path] | list[str]) -> LoadedRuns:
    """The scores of run directories that applied a rubric, for :func:`assay.meta.transfer.transfer_tables`.

    Raises:
        ConfigError: Fewer than two runs, or no criterion judged by all of them.
    """
    from assay.run.store import RunStore

    if len(paths) < 2:
        raise ConfigError("rubric transfer needs at least two run directories")
    runs = []
    for path in map(Path, paths):
        with RunStore(path, readonly=True) as store:
            runs.append((path, store.manifest() or {},
                         {(j.sample_id, j.dimension): j.score for j in store.iter_judgments()}))
    return collect_runs(runs)


def _undone_rows(rows: list[dict[str, Any]], samples: list[dict[str, Any]],
                 asked: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """Unscored rows for the units a run was asked for but never stored (interrupted, or stopped by an
    error): coverage is scored units over all units asked, so a half-finished run cannot show 100%."""
    stored = {(r["sample_id"], r["dimension"]) for r in rows}
    by_id = {s["id"]: s for s in samples}
    return [{"sample_id": sid, "doc_id": by_id[sid]["doc_id"], "system_id": by_id[sid]["system_id"],
             "dimension": dim, "status": "undone", "score": None, "human": by_id[sid]["human"].get(dim),
             "error": "undone: the run never finished this unit (re-run it to resume)"}
            for sid, dim in asked if (sid, dim) not in stored]


def _fill_scales(table: ScoreTable) -> None:
    from assay.datasets import CATALOG

    info = CATALOG.get(table.dataset or "")
    if info is None:
        return
    for d in info.dimensions:
        human = info.human_scale(d.name)
        if d.name in info.human_scales:  # a run's manifest records the judge's scale, not the ratings'
            table.scales[d.name] = (human.low, human.high, human.integer)
        else:
            table.scales.setdefault(d.name, (human.low, human.high, human.integer))


def _get(rec: Record, dotted: str) -> Any:
    cur: Any = rec
    for part in dotted.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return None
        cur = cur[part]
    return cur


def _detect(records: list[Record], mapping: FieldMap | None, source: str) -> FieldMap:
    if mapping is not None and (mapping.score is not None or mapping.dimension is not None):
        return mapping
    first = records[0] if records else {}
    base = mapping.model_dump(exclude_none=True) if mapping else {}
    if isinstance(first.get("predict_scores"), dict) and isinstance(first.get("scores"), dict):
        return FieldMap(**{"score": "predict_scores", "human": "scores", **base})
    if "dimension" in first and "score" in first:
        present = {k: k for k in ("error", "method", "judge") if k in first}
        return FieldMap(**{"dimension": "dimension", "score": "score",
                           "human": "human" if "human" in first else None, **present, **base})
    raise InputError("unknown scores layout: give a mapping (e.g. --map score=PRED_FIELD --map human=HUMAN_FIELD "
                     "--map doc_id=DOC_FIELD), or use UniEval's layout (scores + predict_scores) or the long "
                     "layout of `assay export`", file=source)


def _ids(rec: Record, i: int, m: FieldMap, docs: dict[str, str]) -> tuple[str, str, str]:
    system = _get(rec, m.system_id) if m.system_id else rec.get("system_id", rec.get("model_id"))
    system = "" if system is None else str(system)
    if m.doc_id:
        doc = _get(rec, m.doc_id)
    elif rec.get("doc_id") is not None:
        doc = rec["doc_id"]
    elif isinstance(rec.get("source"), str):
        doc = docs.setdefault(rec["source"], f"doc{len(docs):04d}")
    else:
        doc = None
    sid = _get(rec, m.id) if m.id else rec.get("sample_id", rec.get("id"))
    if sid is None:
        sid = f"{doc}:{system}" if doc is not None and system else f"item{i:05d}"
    return str(sid), str(doc if doc is not None else sid), system


def _per_dim(rec: Record, spec: str | dict[str, str] | None) -> dict[str, Any]:
    if spec is None:
        return {}
    if isinstance(spec, dict):
        return {dim: _get(rec, f) for dim, f in spec.items()}
    value = _get(rec, spec)
    return dict(value) if isinstance(value, dict) else {}


def table_from_records(records: list[Record], mapping: FieldMap | None = None, *, source: str = "",
                       name: str = "scores") -> ScoreTable:
    """A score table from records in UniEval's layout, the long layout, or any layout with a mapping.

    In the wide layouts, the dimensions are those with a predicted score in some record; a record
    without one for a dimension another record has counts as unscored (coverage shows it).

    Raises:
        InputError: No records, a layout that needs a mapping, a repeated item, or a non-numeric score.
    """
    if not records:
        raise InputError("no records", file=source)
    m = _detect(records, mapping, source)
    docs: dict[str, str] = {}
    rows: list[dict[str, Any]] = []
    errors: dict[tuple[str, str], str] = {}
    if m.dimension:
        for i, rec in enumerate(records):
            sid, doc, system = _ids(rec, i, m, docs)
            rows.append({"sample_id": sid, "doc_id": doc, "system_id": system,
                         "dimension": str(_get(rec, m.dimension)),
                         "score": _num(_get(rec, str(m.score)), source, i, "score"),
                         "human": _num(_get(rec, m.human), source, i, "human") if isinstance(m.human, str) else None})
            error = _get(rec, m.error) if m.error else None
            if rows[-1]["score"] is None and isinstance(error, str) and error.strip():
                errors[(sid, rows[-1]["dimension"])] = error.strip()
    else:
        per_item = []
        for i, rec in enumerate(records):
            per_item.append((*_ids(rec, i, m, docs), _per_dim(rec, m.score), _per_dim(rec, m.human), i))
        dims = list(dict.fromkeys(d for *_, pred, _h, _i in per_item for d in pred))
        for sid, doc, system, pred, human, i in per_item:
            for d in dims:
                rows.append({"sample_id": sid, "doc_id": doc, "system_id": system, "dimension": d,
                             "score": _num(pred.get(d), source, i, f"score.{d}"),
                             "human": _num(human.get(d), source, i, f"human.{d}")})
    frame = make_frame(rows)
    dup = frame.duplicated(subset=["sample_id", "dimension"])
    if dup.any():
        r = frame[dup].iloc[0]
        raise InputError(f"item {r['sample_id']!r} appears twice for {r['dimension']!r}; map a unique id field",
                         file=source)
    return ScoreTable(frame=frame, name=name, source=source, errors=errors,
                      method=_single(records, m.method), judge=_single(records, m.judge))


def _single(records: list[Record], name: str | None) -> str | None:
    """The one value a field takes across the records (a file's method or judge), or None when it varies."""
    if not name:
        return None
    values = {str(v) for rec in records if (v := _get(rec, name)) is not None and str(v).strip()}
    return values.pop() if len(values) == 1 else None


def _num(value: Any, source: str, record: int, name: str) -> float | None:
    if value is None or value == "":
        return None
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise InputError(f"expected a number, got {value!r}", file=source, record=record, field=name) from None
    return None if out != out else out
