"""SEAL's verification, weighting and rating prompts (structure of Tables 22-25, assay's wording).

Each builder is a pure function returning an :class:`Ask`: the prompt, the one-line answer format
(repeated when a malformed answer is re-asked) and a token budget sized to the expected answer.
Judged text is fenced and neutralised; JSON answer keys inside it are defused as well.

Every prompt puts what it shares with its neighbours first: the dimension's opening and rules, then the texts
of the source document, then the output's units, then the question and answer format that vary by sub-dimension
and unit count. The method asks the executor for dimension-major order, so consecutive prompts (one dimension
over the outputs of one document) share everything up to the output's units.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from assay.answers.fence import MATERIAL_NOTE, fence
from assay.datasets.catalog import DatasetInfo
from assay.methods.seal.spec import Recipe, SubDimension
from assay.methods.seal.units import Unit
from assay.types import Sample

#: The scale of the scalar judgment that replaces binary sub-dimension decisions (w/o SV).
RATING_LOW, RATING_HIGH = 1, 5


@dataclass(frozen=True)
class Ask:
    """One request to make: its prompt, its answer format (for re-asking), its token budget, and the JSON
    schema of the answer for backends that can enforce one (None: any JSON object)."""

    prompt: str
    hint: str
    max_tokens: int
    schema: dict[str, Any] | None = None


def _values(value: str, n: int) -> dict[str, Any]:
    """A string of exactly n comma-separated values matching the regex ``value`` (no spaces)."""
    return {"type": "string", "pattern": f"^{value}" + (f"(,{value}){{{n - 1}}}" if n > 1 else "") + "$"}


_BIT = "[01]"
_WEIGHT = "(0([.][0-9]{1,3})?|1([.]0{1,3})?)"  # [.], not an escaped dot: llama.cpp's grammars refuse "\\."
_RATING = f"[{RATING_LOW}-{RATING_HIGH}]"


def answer_schema(fields: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """An object with exactly these fields, in this order."""
    return {"type": "object", "properties": fields, "required": list(fields), "additionalProperties": False}


#: The most characters of one extracted sentence or fact under a schema, and the characters a token holds (for
#: sizing a list to its token budget: a list that cannot close within ``max_tokens`` would be cut off).
ITEM_CHARS, CHARS_PER_TOKEN = 160, 3.5
#: One sentence or fact: it starts with a capital or a digit, holds no quote, backslash or line break, and is 11 to
#: ITEM_CHARS characters long. Without the first character's class the embedded judge wrote ``""`` or brackets and
#: whitespace; a fact that quotes someone loses its quotation marks.
ITEM_PATTERN = rf'^[A-Z0-9][^"\\\n]{{10,{ITEM_CHARS - 1}}}$'


def list_schema(keys: Iterable[str], budget: int) -> dict[str, Any]:
    """Stage 1's answer as JSON: under each key a list of strings (sentences or facts), each matching
    :data:`ITEM_PATTERN` (at most :data:`ITEM_CHARS` long) and, all keys together, as many as fit in ``budget``
    tokens, so that a grammar always closes the object before the budget runs out."""
    keys = list(keys)
    items = max(1, int(budget * CHARS_PER_TOKEN) // ((ITEM_CHARS + 4) * len(keys)))
    item = {"type": "string", "pattern": ITEM_PATTERN}
    one = {"type": "array", "items": item, "minItems": 1, "maxItems": items}
    return answer_schema({k: one for k in keys})


def defuse(text: str, keys: Iterable[str]) -> str:
    """Turn ``"key"`` (an answer key in double quotes) inside judged text into curly quotes.

    A judged text that contains ``{"fluency": "1,1"}`` could otherwise pass for an answer in the
    judge's eyes; the words stay readable. Kept per text and key set: a source is shown in the prompt of every
    unit about it.
    """
    return _defused(text, tuple(keys))


@lru_cache(maxsize=4096)
def _defused(text: str, keys: tuple[str, ...]) -> str:
    for pattern in _quoted_keys(keys):  # key by key, in order
        text = pattern.sub(r"“\1”", text)
    return text


@lru_cache(maxsize=64)
def _quoted_keys(keys: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    """Each of ``keys`` alone in double quotes, compiled once per key set."""
    return tuple(re.compile(rf'"\s*({re.escape(k)})\s*"', re.IGNORECASE) for k in keys)


@dataclass(frozen=True)
class Texts:
    """The sample's texts as fenced blocks, with what was left out and why."""

    blocks: list[str]
    notes: list[str]


