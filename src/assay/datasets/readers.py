"""Reading records from JSON, JSONL, CSV and Parquet files (plain or gzipped), with errors that name the place."""

from __future__ import annotations

import csv
import gzip
import io
import json
from pathlib import Path
from typing import Any

from assay.errors import InputError

Record = dict[str, Any]


class Records(list[Record]):
    """A file's records, each knowing where it stands in the file for error messages.

    ``where(i)`` is what an error calls record ``i``: its line in a JSONL or CSV file, its
    index in a JSON list, its row in a Parquet table.
    """

    def __init__(self, records: list[Record], places: list[str | int] | None = None) -> None:
        super().__init__(records)
        self.places: list[str | int] = places if places is not None else list(range(len(records)))

    def where(self, i: int) -> str | int:
        return self.places[i] if i < len(self.places) else i


def read_records(path: str | Path) -> Records:
    """All records of a file, by its extension (``.gz`` is read through).

    JSON must be a list of objects (or an object whose only list value is the records);
    JSONL one object per line; CSV with a header; Parquet any table.

    Raises:
        InputError: Unreadable file, bad syntax (with the line), or a record that is not an object.
    """
    path = Path(path)
    if not path.exists():
        raise InputError("file not found", file=str(path))
    name = path.name.lower().removesuffix(".gz")
    try:
        if name.endswith(".parquet"):
            import pandas as pd

            rows = [dict(r) for r in pd.read_parquet(path).to_dict(orient="records")]
            return Records(rows, [f"row {i}" for i in range(len(rows))])
        text = _read_text(path)
    except InputError:
        raise
    except Exception as exc:
        raise InputError(f"cannot read file: {exc}", file=str(path)) from exc
    if name.endswith(".jsonl"):
        return _jsonl(text, path)
    if name.endswith(".json"):
        return Records(_json(text, path))
    if name.endswith(".csv"):
        return _csv(text)
    raise InputError("unknown file type; use .json, .jsonl, .csv or .parquet (optionally .gz)", file=str(path))


def _read_text(path: Path) -> str:
    raw = path.read_bytes()
    if path.name.endswith(".gz"):
        raw = gzip.decompress(raw)
    return raw.decode("utf-8")


def _csv(text: str) -> Records:
    reader = csv.DictReader(io.StringIO(text))
    records, places = [], []
    for row in reader:
        records.append(dict(row))
        places.append(f"line {reader.line_num}")  # the row's last line (its only one, unless a value spans lines)
    return Records(records, places)


def _jsonl(text: str, path: Path) -> Records:
    records, places = [], []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"invalid JSON: {exc.msg} (column {exc.colno})", file=str(path),
                             record=f"line {lineno}") from exc
        if not isinstance(obj, dict):
            raise InputError("expected a JSON object", file=str(path), record=f"line {lineno}")
        records.append(obj)
        places.append(f"line {lineno}")
    return Records(records, places)


def _json(text: str, path: Path) -> list[Record]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})",
                         file=str(path)) from exc
    if isinstance(data, dict):
        lists = [v for v in data.values() if isinstance(v, list)]
        if len(lists) != 1:
            raise InputError("expected a list of records (or an object holding exactly one list)",
                             file=str(path))
        data = lists[0]
    if not isinstance(data, list):
        raise InputError("expected a list of records", file=str(path))
    for i, obj in enumerate(data):
        if not isinstance(obj, dict):
            raise InputError("expected a JSON object", file=str(path), record=f"index {i}")
    return data


def field(rec: Record, name: str, *, file: str, record: int | str, kind: type | tuple[type, ...] = str,
          optional: bool = False) -> Any:
    """Get a required field of a record, checking its type; the error names file, record and field."""
    if name not in rec or rec[name] is None:
        if optional:
            return None
        raise InputError("missing field", file=file, record=record, field=name)
    value = rec[name]
    if kind is str and isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, kind):
        want = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise InputError(f"expected {want}, got {type(value).__name__}", file=file, record=record, field=name)
    return value


def text(rec: Record, name: str, *, file: str, record: int | str) -> str:
    """A required text field (an output to judge); a number, list, object or null is refused, not made into text.

    Such a value means the mapping points at the wrong field: the judge would be asked to rate ``3`` or ``None``.
    """
    if name not in rec:
        raise InputError("missing field", file=file, record=record, field=name)
    value = rec[name]
    if not isinstance(value, str):
        raise InputError(f"expected text, got {_kind(value)}", file=file, record=record, field=name)
    return value


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, int | float):
        return f"a number ({value!r})"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def number(value: Any, *, file: str, record: int | str, name: str) -> float:
    """A rating as a float; strings such as "3.0" are accepted (CSV, USR's JSON)."""
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise InputError(f"expected a number, got {value!r}", file=file, record=record, field=name) from None
    if out != out:  # NaN
        raise InputError("rating is NaN", file=file, record=record, field=name)
    return out
