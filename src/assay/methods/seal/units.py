"""SEAL stage 1, pure parts: sentences, adjacent pairs, monadic facts, and the holistic/fine-grained gate.

Sentence splitting is deterministic by default (pysbd); the paper's LLM splitting (Table 21, stage 1)
and monadic-fact extraction are judge calls whose prompts are built and whose answers are parsed and
validated here, so that the driver only sends requests.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from assay.answers.fence import MATERIAL_NOTE, fence
from assay.answers.parsing import Parsed, extract_json
from assay.methods.seal.spec import FactPrompt, SplitPrompt

#: Id prefixes of monadic facts by the text they come from (the paper's c / r / s of Table 21).
FACT_PREFIX = {"source": "c", "reference": "r", "output": "s"}


@dataclass(frozen=True)
class Unit:
    """One semantic unit (or one fact): an id the judge refers to, its text, and what it is made of.

    Attributes:
        id: ``s3`` (sentence or output fact), ``p2`` (adjacent pair), ``c7`` / ``r1`` (evidence facts),
            ``u1`` (the whole output as one unit).
        text: The unit's text.
        members: For an adjacent pair, the ids of its two sentences.
    """

    id: str
    text: str
    members: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "text": self.text}
        if self.members:
            out["members"] = list(self.members)
        return out


@lru_cache(maxsize=1)
def _segmenter() -> Any:
    import pysbd

    return pysbd.Segmenter(language="en", clean=False)


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` by pysbd's rule-based English segmenter: deterministic, no judge call.

    Whitespace inside a sentence is collapsed (line breaks would otherwise let a sentence forge the
    numbered list the judge reads); empty pieces are dropped. A text is split once and kept
    (:data:`_SPLIT_TEXTS` of them): it is judged for each of a dataset's dimensions, and pysbd takes about as long
    as the rest of a unit's work.
    """
    return list(_sentences(text))


#: Texts kept split: a run's outputs in flight, each judged for every dimension.
_SPLIT_TEXTS = 4096


@lru_cache(maxsize=_SPLIT_TEXTS)
def _sentences(text: str) -> tuple[str, ...]:
    if not text.strip():
        return ()
    pieces = (_one_line(p) for p in _segmenter().segment(text))
    return tuple(p for p in pieces if p)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def sentence_units(sentences: list[str]) -> list[Unit]:
    """Sentences as units ``s1..sn`` (fluency)."""
    return [Unit(id=f"s{i}", text=s) for i, s in enumerate(sentences, start=1)]


def adjacent_pairs(sentences: list[str]) -> list[Unit]:
    """Adjacent sentence pairs ``p1 = (s1, s2) .. p(n-1)`` (coherence): n sentences give n - 1 units."""
    return [Unit(id=f"p{i}", text=f"{a} {b}", members=(f"s{i}", f"s{i + 1}"))
            for i, (a, b) in enumerate(itertools.pairwise(sentences), start=1)]


def whole_unit(text: str) -> Unit:
    """The whole output as one unit (holistic evaluation, single-unit dimensions, w/o SD)."""
    return Unit(id="u1", text=text.strip())


def fine_grained(count: int, threshold: int) -> bool:
    """Table 19's gate: an output with at least ``threshold`` units is judged unit by unit."""
    return count >= threshold


def _bullets(items: list[str]) -> str:
    return "\n".join(f"- {x}" for x in items)


def build_split_prompt(prompt: SplitPrompt, text: str, label: str) -> str:
    """The LLM sentence-splitting prompt (Table 21, stage 1), in assay's wording."""
    return (
        f"{prompt.intro}\n{MATERIAL_NOTE}\n\n{fence(text, label, ['sentences'])}\n\n"
        f"Rules:\n{_bullets(prompt.rules)}\n\n"
        'Answer with JSON only, in this form: {"sentences": ["<first sentence>", "<second sentence>"]}'
    )


def parse_split(answer: str, text: str, key: str = "sentences") -> Parsed:
    """Read the judge's sentence list and check it is the text, in order, with nothing added or lost.

    Args:
        key: The answer's key: ``sentences`` (assay's prompt) or ``sentence`` (the paper's Table 21).

    Returns:
        Parsed whose value is the list of sentences (whitespace collapsed).
    """
    items = json_list(answer, key)
    if not items.ok:
        return items
    sentences = [_one_line(s) for s in items.value]
    sentences = [s for s in sentences if s]
    if not sentences:
        return Parsed(None, "the sentence list is empty", answer)
    if "".join("".join(sentences).split()) != "".join(text.split()):
        return Parsed(None, "the sentences do not reproduce the text exactly (added, lost or reworded content)",
                      answer)
    return Parsed(sentences, None, answer)


