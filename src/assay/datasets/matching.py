"""Records matched to a dataset's samples by fields the user names (pure): the answers of ``assay import`` and the
human labels of ``assay meta --human`` find their samples this way. Nothing here touches a file: a record is a dict,
its place in the file is named by the caller (``where``) in every error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from assay.errors import ConfigError, InputError
from assay.types import Sample

SAMPLE_FIELDS = ("id", "doc_id", "system_id", "source", "output", "reference", "context")
SHOWN = 5  # records named in a report of unmatched, ambiguous or duplicate records

Duplicates = Literal["refuse", "first", "skip"]
Ambiguous = Literal["refuse", "skip"]


# -- the mapping --------------------------------------------------------------------------------


def parse_match(spec: str | None, id_field: str | None = None) -> list[tuple[str, str]]:
    """The (file field, sample field) pairs that identify a sample, from ``--match`` and ``--id``.

    ``--match source,system_id`` compares the file's ``source`` with the sample's ``source`` and so
    on; ``FILE_FIELD=SAMPLE_FIELD`` names a file field that differs from the sample's; ``--id FIELD``
    is ``--match FIELD=id`` (the file carries assay's sample ids).

    Raises:
        ConfigError: No field given, an unknown sample field, or a sample field named twice.
    """
    pairs = []
    for part in [p.strip() for p in (spec or "").split(",") if p.strip()]:
        file_field, eq, sample_field = part.partition("=")
        file_field, sample_field = file_field.strip(), (sample_field if eq else file_field).strip()
        if not file_field or not sample_field:
            raise ConfigError(f"--match {part!r}: expected FIELD or FILE_FIELD=SAMPLE_FIELD")
        pairs.append((file_field, sample_field))
    if id_field:
        pairs.append((id_field, "id"))
    if not pairs:
        raise ConfigError("say how records find their samples: --id FIELD (assay's sample ids) or --match FIELDS "
                          f"(sample fields: {', '.join(SAMPLE_FIELDS)})")
    for _, sample_field in pairs:
        if sample_field not in SAMPLE_FIELDS:
            raise ConfigError(f"--match: {sample_field!r} is not a sample field; "
                              f"choose from {', '.join(SAMPLE_FIELDS)}")
    named = [s for _, s in pairs]
    if len(set(named)) != len(named):
        raise ConfigError(f"--match/--id: a sample field is named twice ({', '.join(named)})")
    return pairs


def _key_part(value: Any) -> str | None:
    """A matched field as compared: text with surrounding whitespace trimmed and inner runs of whitespace as
    one space (copies of an article differ in line breaks, not in words); numbers as written."""
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return " ".join(str(value).split())


# -- matching records to samples ----------------------------------------------------------------


@dataclass
class Matching:
    """How the records of an answers file found their samples.

    Attributes:
        pairs: ``(sample, record index)`` for every sample kept, in file order.
        unmatched: Records matching no sample (skipped).
        ambiguous: Records matching several samples, with those samples' ids.
        duplicates: Samples that several records match, with the records (in file order).
        skipped: Records left out by the ``--duplicates``/``--ambiguous`` policy.
    """

    pairs: list[tuple[Sample, int]] = field(default_factory=list)
    unmatched: list[int] = field(default_factory=list)
    ambiguous: list[tuple[int, list[str]]] = field(default_factory=list)
    duplicates: dict[str, list[int]] = field(default_factory=dict)
    skipped: list[int] = field(default_factory=list)

    def counts(self, records: int) -> dict[str, int]:
        """The counts the manifest and the command's output report."""
        return {"records": records, "matched": len(self.pairs), "unmatched": len(self.unmatched),
                "ambiguous": len(self.ambiguous), "duplicate_samples": len(self.duplicates),
                "duplicate_records": sum(len(v) for v in self.duplicates.values()), "skipped": len(self.skipped)}


def match_records(records: Sequence[dict[str, Any]], samples: Sequence[Sample], pairs: list[tuple[str, str]], *,
                  file: str, where: Any = lambda i: i) -> Matching:
    """Find each record's sample by the mapped fields; nothing is decided yet about duplicates.

    Args:
        records: The answers file's records.
        samples: The dataset's samples.
        pairs: ``(file field, sample field)`` from :func:`parse_match`.
        file: The file's name, for errors.
        where: Names record ``i`` for errors (its line or index).

    Raises:
        InputError: A record without one of the mapped fields (naming file, record and field).
    """
    index: dict[tuple[str | None, ...], list[Sample]] = {}
    for s in samples:
        index.setdefault(tuple(_key_part(getattr(s, f)) for _, f in pairs), []).append(s)
    out = Matching()
    seen: dict[str, list[int]] = {}
    for i, rec in enumerate(records):
        key = []
        for file_field, _ in pairs:
            if file_field not in rec or rec[file_field] is None:
                raise InputError("missing field (named by --match/--id)", file=file, record=where(i),
                                 field=file_field)
            key.append(_key_part(rec[file_field]))
        found = index.get(tuple(key), [])
        if not found:
            out.unmatched.append(i)
        elif len(found) > 1:
            out.ambiguous.append((i, [s.id for s in found]))
        else:
            seen.setdefault(found[0].id, []).append(i)
            if len(seen[found[0].id]) == 1:
                out.pairs.append((found[0], i))
    out.duplicates = {sid: recs for sid, recs in seen.items() if len(recs) > 1}
    return out


def apply_policy(m: Matching, *, duplicates: Duplicates, ambiguous: Ambiguous, file: str,
                 where: Any = lambda i: i) -> Matching:
    """Refuse or skip ambiguous and duplicate records as the options say; a file matching nothing is an error.

    ``duplicates``: ``refuse`` (default), ``first`` (the first record of a sample is kept, the others
    skipped) or ``skip`` (every record of such a sample is skipped). ``ambiguous``: ``refuse`` or ``skip``.
    What is skipped is counted, never silently dropped.

    Raises:
        InputError: Ambiguous or duplicate records under ``refuse`` (counts and the first few named), or no
            record matched any sample.
    """
    if m.ambiguous and ambiguous == "refuse":
        shown = "; ".join(f"record {where(i)} matches {len(ids)} samples ({', '.join(ids[:3])}"
                          f"{', ...' if len(ids) > 3 else ''})" for i, ids in m.ambiguous[:SHOWN])
        raise InputError(f"{len(m.ambiguous)} record(s) match several samples: {shown}. Add a --match field that "
                         "tells them apart, or --ambiguous skip", file=file)
    if m.duplicates and duplicates == "refuse":
        shown = "; ".join(f"sample {sid}: records {', '.join(str(where(i)) for i in recs[:3])}"
                          for sid, recs in list(m.duplicates.items())[:SHOWN])
        raise InputError(f"{len(m.duplicates)} sample(s) matched by several records "
                         f"({sum(len(r) for r in m.duplicates.values())} records): {shown}. Add a --match field, "
                         "or --duplicates first|skip", file=file)
    skipped = [i for i, _ in m.ambiguous]
    for recs in m.duplicates.values():
        skipped += recs[1:] if duplicates == "first" else recs
    if duplicates == "skip":
        m.pairs = [(s, i) for s, i in m.pairs if s.id not in m.duplicates]
    m.skipped = sorted(skipped)
    if not m.pairs:
        raise InputError(f"no record matched a sample of the dataset ({len(m.unmatched)} unmatched"
                         + (f", first: record {where(m.unmatched[0])}" if m.unmatched else "")
                         + "); check --match/--id and --dataset", file=file)
    return m


def describe_unmatched(m: Matching, where: Any = lambda i: i) -> str | None:
    """One line naming the unmatched records (count and the first few), or None when every record matched."""
    if not m.unmatched:
        return None
    shown = ", ".join(str(where(i)) for i in m.unmatched[:SHOWN])
    return f"{len(m.unmatched)} record(s) matched no sample and were skipped (first: {shown})"
