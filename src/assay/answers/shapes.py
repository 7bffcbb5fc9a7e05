"""Answers in the shape a request asks for, built without a judge (pure): values for each field of a JSON schema,
of the right count and bounds. The estimate's stand-in judge answers with them; nothing here is ever a score."""

from __future__ import annotations

import re
from typing import Any

_VALUES = re.compile(r"^\^(?P<value>.+?)(?:\(,(?P=value)\)\{(?P<rest>\d+)\})?\$$")


def schema_answer(schema: dict[str, Any]) -> dict[str, Any]:
    """Values for each field of an object schema; a ``^V(,V){n-1}$`` pattern gets n values, an enum its middle
    value, a string of bounded length that many characters at most (a typical reasoning), a list of strings one."""
    out: dict[str, Any] = {}
    for key, field in schema.get("properties", {}).items():
        field = field if isinstance(field, dict) else {}
        match = _VALUES.match(field.get("pattern", ""))
        if "enum" in field:
            out[key] = field["enum"][(len(field["enum"]) - 1) // 2]
        elif field.get("type") == "object":
            out[key] = schema_answer(field)
        elif field.get("type") == "array":
            items = field.get("items") if isinstance(field.get("items"), dict) else {}
            out[key] = [_text(items)] * max(1, int(field.get("minItems", 1)))
        elif field.get("type") in ("integer", "number"):
            out[key] = field.get("minimum", 1)
        elif match is None and field.get("type") == "string" and "maxLength" in field:
            out[key] = _text(field)
        else:
            count = 1 + int(match.group("rest") or 0) if match else 1
            out[key] = _values(match.group("value") if match else "", count)
    return out


def _text(field: dict[str, Any]) -> str:
    """A string of a typical length within a string schema's bounds (half its ``maxLength``, at least its
    ``minLength``)."""
    low, high = int(field.get("minLength", 0)), int(field.get("maxLength", 160))
    size = max(low, high // 2)
    return ("The text meets the criterion in part. " * (1 + size // 38))[:size].rstrip().ljust(size, ".")


def _values(pattern: str, n: int) -> str:
    """n comma-separated values matching a value pattern: bits, weights summing to 1, or ratings."""
    if "." in pattern:  # weights: two decimals, summing to exactly 1
        head = [round(1 / n, 2)] * (n - 1)
        return ",".join(f"{w:.2f}" for w in [*head, round(1 - sum(head), 2)])
    scale = re.search(r"\[(\d)-(\d)\]", pattern)  # ratings: the middle of the range; bits: 1
    value = str((int(scale.group(1)) + int(scale.group(2))) // 2) if scale else "1"
    return ",".join([value] * n)
