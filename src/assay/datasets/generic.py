"""Any JSON / JSONL / CSV / Parquet file as a dataset: a card whose ``fields`` map the records.

A user's dataset is a card (:mod:`assay.datasets.catalog`) like the shipped ones, with a field mapping
in place of a benchmark ``reader``. Example (``my_data.yaml``)::

    name: my-summaries
    file: summaries.jsonl          # relative to the card
    task: Summarisation of support tickets.
    input_name: ticket
    output_name: summary
    level: sample                  # sample | system | dataset
    fields: {id: uid, doc_id: ticket_id, system_id: model, source: ticket, output: summary}
    human: {coherence: coh_mean}   # dimension -> field with the human rating (optional)
    dimensions:
      - {name: coherence, definition: "The summary reads as one organised whole.", scale: {low: 1, high: 5}}
    artifacts: {checkeval: my_checklist.yaml}   # optional: the method artifacts made for it
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay.datasets.catalog import FieldMap
from assay.datasets.readers import field, number, read_records, text
from assay.errors import InputError
from assay.types import Sample

__all__ = ["FieldMap", "load_records_mapped", "load_spec_file"]


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


def load_spec_file(spec_path: Path) -> Any:
    """Load a dataset from its card file (the spec format of earlier versions is the same card)."""
    from assay.datasets import load_dataset

    return load_dataset(str(spec_path))
