"""Structural stand-in answers for an estimate: what a judge would answer, in shape, without asking it.

An estimate runs a method's own code against a judge that never answers; each request gets a stand-in
answer built from the request alone, shaped so that the method reads it and goes on to build its later
requests exactly as it would after a real answer (SEAL verifies as many units as the stand-in
decomposition has, CheckEval reads one answer per question, G-Eval's score prompts carry steps of a
typical length). Pure functions of the request and its stage; nothing here is ever a score.
"""

from __future__ import annotations

import json
import re
from typing import Any

from assay.answers.fence import CLOSE, OPEN
from assay.judges.base import Request

#: G-Eval evaluation steps of a typical length (about 90 tokens: the released prompts' steps are 60-120).
TYPICAL_STEPS = (
    "1. Read the source text carefully and identify its main topic and the key points it makes.\n"
    "2. Read the text under evaluation and compare it with the source, noting what it keeps, adds or omits.\n"
    "3. Check how well the text meets the criterion, point by point, with examples from the text.\n"
    "4. Assign a score on the scale given, from the lowest for a text that fails the criterion to the highest "
    "for a text that meets it fully."
)
_SCALE = re.compile(r"from (\d+) (?:to|-) (\d+)|\((\d+)-(\d+)\)")
_CHECK_STOP = re.compile(r"^Q(\d+):$")
_FENCE = re.compile(re.escape(OPEN) + r"([^<>\n]+)" + re.escape(CLOSE) + r"\n(.*?)\n" + re.escape(OPEN)
                    + r"END \1" + re.escape(CLOSE), re.DOTALL)
_VALUES = re.compile(r"^\^(?P<value>.+?)(?:\(,(?P=value)\)\{(?P<rest>\d+)\})?\$$")


def answer(request: Request, stage: str) -> str:
    """The stand-in answer to one request (the same request always gets the same answer).

    Args:
        request: What the method asked.
        stage: The method's stage name (``steps`` gets typical evaluation steps).
    """
    prompt = request.messages[-1].content
    if request.json_mode or request.json_schema:
        return json_answer(prompt, request.json_schema)
    questions = next((int(m.group(1)) - 1 for s in request.stop if (m := _CHECK_STOP.match(s))), None)
    if questions is not None:
        return checklist_answer(questions)
    if stage == "steps":
        return TYPICAL_STEPS
    return str(middle_rating(prompt))


def middle_rating(prompt: str) -> int:
    """The middle of the last scale the prompt names (``from 1 to 5``, ``(1-5)``); 1 when it names none."""
    scales = [[int(g) for g in m.groups() if g is not None] for m in _SCALE.finditer(prompt)]
    if not scales:
        return 1
    low, high = scales[-1]
    return (low + high) // 2


def checklist_answer(questions: int) -> str:
    """One ``Qk: yes`` / ``Qk: no`` line per question (alternating)."""
    return "\n".join(f"Q{k}: {'yes' if k % 2 else 'no'}" for k in range(1, questions + 1))


def fenced_text(prompt: str) -> str | None:
    """The content of the prompt's last fenced block (the text a decomposition prompt asks to split)."""
    blocks = _FENCE.findall(prompt)
    return blocks[-1][1] if blocks else None


def sentences(text: str) -> list[str]:
    """The text's sentences as SEAL's deterministic splitter finds them."""
    from assay.methods.seal.units import split_sentences

    return split_sentences(text)


def json_answer(prompt: str, schema: str | None) -> str:
    """A JSON answer: a schema's fields get values of the right count; a decomposition (a format example with
    one list of strings) lists the fenced text's sentences; otherwise the prompt's own format example."""
    example, text = format_example(prompt), fenced_text(prompt)
    if schema:
        out = schema_answer(json.loads(schema))
        lists = [k for k, v in out.items() if isinstance(v, list)]
        if len(lists) == 1 and len(out) == 1 and text is not None:  # a decomposition: the fenced text's sentences
            out[lists[0]] = sentences(text)
        elif lists and isinstance(example, dict):  # several lists (the paper's joint facts): the format example's
            out.update({k: example[k] for k in lists if isinstance(example.get(k), list)})
        return json.dumps(out)
    if isinstance(example, dict) and len(example) == 1 and text is not None:
        key, value = next(iter(example.items()))
        if isinstance(value, list) and value and all(isinstance(x, str) for x in value):
            return json.dumps({key: sentences(text)})
    return json.dumps(example) if example is not None else "{}"


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


def listed(answer: str) -> list[str]:
    """The strings a JSON stand-in answer lists (a decomposition's units), so that later prompts quoting them
    are known to be built from it."""
    try:
        value = json.loads(answer)
    except ValueError:
        return []
    lists = value.values() if isinstance(value, dict) else []
    return [x for v in lists if isinstance(v, list) for x in v if isinstance(x, str)]


def format_example(prompt: str) -> Any:
    """The prompt's last JSON object on one line (its answer format), lists of lists emptied (no ids invented)."""
    for line in reversed(prompt.splitlines()):
        start, end = line.find("{"), line.rfind("}")
        if 0 <= start < end:  # ``Example: {...}`` too
            try:
                value = json.loads(line[start:end + 1])
            except ValueError:
                continue
            return {k: [[] for _ in v] if isinstance(v, list) and all(isinstance(x, list) for x in v) and v else v
                    for k, v in value.items()} if isinstance(value, dict) else value
    return None