def build_fact_prompt(prompt: FactPrompt, text: str, label: str) -> str:
    """The monadic-fact prompt (Table 21), asked once per text so that facts are shared across uses."""
    criteria = "\n".join(f"{i}. {c}" for i, c in enumerate(prompt.criteria, start=1))
    return (
        f"{prompt.intro}\n{prompt.definition}\n{criteria}\n{MATERIAL_NOTE}\n\n"
        f"{fence(text, label, ['facts'])}\n\n"
        f"Rules:\n{_bullets(prompt.rules)}\n\n"
        f'Answer with JSON only, in this form: {{"facts": ["<first fact>", "<second fact>"]}}'
    )


_ID_PREFIX = re.compile(r"^\s*(?:[-*•]\s*)?(?:[crsf]\d+\s*[:.)]|\d+\s*[.)])\s*", re.IGNORECASE)
_PLACEHOLDER = re.compile(r"^<[^<>]*>$")
_STOP = frozenset({
    "the", "and", "for", "with", "that", "this", "was", "were", "are", "has", "have", "had", "his", "her",
    "its", "their", "from", "not", "but"})


def _content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if (len(w) >= 3 or w.isdigit()) and w not in _STOP}


def parse_facts(answer: str, text: str, prefix: str) -> Parsed:
    """Read and validate a monadic-fact list; ids are assigned here (``prefix`` + position).

    Validation: a JSON object with a "facts" list of strings. Id prefixes the judge wrote ("s1:") are
    removed; empty items, copies of the format's placeholder, duplicates and facts sharing no content
    word with the text (invented, not extracted) are dropped and reported. No fact left is an error.

    Returns:
        Parsed whose value is ``{"facts": [Unit, ...], "dropped": [{"text", "reason"}, ...]}``.
    """
    items = json_list(answer, "facts", allow_objects=True)
    if not items.ok:
        return items
    return validate_facts(items.value, text, prefix, answer)


def validate_facts(raw_items: list[str], text: str, prefix: str, answer: str) -> Parsed:
    """Clean a fact list read from ``answer`` (see :func:`parse_facts`) and assign ids ``prefix`` + position."""
    words = _content_words(text)
    facts: list[str] = []
    dropped: list[dict[str, str]] = []
    seen: set[str] = set()
    for raw in raw_items:
        fact = _one_line(_ID_PREFIX.sub("", raw, count=1))
        reason = None
        if not fact or _PLACEHOLDER.match(fact):
            reason = "empty or a placeholder"
        elif fact.lower() in seen:
            reason = "duplicate"
        elif not (_content_words(fact) & words):
            reason = "shares no content word with the text"
        if reason:
            dropped.append({"text": raw, "reason": reason})
            continue
        seen.add(fact.lower())
        facts.append(fact)
    if not facts:
        why = f" ({len(dropped)} dropped: {dropped[0]['reason']})" if dropped else ""
        return Parsed(None, f"no usable fact in the list{why}", answer)
    units = [Unit(id=f"{prefix}{i}", text=f) for i, f in enumerate(facts, start=1)]
    return Parsed({"facts": units, "dropped": dropped}, None, answer)


def first_object(answer: str) -> Parsed:
    """The first JSON object in a judge's answer.

    :func:`assay.answers.parsing.extract_json` returns the first decodable JSON value, which may be a stray
    ``[1]`` in the prose before the answer; SEAL's answers are always objects, so the search starts at
    each ``{`` in turn until one decodes to an object.
    """
    for pos, ch in enumerate(answer):
        if ch == "{":
            found = extract_json(answer[pos:])
            if found.ok and isinstance(found.value, dict):
                return Parsed(found.value, None, answer)
    return Parsed(None, "no JSON object found", answer)


def json_list(answer: str, key: str, *, allow_objects: bool = False) -> Parsed:
    """The list of strings under ``key`` in the judge's JSON object (key matched loosely).

    With ``allow_objects``, an item written as an object of strings (``{"first fact": "..."}``, a
    shape small judges produce) contributes its string values, in order.
    """
    found = first_object(answer)
    if not found.ok:
        return found
    value = lookup(found.value, key)
    if value is None:
        return Parsed(None, f'the JSON object has no "{key}" field', answer)
    if not isinstance(value, list):
        return Parsed(None, f'"{key}" must be a list of strings', answer)
    items: list[str] = []
    for x in value:
        if isinstance(x, str):
            items.append(x)
        elif allow_objects and isinstance(x, dict) and x and all(isinstance(v, str) for v in x.values()):
            items.extend(x.values())
        else:
            return Parsed(None, f'"{key}" must be a list of strings', answer)
    return Parsed(items, None, answer)


def _norm_key(key: str) -> str:
    return re.sub(r"[\s_\-]+", " ", key.strip().lower())


def lookup(obj: dict[str, Any], key: str) -> Any:
    """``obj[key]``, matching case, spaces, underscores and hyphens loosely; None when absent."""
    if key in obj:
        return obj[key]
    want = _norm_key(key)
    for k, v in obj.items():
        if isinstance(k, str) and _norm_key(k) == want:
            return v
    return None