def text_blocks(sample: Sample, info: DatasetInfo, parts: Iterable[str], keys: list[str]) -> Texts:
    """Fenced source / context / reference blocks, in the order asked.

    A reference identical to the source (QAGS in the UniEval release) is shown once, as the source;
    a part the sample lacks is left out. Both are reported in ``notes`` for the trace.
    """
    blocks, notes = [], []
    keys = [*keys, *(d.name for d in info.dimensions)]  # every dimension's label is an answer look-alike
    for part in parts:
        if part == "source" and sample.source.strip():
            blocks.append(fence(defuse(sample.source, keys), info.input_name, keys))
        elif part == "context" and sample.context and info.context_name:
            blocks.append(fence(defuse(sample.context, keys), info.context_name, keys))
        elif part == "reference" and sample.reference and sample.reference.strip():
            if sample.reference.strip() == sample.source.strip():
                notes.append("reference identical to the source: shown once, as the source")
            else:
                blocks.append(fence(defuse(sample.reference, keys), f"reference {info.output_name}", keys))
        else:
            notes.append(f"no {part} in this sample")
    return Texts(blocks, notes)


def units_block(units: list[Unit], label: str, keys: list[str]) -> str:
    """Numbered units (``s1: ...``) in one fence; each unit is on one line, so none can forge another."""
    lines = "\n".join(f"{u.id}: {' '.join(defuse(u.text, keys).split())}" for u in units)
    return fence(lines, label, keys)


def join_parts(*parts: str | None) -> str:
    return "\n\n".join(p for p in parts if p)


def rules_block(rules: list[str]) -> str | None:
    return "Rules:\n" + "\n".join(f"- {r}" for r in rules) if rules else None


def _items(unit: str, units: list[Unit], output_name: str) -> str:
    n = len(units)
    if unit == "adjacent_pair":
        steps = ", ".join(f"({u.members[0]} -> {u.members[1]})" for u in units)
        return f"each of the {n} transitions between adjacent sentences, in this order: {steps}"
    noun = "sentences" if unit == "sentence" else f"{output_name} facts"
    return f"each of the {n} {noun}, in order from {units[0].id} to {units[-1].id}"


def _budget(slack: int, per_item: int, n: int) -> int:
    return slack + per_item * n


# Concrete examples of the answer format, sized to the expected answer, as the paper's prompts give
# them (Tables 22-25). A weak judge may copy an example; that is its failure to judge, not a parse error.
def example_bits(n: int) -> str:
    """``1,1,0,1,1``: an n-value 0/1 example."""
    return ",".join("110"[i % 3] for i in range(n))


def example_weights(k: int) -> str:
    """``0.20,0.20,0.20,0.20,0.20``: k two-decimal weights summing to exactly 1."""
    head = [round(1 / k, 2)] * (k - 1)
    return ",".join(f"{w:.2f}" for w in [*head, round(1 - sum(head), 2)])


def example_support(n: int) -> str:
    """``[["c2", "c5"], [], ["c1"]]`` cycled to n lists."""
    cycle = ['["c2", "c5"]', "[]", '["c1"]']
    return "[" + ", ".join(cycle[i % 3] for i in range(n)) + "]"


def example_ratings(n: int) -> str:
    """``4,3,5``: n ratings on the 1-5 scale."""
    return ",".join("435"[i % 3] for i in range(n))


def _format(fields: list[str], example: str) -> str:
    lines = "\n".join(f"- {f}" for f in fields)
    return f"{lines}\nExample: {example}"


def build_units_binary(recipe: Recipe, sub: SubDimension, body: list[str], units: list[Unit],
                       output_name: str, slack: int) -> Ask:
    """One sub-dimension asked of every unit at once (Table 22: coherence, fluency, relevance).

    Args:
        body: The fenced blocks (shown texts, evidence facts, the numbered units), in prompt order.
    """
    n = len(units)
    hint = _format([f'"{recipe.key}": {n} comma-separated values (1 or 0), in the order above'],
                   f'{{"{recipe.key}": "{example_bits(n)}"}}')
    prompt = join_parts(
        recipe.intro, MATERIAL_NOTE, rules_block(recipe.rules), *body,
        f"Question ({sub.name}): {sub.question}\n"
        f"Answer it for {_items(recipe.unit, units, output_name)}: 1 for yes, 0 for no.",
        f"Answer with JSON only, with exactly {n} values:\n{hint}")
    return Ask(prompt, hint, _budget(slack, 3, n), answer_schema({recipe.key: _values(_BIT, n)}))


def build_support(recipe: Recipe, body: list[str], facts: list[Unit], output_name: str, slack: int) -> Ask:
    """Supporting source-fact ids for every output fact (Table 22: consistency)."""
    n = len(facts)
    hint = _format([f'"{recipe.key}": a list of exactly {n} lists, one per {output_name} fact in order; '
                    "each lists the ids of the supporting source facts, [] when none"],
                   f'{{"{recipe.key}": {example_support(n)}}}')
    prompt = join_parts(
        recipe.intro, MATERIAL_NOTE, rules_block(recipe.rules), *body,
        f"Task: for {_items(recipe.unit, facts, output_name)}, list the ids of the source facts that "
        f"support it ({recipe.subdimensions[0].name}); give an empty list [] when none does.",
        f"Answer with JSON only:\n{hint}")
    return Ask(prompt, hint, _budget(slack, 10, n))


