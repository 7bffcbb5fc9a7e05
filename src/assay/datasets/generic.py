"""Any JSON / JSONL / CSV / Parquet file as a dataset, through a field mapping in a small YAML spec.

Example spec (``my_data.yaml``)::

    name: my-summaries
    file: summaries.jsonl          # relative to the spec file
    task: Summarisation of support tickets.
    input_name: ticket
    output_name: summary
    level: sample                  # sample | system | dataset
    fields: {id: uid, doc_id: ticket_id, system_id: model, source: ticket, output: summary}
    human: {coherence: coh_mean}   # dimension -> field with the human rating (optional)
    dimensions:
      - {name: coherence, definition: "The summary reads as one organised whole.", scale: {low: 1, high: 5}}
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from assay.datasets.catalog import DatasetInfo
from assay.datasets.readers import field, number, read_records, text
from assay.errors import InputError
from assay.types import Dimension, Sample


class FieldMap(BaseModel):
    """Which record field holds each part of a Sample (only ``output`` is required)."""

    model_config = ConfigDict(extra="forbid")

    id: str | None = None
    doc_id: str | None = None
    system_id: str | None = None
    source: str | None = None
    output: str
    reference: str | None = None
    context: str | None = None


class DatasetSpec(BaseModel):
    """A user's dataset described in YAML: file, field mapping, dimensions."""

    model_config = ConfigDict(extra="forbid")

    name: str
    file: str
    task: str = "Evaluate the quality of generated text."
    input_name: str = "input"
    output_name: str = "output"
    context_name: str | None = None
    level: Literal["sample", "system", "dataset"] = "dataset"
    fields: FieldMap
    human: dict[str, str] = {}
    dimensions: list[Dimension]
    contrast_field: str | None = None


def load_records_mapped(path: Path, fields: FieldMap, human: dict[str, str]) -> list[Sample]:
    """Samples from a file's records through a field mapping; ids default to the record index."""
    f = str(path)
    out = []
    records = read_records(path)
    for i, r in enumerate(records):
        at = records.where(i)
        sid = field(r, fields.id, file=f, record=at) if fields.id else str(i)
        ratings = {}
        for dim, key in human.items():
            if r.get(key) not in (None, ""):
                ratings[dim] = number(r[key], file=f, record=at, name=key)
        out.append(Sample(
            id=sid,
            doc_id=field(r, fields.doc_id, file=f, record=at) if fields.doc_id else sid,
            system_id=field(r, fields.system_id, file=f, record=at) if fields.system_id else "",
            source=field(r, fields.source, file=f, record=at) if fields.source else "",
            output=text(r, fields.output, file=f, record=at),
            reference=field(r, fields.reference, file=f, record=at, optional=True) if fields.reference else None,
            context=field(r, fields.context, file=f, record=at, optional=True) if fields.context else None,
            human=ratings,
        ))
    for dim, key in human.items():  # a field no record has is a typo in the mapping, not missing ratings
        if records and not any(key in r for r in records):
            raise InputError(f"no record has this field, mapped to the human ratings of {dim!r}", file=f, field=key)
    return out


def _check_dimensions(spec: DatasetSpec, spec_path: Path) -> None:
    """Dimensions defined once each, and human ratings only for defined dimensions (a typo would drop them)."""
    if not spec.dimensions:
        raise InputError("define at least one dimension", file=str(spec_path), field="dimensions")
    names = [d.name for d in spec.dimensions]
    for i, name in enumerate(names):
        if name in names[:i]:
            raise InputError(f"dimension {name!r} is defined twice", file=str(spec_path), field=f"dimensions.{i}")
    for dim in spec.human:
        if dim not in names:
            raise InputError(f"a human rating for {dim!r}, which is not a dimension defined under 'dimensions' "
                             f"({', '.join(names)})", file=str(spec_path), field=f"human.{dim}")


def load_spec_file(spec_path: Path) -> Any:
    """Load a dataset from its YAML spec (see the module docstring)."""
    from assay.datasets import Dataset, check_not_empty, check_ratings, check_unique

    if not spec_path.exists():
        raise InputError("file not found", file=str(spec_path))
    try:
        raw = yaml.safe_load(spec_path.read_text(encoding="utf-8"))
        spec = DatasetSpec.model_validate(raw)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise InputError(f"invalid YAML: {exc}", file=str(spec_path),
                         record=f"line {mark.line + 1}" if mark else None) from exc
    except ValidationError as exc:
        err = exc.errors()[0]
        raise InputError(err["msg"], file=str(spec_path),
                         field=".".join(str(p) for p in err["loc"])) from exc
    _check_dimensions(spec, spec_path)
    data_path = (spec_path.parent / spec.file).resolve()
    samples = load_records_mapped(data_path, spec.fields, spec.human)
    check_not_empty(samples, data_path)
    check_unique(samples, data_path)
    check_ratings(samples, spec.dimensions, data_path, field_of=spec.human.get)
    dims = tuple(spec.dimensions)
    info = DatasetInfo(
        name=spec.name, loader="generic", file=str(data_path), task=spec.task, input_name=spec.input_name,
        output_name=spec.output_name, context_name=spec.context_name, dimensions=dims,
        default_dimensions=tuple(d.name for d in dims), level=spec.level,
        contrast_field=spec.contrast_field or dims[0].name, provenance=f"user data from {spec_path}",
    )
    digest = hashlib.sha256(data_path.read_bytes() + spec_path.read_bytes()).hexdigest()
    return Dataset(info=info, samples=samples, sha256=digest, path=str(data_path))
