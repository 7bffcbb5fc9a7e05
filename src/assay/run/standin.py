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

from assay.answers.parsing import format_example
from assay.answers.shapes import schema_answer
from assay.judges.base import Request

_SCALE = re.compile(r"from (\d+) (?:to|-) (\d+)|\((\d+)-(\d+)\)")


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
    """A JSON answer: a schema's fields get values of the right count (several lists, as the paper's joint facts,
    take the format example's); otherwise the prompt's own format example. A decomposition's lists are the
    method's to fill (SEAL's :meth:`~assay.methods.base.Method.standin`)."""
    example = format_example(prompt)
    if schema:
        out = schema_answer(json.loads(schema))
        lists = [k for k, v in out.items() if isinstance(v, list)]
        if lists and isinstance(example, dict):
            out.update({k: example[k] for k in lists if isinstance(example.get(k), list)})
        return json.dumps(out)
    return json.dumps(example) if example is not None else "{}"


def listed(answer: str) -> list[str]:
    """The strings a JSON stand-in answer lists (a decomposition's units), so that later prompts quoting them
    are known to be built from it."""
    try:
        value = json.loads(answer)
    except ValueError:
        return []
    lists = value.values() if isinstance(value, dict) else []
    return [x for v in lists if isinstance(v, list) for x in v if isinstance(x, str)]