def _questions(subs: list[SubDimension], holistic: bool) -> str:
    return "\n".join(f"Q{i} ({s.name}): {s.holistic_question() if holistic else s.question}"
                     for i, s in enumerate(subs, start=1))


def build_single(recipe: Recipe, body: list[str], *, key: str, dimension: str, output_name: str,
                 holistic: bool, ask_weights: bool, slack: int) -> Ask:
    """All sub-dimensions asked of one unit, the whole output (Tables 23-25; the holistic fallback).

    With ``ask_weights`` the judge also weighs the questions in the same answer, as in Tables 23-25.
    """
    subs = recipe.subdimensions
    k = len(subs)
    intro = (recipe.holistic_intro or recipe.intro) if holistic else recipe.intro
    if k == 1:
        ask = f"Answer this yes/no question about the {output_name} (1 = yes, 0 = no):"
        fields = [f'"{key}": 1 or 0']
    else:
        ask = f"Answer these {k} yes/no questions about the {output_name} (1 = yes, 0 = no):"
        fields = [f'"{key}": {k} comma-separated answers (1 or 0), Q1 first']
    example = f'"{key}": "{example_bits(k)}"'
    weigh = None
    if ask_weights:
        weigh = (f"Then give each question a weight for how much it matters for {dimension} in this particular "
                 "case: non-negative decimals that add up to 1.0.")
        fields.append(f'"{key}_weight": {k} comma-separated weights, Q1 first, summing to 1.0')
        example += f', "{key}_weight": "{example_weights(k)}"'
    hint = _format(fields, "{" + example + "}")
    count = " with exactly two fields" if ask_weights else ""
    prompt = join_parts(intro, MATERIAL_NOTE, *body, f"{ask}\n{_questions(subs, holistic)}", weigh,
                   f"Answer with JSON only{count}:\n{hint}")
    schema = {key: _values(_BIT, k)} | ({f"{key}_weight": _values(_WEIGHT, k)} if ask_weights else {})
    return Ask(prompt, hint, _budget(slack, 10 if ask_weights else 3, k), answer_schema(schema))


def build_weights(recipe: Recipe, body: list[str], *, key: str, dimension: str, output_name: str,
                  holistic: bool, slack: int) -> Ask:
    """The separate weighting call: w(s) for the (input, output, dimension) at hand (equation 5)."""
    k = len(recipe.subdimensions)
    hint = _format([f'"{key}_weight": {k} comma-separated weights, Q1 first, summing to 1.0'],
                   f'{{"{key}_weight": "{example_weights(k)}"}}')
    prompt = join_parts(
        f"You will weigh the criteria used to judge the {dimension} of the {output_name} below.", MATERIAL_NOTE,
        *body,
        f"Its {dimension} is judged by these {k} yes/no criteria:\n{_questions(recipe.subdimensions, holistic)}",
        f"Give each criterion a weight for how much it matters for {dimension} in this particular case: "
        "non-negative decimals that add up to 1.0. Do not answer the questions themselves.",
        f"Answer with JSON only:\n{hint}")
    return Ask(prompt, hint, _budget(slack, 7, k), answer_schema({f"{key}_weight": _values(_WEIGHT, k)}))


def build_ratings(recipe: Recipe, body: list[str], units: list[Unit] | None, *, key: str, dimension: str,
                  output_name: str, holistic: bool, slack: int) -> Ask:
    """The w/o-SV ablation: one scalar rating per unit instead of binary sub-dimension decisions.

    Args:
        units: The units (fine-grained), or None for a single unit (the whole output).
    """
    rkey = f"{key} ratings"
    scale = f"from {RATING_LOW} (worst) to {RATING_HIGH} (best)"
    intro = (recipe.holistic_intro or recipe.intro) if holistic else recipe.intro
    if units is None:
        n = 1
        task = f"Rate the {output_name} for {dimension} ({recipe.criterion}) on a scale {scale}."
        field = f'"{rkey}": one whole number {scale}'
    else:
        n = len(units)
        task = (f"Rate {_items(recipe.unit, units, output_name)} for {dimension} ({recipe.criterion}) "
                f"on a scale {scale}.")
        field = f'"{rkey}": {n} comma-separated whole numbers {scale}, in order'
    hint = _format([field], f'{{"{rkey}": "{example_ratings(n)}"}}')
    rules = None if units is None else rules_block(recipe.rules)
    prompt = join_parts(intro, MATERIAL_NOTE, rules, *body, task, f"Answer with JSON only:\n{hint}")
    return Ask(prompt, hint, _budget(slack, 3, n), answer_schema({rkey: _values(_RATING, n)}))


def reask_message(error: str, hint: str) -> str:
    """The follow-up turn after a malformed or misaligned answer: the reason, then the format again."""
    return f"Your answer could not be used: {error}. Answer again, with JSON only, in this format:\n{hint}"
