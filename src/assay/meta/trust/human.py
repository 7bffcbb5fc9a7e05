"""A user's human labels file read against a run: matched to its samples and checked before anything is computed.

The file is JSON, JSONL, CSV or Parquet (:func:`assay.datasets.readers.read_records`); records find
their samples as in ``assay import`` (``--id FIELD`` or ``--match FIELDS``, :mod:`assay.datasets.matching`).
Ratings sit in one column per dimension (named as the dimension), or in one field for one dimension
(``--dimension X --rating FIELD``). An empty cell means "not labelled on this dimension" (a labelling
sheet of ``assay labels pick`` comes back partly filled); a record matching no sample, a sample named
twice, a value that is not a number or lies off the human scale is an error naming file, record and
field. An ``inclusion_probability`` column (written by ``assay labels pick``) gives PPI its weights.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from assay.datasets.matching import SHOWN, apply_policy, match_records, parse_match
from assay.datasets.readers import read_records
from assay.errors import InputError
from assay.meta.trust.assess import Labels
from assay.types import Sample

__all__ = ["PROBABILITY", "read_human"]

PROBABILITY = "inclusion_probability"
STORED_FIELDS = {"id", "doc_id", "system_id"}


def _number(value: Any, *, file: str, record: Any, field: str, scale: tuple[float, float, bool] | None) -> float | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise InputError(f"expected a rating (a number), got {value!r}", file=file, record=record,
                         field=field) from None
    if out != out:
        return None
    if scale is not None and not scale[0] <= out <= scale[1]:
        raise InputError(f"rating {out:g} is off the human scale {scale[0]:g}-{scale[1]:g}", file=file,
                         record=record, field=field)
    return out


def read_human(path: str | Path, samples: Sequence[Sample], dimensions: Sequence[str], *,
               scales: Mapping[str, tuple[float, float, bool]] | None = None, id_field: str | None = None,
               match: str | None = None, dimension: str | None = None, rating: str | None = None) -> Labels:
    """The human labels of a file, as :class:`Labels` for the run whose samples and dimensions are given.

    Args:
        path: The labels file.
        samples: The run's samples (ids and groups; the texts too when ``match`` names text fields).
        dimensions: The run's dimensions.
        scales: The human scale per dimension (values outside it are refused).
        id_field / match: How records name their samples (as ``assay import``); default ``--id sample_id``
            when the records have that field (the labelling sheet's).
        dimension / rating: One dimension's ratings in one field; default one column per dimension.

    Raises:
        InputError: An unreadable file, a record matching no sample, several samples or a sample twice,
            a rating that is not a number or lies off the scale, or a file with no rating column.
    """
    file = str(path)
    records = read_records(path)
    if not records:
        raise InputError("no records", file=file)
    notes = []
    if not id_field and not match:
        if "sample_id" not in records[0]:
            raise InputError("say how records find their samples: --id FIELD (assay's sample ids) or --match "
                             "FIELDS", file=file)
        id_field = "sample_id"
        notes.append(f"{Path(file).name}: records matched by their sample_id field (--id sample_id)")
    pairs = parse_match(match, id_field)
    if rating and not dimension:
        raise InputError("--rating names one dimension's field: give --dimension too", file=file)
    if dimension and dimension not in dimensions:
        raise InputError(f"--dimension {dimension!r} is not a dimension of the run ({', '.join(dimensions)})",
                         file=file)
    columns = {dimension: rating or dimension} if dimension else {d: d for d in dimensions if d in records[0]}
    if not columns:
        raise InputError(f"no rating column: name one column per dimension ({', '.join(dimensions)}) or give "
                         "--dimension X --rating FIELD", file=file)
    matching = apply_policy(match_records(records, samples, pairs, file=file, where=records.where),
                            duplicates="refuse", ambiguous="refuse", file=file, where=records.where)
    if matching.unmatched:
        shown = ", ".join(str(records.where(i)) for i in matching.unmatched[:SHOWN])
        raise InputError(f"{len(matching.unmatched)} record(s) match no sample of the run (first: {shown}); "
                         f"matched by {', '.join(f for f, _ in pairs)}", file=file, record=records.where(
                             matching.unmatched[0]))
    ratings: dict[str, dict[str, float]] = {d: {} for d in columns}
    inclusion: dict[str, float] = {}
    for sample, i in matching.pairs:
        rec, where = records[i], records.where(i)
        for dim, field in columns.items():
            if field not in rec:
                raise InputError("missing rating field", file=file, record=where, field=field)
            value = _number(rec[field], file=file, record=where, field=field, scale=(scales or {}).get(dim))
            if value is not None:
                ratings[dim][sample.id] = value
        p = _number(rec.get(PROBABILITY), file=file, record=where, field=PROBABILITY, scale=None)
        if p is not None:
            if not 0 < p <= 1:
                raise InputError(f"an inclusion probability lies in (0, 1], got {p:g}", file=file, record=where,
                                 field=PROBABILITY)
            inclusion[sample.id] = p
    labelled = {s for r in ratings.values() for s in r}
    missing_p = labelled - set(inclusion)
    if inclusion and missing_p:
        raise InputError(f"{len(missing_p)} labelled record(s) without {PROBABILITY} while others have one",
                         file=file, field=PROBABILITY)
    counts = ", ".join(f"{d} {len(r)}" for d, r in ratings.items())
    return Labels(ratings, inclusion or None, f"{Path(file).name}: {len(records)} records, labelled {counts}",
                  notes=notes)


def needs_texts(id_field: str | None, match: str | None) -> bool:
    """Whether matching needs the dataset's texts (fields a run store does not keep)."""
    if not match:
        return False
    return any(s not in STORED_FIELDS for _, s in parse_match(match, id_field))
