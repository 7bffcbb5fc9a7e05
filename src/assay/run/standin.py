"""Structural stand-in answers for an estimate: what a judge would answer, in shape, without asking it.

An estimate runs a method's own code against a judge that never answers; each request gets a stand-in
answer built from the request alone, shaped so that the method reads it and goes on to build its later
requests exactly as it would after a real answer. A method whose answers have a shape of its own answers
first (:meth:`assay.methods.base.Method.standin`: SEAL's decomposition lists the fenced text's sentences,
CheckEval gives one answer per question, G-Eval's steps have a typical length); what is left is generic here.
Pure functions of the request; nothing here is ever a score.
"""

from __future__ import annotations

import json
import re
from typing import Any

from assay.answers.parsing import format_example
from assay.judges.base import Request

_SCALE = re.compile(r"from (\d+) (?:to|-) (\d+)|\((\d+)-(\d+)\)")
_VALUES = re.compile(r"^\^(?P<value>.+?)(?:\(,(?P=value)\)\{(?P<rest>\d+)\})?\$$")


def answer(request: Request) -> str:
    """The generic stand-in answer to one request (the same request always gets the same answer): JSON in the
    shape asked for, else the middle of the scale the prompt names. A method whose answers have another shape
    gives its own first (:meth:`assay.methods.base.Method.standin`)."""
    prompt = request.messages[-1].content
    if request.json_mode or request.json_schema:
        return json_answer(prompt, request.json_schema)
    return str(middle_rating(prompt))


def middle_rating(prompt: str) -> int:
    """The middle of the last scale the prompt names (``from 1 to 5``, ``(1-5)``); 1 when it names none."""
    scales = [[int(g) for g in m.groups() if g is not None] for m in _SCALE.finditer(prompt)]
    if not scales:
        return 1
    low, high = scales[-1]
    return (low + high) // 2


def json_answer(prompt: str, schema: str | None) -> str:
    """A JSON answer: a schema's fields get values of the right count; otherwise the prompt's own format example."""
    if schema:
        return json.dumps(schema_answer(json.loads(schema)))
    example = format_example(prompt)
    return json.dumps(example) if example is not None else "{}"


def schema_answer(schema: dict[str, Any]) -> dict[str, Any]:
    """Values for each field of an object schema; a ``^V(,V){n-1}$`` pattern gets n values."""
    out: dict[str, Any] = {}
    for key, field in schema.get("properties", {}).items():
        match = _VALUES.match(field.get("pattern", "")) if isinstance(field, dict) else None
        count = 1 + int(match.group("rest") or 0) if match else 1
        out[key] = _values(match.group("value") if match else "", count)
    return out


def _values(pattern: str, n: int) -> str:
    """n comma-separated values matching a value pattern: bits, weights summing to 1, or ratings."""
    if "." in pattern:  # weights: two decimals, summing to exactly 1
        head = [round(1 / n, 2)] * (n - 1)
        return ",".join(f"{w:.2f}" for w in [*head, round(1 - sum(head), 2)])
    scale = re.search(r"\[(\d)-(\d)\]", pattern)  # ratings: the middle of the range; bits: 1
    value = str((int(scale.group(1)) + int(scale.group(2))) // 2) if scale else "1"
    return ",".join([value] * n)


def listed(answer: str) -> list[str]:
    """The strings a JSON stand-in answer lists (a decomposition's units), so that later prompts quoting them
    are known to be built from it."""
    try:
        value = json.loads(answer)
    except ValueError:
        return []
    lists = value.values() if isinstance(value, dict) else []
    return [x for v in lists if isinstance(v, list) for x in v if isinstance(x, str)]


