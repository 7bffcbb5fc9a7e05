"""Reading SEAL's verification answers (the JSON formats of Tables 22-25): validate, never pad.

Every parser checks the answer's key, its length against the number of units or sub-dimensions,
and each value. A wrong length or value is an error with a reason (the driver re-asks); nothing is
ever filled in with zeros or cut to fit.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from assay.answers.parsing import Parsed
from assay.methods.seal.units import first_object, lookup

_YES = {"1", "yes", "true", "y"}
_NO = {"0", "no", "false", "n"}


def _object(answer: str) -> Parsed:
    return first_object(answer)


def _field(obj: dict[str, Any], key: str, answer: str) -> Parsed:
    value = lookup(obj, key)
    if value is None:
        return Parsed(None, f'the JSON object has no "{key}" field', answer)
    return Parsed(value, None, answer)


def _tokens(value: Any) -> list[str] | None:
    """A comma-separated string ("1,0,1", "[1, 0, 1]") or a JSON list, as a list of value strings."""
    if isinstance(value, str):
        body = value.strip().strip("[]()").strip()
        return [t.strip().strip("'\"") for t in re.split(r"[,;]", body)] if body else []
    if isinstance(value, list):
        if any(isinstance(x, list | dict) for x in value):
            return None
        return [str(x).strip().lower() if isinstance(x, bool) else str(x).strip() for x in value]
    if isinstance(value, bool | int | float):
        return [str(value).lower() if isinstance(value, bool) else str(value)]
    return None


def _count_error(got: int, want: int, what: str) -> str:
    return f"expected exactly {want} {what}, got {got}"


def _numbers(value: Any, n: int, noun: str, example: str, check: Callable[[int, str, float], str | None],
             answer: str) -> Parsed:
    """Exactly ``n`` numbers from a field ("0.3,0.2,0.5" or a list), each passing ``check(index, token, value)``
    (which returns the error to report, or None)."""
    tokens = _tokens(value)
    if tokens is None:
        return Parsed(None, f"the {noun}s must be a string like \"{example}\" or a list of numbers", answer)
    if len(tokens) != n:
        return Parsed(None, _count_error(len(tokens), n, f"{noun}s"), answer)
    out = []
    for i, t in enumerate(tokens, start=1):
        try:
            v = float(t)
        except ValueError:
            return Parsed(None, f"{noun} {i} is {t!r}, not a number", answer)
        if (error := check(i, t, v)) is not None:
            return Parsed(None, error, answer)
        out.append(v)
    return Parsed(out, None, answer)


def parse_binary(answer: str, key: str, n: int, what: str = "values") -> Parsed:
    """Read ``{"key": "1,0,1"}``: exactly ``n`` decisions, each 0 or 1 (yes/no/true/false accepted).

    Returns:
        Parsed whose value is a list of ``n`` ints in {0, 1}.
    """
    obj = _object(answer)
    if not obj.ok:
        return obj
    field = _field(obj.value, key, answer)
    if not field.ok:
        return field
    return binary_values(field.value, n, what, answer)


def binary_values(value: Any, n: int, what: str, answer: str) -> Parsed:
    """Validate a list of ``n`` binary decisions taken from an answer's field."""
    tokens = _tokens(value)
    if tokens is None:
        return Parsed(None, "the decisions must be a string like \"1,0,1\" or a list of 0/1", answer)
    if len(tokens) != n:
        return Parsed(None, _count_error(len(tokens), n, what), answer)
    out = []
    for i, t in enumerate(tokens, start=1):
        low = t.lower()
        if low in _YES:
            out.append(1)
        elif low in _NO:
            out.append(0)
        else:
            return Parsed(None, f"value {i} is {t!r}, not 0 or 1", answer)
    return Parsed(out, None, answer)


def parse_support(answer: str, key: str, fact_ids: list[str], source_ids: list[str]) -> Parsed:
    """Read the consistency format: for each output fact, the ids of the source facts supporting it.

    Accepted: a list aligned to ``fact_ids`` (``[["c2", "c5"], [], ["c1"]]``; a lone id string counts as
    a one-id list, ``""`` as none), or an object keyed by the output fact ids. Every id must be a known
    source fact id; an unknown id is an error, not a "not supported".

    Returns:
        Parsed whose value is a list (aligned to ``fact_ids``) of lists of source fact ids.
    """
    obj = _object(answer)
    if not obj.ok:
        return obj
    field = _field(obj.value, key, answer)
    if not field.ok:
        return field
    value = field.value
    if isinstance(value, dict):
        keys = {str(k).strip().lower(): v for k, v in value.items()}
        if set(keys) != {f.lower() for f in fact_ids}:
            return Parsed(None, f"the object must have exactly the keys {', '.join(fact_ids)}", answer)
        value = [keys[f.lower()] for f in fact_ids]
    if not isinstance(value, list):
        return Parsed(None, "the supporting ids must be a list with one list per summary fact", answer)
    if len(value) != len(fact_ids):
        return Parsed(None, _count_error(len(value), len(fact_ids), "lists (one per summary fact)"), answer)
    known = {s.lower(): s for s in source_ids}
    out: list[list[str]] = []
    for i, item in enumerate(value, start=1):
        ids = _support_ids(item)
        if ids is None:
            return Parsed(None, f"entry {i} is not a list of source fact ids", answer)
        bad = [x for x in ids if x.lower() not in known]
        if bad:
            return Parsed(None, f"entry {i} cites unknown source fact ids: {', '.join(bad[:5])}", answer)
        out.append(sorted({known[x.lower()] for x in ids}, key=_id_order))
    return Parsed(out, None, answer)


def _support_ids(item: Any) -> list[str] | None:
    if isinstance(item, str):
        return [x.strip() for x in item.split(",") if x.strip()]
    if isinstance(item, list) and all(isinstance(x, str) for x in item):
        return [x.split(":")[0].strip() for x in item if x.strip()]
    return None


def _id_order(fact_id: str) -> tuple[str, int]:
    m = re.match(r"([a-z]+)(\d+)$", fact_id)
    return (m.group(1), int(m.group(2))) if m else (fact_id, 0)


def parse_ratings(answer: str, key: str, n: int, low: int, high: int) -> Parsed:
    """Read the w/o SV format ``{"key": "4,5,2"}``: exactly ``n`` whole-number ratings in [low, high]."""
    obj = _object(answer)
    if not obj.ok:
        return obj
    field = _field(obj.value, key, answer)
    if not field.ok:
        return field

    def whole(i: int, t: str, v: float) -> str | None:
        return None if v.is_integer() and low <= v <= high else \
            f"rating {i} is {t}, not a whole number from {low} to {high}"

    got = _numbers(field.value, n, "rating", "4,5,2", whole, answer)
    return Parsed([int(v) for v in got.value], None, answer) if got.ok else got


def weight_values(value: Any, k: int, answer: str) -> Parsed:
    """Read ``k`` weights from a field ("0.3,0.2,0.5" or a list of numbers); sign and sum are checked later."""
    def finite(i: int, t: str, v: float) -> str | None:
        return None if math.isfinite(v) else f"weight {i} is not a finite number"

    return _numbers(value, k, "weight", "0.3,0.2,0.5", finite, answer)


def parse_weights(answer: str, key: str, k: int) -> Parsed:
    """Read ``{"key": "w1,...,wk"}`` (the separate weights call)."""
    obj = _object(answer)
    if not obj.ok:
        return obj
    field = _field(obj.value, key, answer)
    if not field.ok:
        return field
    return weight_values(field.value, k, answer)


def parse_joint(answer: str, key: str, weight_key: str, k: int) -> tuple[Parsed, Parsed]:
    """Read the single-unit format of Tables 23-25: ``{"key": "1,0,1", "key_weight": "0.5,0.2,0.3"}``.

    Returns:
        (decisions, weights), parsed independently: usable decisions with unusable weights is a
        weights failure (uniform fallback), not a verification failure.
    """
    obj = _object(answer)
    if not obj.ok:
        return obj, obj
    field = _field(obj.value, key, answer)
    decisions = binary_values(field.value, k, "answers (one per question)", answer) if field.ok else field
    wfield = _field(obj.value, weight_key, answer)
    weights = weight_values(wfield.value, k, answer) if wfield.ok else wfield
    return decisions, weights
