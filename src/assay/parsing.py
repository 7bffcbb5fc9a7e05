"""Reading a judge's answer: ratings on a scale and JSON objects, with failures as data, never as zeros."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from collections.abc import Sequence
from typing import Any

from assay.echo import own_answer
from assay.types import Scale

_NUM = r"[-+]?\d+(?:\.\d+)?"
_MARKUP = re.compile(r"[*_`#]+")
NUMBER_WORDS = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                "eight": 8, "nine": 9, "ten": 10}
_VAL = r"(\d+(?:\.\d+)?|" + "|".join(NUMBER_WORDS) + r")"
_OUT_OF = r"(?:\s*(?:/|out\s+of)\s*(\d+(?:\.\d+)?)(?![\d/]))?"
_LABELS = r"score|rating|grade|mark"
_PAREN = r"(?:\s*\([^)\n]*\))?"
#: Rating levels, strongest first: a final/overall rating, a form line ("Coherence: 4"), a rating
#: stated in prose ("a score of 4", "4 out of 5", "3 stars"), a bare number.
FINAL, FORM, PROSE, BARE = 0, 1, 2, 3
_LEVEL_NAMES = {FINAL: "final", FORM: "labelled", PROSE: "labelled", BARE: "bare"}
# Words that may follow a bare rating; any other word makes the number a quantity ("6 people").
_AFTER_BARE = {"out", "of", "and", "or", "but", "because", "since", "as", "for", "overall", "is", "seems",
               "given", "points", "point", "stars", "star", "on", "in", "the", "to", "would", "i", "it"}


@dataclass(frozen=True)
class Parsed:
    """The outcome of parsing: a value, or the reason there is none (with the raw text kept).

    Attributes:
        value: What was read (None on failure).
        error: Why nothing was read (None on success).
        raw: The judge's answer as it came.
        flags: What is odd about a value that was read, e.g. ``("fractional",)``.
    """

    value: Any
    error: str | None
    raw: str
    flags: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class _Candidate:
    value: float
    denominator: float | None
    level: int
    form: str
    text: str
    start: int


def _value(token: str) -> float:
    low = token.lower()
    return float(NUMBER_WORDS[low]) if low in NUMBER_WORDS else float(token)


def _patterns(label: str | None) -> list[tuple[int, re.Pattern[str]]]:
    names = _LABELS + ("|" + re.escape(label).replace("\\ ", r"\s+") if label else "")
    flags = re.IGNORECASE
    return [
        (FINAL, re.compile(rf"\b((?:final|overall)\s+(?:{_LABELS}|answer|verdict)){_PAREN}\s*(?:[:=\-–]|\bis\b|\bof\b"
                           rf"|would\s+be)?\s*(?:an?\s+)?{_VAL}\b{_OUT_OF}", flags)),
        (FORM, re.compile(rf"(?<![\w-])({names}){_PAREN}\s*[:=\-–]\s*(?:an?\s+)?{_VAL}\b{_OUT_OF}", flags)),
        (PROSE, re.compile(rf"\b({_LABELS})\s+(?:of|is|would\s+be|=)\s*(?:an?\s+)?{_VAL}\b{_OUT_OF}", flags)),
        (PROSE, re.compile(rf"\b(give|gave|giving|rate|rated|rating|score|scored|scoring|assign|award)\b"
                           rf"(?:\s+(?!(?:an?|as|between|from)\b)[a-z']+){{0,3}}?\s+(?:(?:an?|as)\s+)?{_VAL}\b{_OUT_OF}",
                           flags)),
        (PROSE, re.compile(rf"(?<![\w.\-/:,])()(\d+(?:\.\d+)?)\s*(?:/|out\s+of)\s*(\d+(?:\.\d+)?)(?![\d/]|[.-]\d)",
                           flags)),
        (PROSE, re.compile(rf"\b()({'|'.join(NUMBER_WORDS)}|\d+(?:\.\d+)?)\s+stars?\b()", flags)),
    ]


def _bare(clean: str, taken: list[tuple[int, int]]) -> list[_Candidate]:
    """Standalone numbers that may be ratings: not list markers, years, ranges, game scores, times, quantities."""
    out = []
    for m in re.finditer(r"(?<![\w.\-–/:,$£€#%])(\d+(?:\.\d+)?)(?![\w%/:]|[.,]\d|\s*(?:-|–|to\b)\s*\d)", clean):
        if any(a <= m.start() < b for a, b in taken):
            continue
        line_start = clean.rfind("\n", 0, m.start()) + 1
        before, after = clean[line_start:m.start()], clean[m.end():]
        if not before.strip(" -•>(") and re.match(r"[.)]\s+\S", after):
            continue  # a list marker: "1. The evaluation is over."
        if len(m.group(1)) == 4 and "." not in m.group(1):
            continue  # a year
        if re.search(r"\d\s*(?:-|–|to)\s*$", before):
            continue  # the end of a range ("1 to 5")
        word = re.match(r"\s+([A-Za-z']+)", after)
        if word and word.group(1).lower() not in _AFTER_BARE:
            continue  # a quantity: "6 people", "12 sentences"
        out.append(_Candidate(float(m.group(1)), None, BARE, "bare", m.group(0), m.start()))
    return out


def rating_candidates(text: str, label: str | None = None) -> list[_Candidate]:
    """Every candidate rating in an answer, each with its level, in reading order."""
    clean = _MARKUP.sub(lambda m: " " * len(m.group(0)), text)
    found: list[_Candidate] = []
    taken: list[tuple[int, int]] = []
    for level, pattern in _patterns(label):
        for m in pattern.finditer(clean):
            if any(a <= m.start(2) < b for a, b in taken):
                continue
            denominator = float(m.group(3)) if m.group(3) else None
            form = " ".join(m.group(1).lower().split()) or "out of"
            found.append(_Candidate(_value(m.group(2)), denominator, level, form, " ".join(m.group(0).split()),
                                    m.start(2)))
            taken.append((m.start(), m.end()))
    found += _bare(clean, taken)
    return sorted(found, key=lambda c: c.start)


def _tier(c: _Candidate) -> int:
    """Form lines and ratings stated in prose are one tier: a judge that writes both means one rating."""
    return PROSE if c.level == FORM else c.level


def _choose(cands: list[_Candidate]) -> tuple[_Candidate | None, str | None]:
    """The rating the answer gives: the strongest tier present; there, one value, or a restated form line.

    Two different values in the strongest tier are ambiguous (a failure naming them), except form
    lines of one and the same label ("Coherence: 2" ... "Coherence: 4"): the judge restated its
    form, and the last one counts. A final/overall rating beats every other.
    """
    tier = min(_tier(c) for c in cands)
    top = [c for c in cands if _tier(c) == tier]
    if len({(c.value, c.denominator) for c in top}) == 1:
        return top[-1], None
    if all(c.level == FORM for c in top) and len({c.form for c in top}) == 1:
        return top[-1], None
    named = ", ".join(f"{_num(c.value)} ({c.text!r})" for c in top[:6])
    return None, f"ambiguous: {len(top)} different {_LEVEL_NAMES[tier]} ratings: {named}"


def parse_rating(text: str, scale: Scale, label: str | None = None, *, prompt: str | None = None,
                 strict: bool = False) -> Parsed:
    """Read one rating from a judge's own answer, as a person would, or say why there is none.

    Only the judge's own answer is read: lines that reproduce the prompt or the judged text are
    blanked first (:func:`assay.echo.own_answer`). Then the strongest kind of rating present
    wins: a final/overall rating (``Final score: 5``), then a form line (``Coherence: 4``,
    ``Score = 4``), then a rating stated in prose (``a score of 4``, ``4 out of 5``, ``4/5``,
    ``I would give it a 3``, ``Three stars``), then a bare number (``4``, ``**3**``). List
    markers, years, ranges, game scores (``3-2``), times and quantities (``6 people``) are no
    ratings. Two different ratings of the strongest kind are ambiguous and fail, naming them,
    except a restated form line of the same label, where the last counts. Values off the scale
    are rejected, not clipped. A fractional value inside an integer scale is read as given and
    flagged ``fractional`` (an error with ``strict``).

    Args:
        text: The judge's answer.
        scale: The scale the rating must lie on.
        label: The dimension or criterion name the form asks for.
        prompt: The prompt answered; lines echoing it are not read.
        strict: Refuse fractional ratings on an integer scale.
    """
    own = own_answer(text, prompt)
    cands = rating_candidates(own.text, label)
    if not cands:
        return Parsed(None, "no rating found" + (f": {own.describe()}" if own.echoed else ""), text)
    chosen, error = _choose(cands)
    if chosen is None:
        return Parsed(None, str(error), text)
    value = chosen.value
    if chosen.denominator is not None and chosen.denominator != scale.high:
        return Parsed(None, f"rating {chosen.text!r} is not on the {scale.label()} scale", text)
    if not scale.low <= value <= scale.high:
        return Parsed(None, f"rating {_num(value)} is outside the {scale.label()} scale", text)
    if scale.integer and not value.is_integer():
        if strict:
            return Parsed(None, f"rating {_num(value)} is not a whole number on the {scale.label()} scale "
                          "(strict ratings)", text)
        return Parsed(value, None, text, ("fractional",))
    return Parsed(value, None, text)


_LETTER = r"([A-Z])"


def parse_choice(text: str, options: Sequence[str], *, prompt: str | None = None) -> Parsed:
    """Read the option a judge chose in a multiple-choice answer (value: the option letter, e.g. ``"D"``).

    Accepted: a letter alone on a line (``D``, ``**D**``, ``(D)``, ``D.``), ``D) Good``, ``Answer: (C)``,
    ``The answer is C``, ``option C``. A stated answer ("Answer: C") wins over the other forms;
    two different letters of the strongest form are ambiguous and fail, naming them. The article
    "A" in prose is never read as a choice.
    """
    own = own_answer(text, prompt)
    clean = _MARKUP.sub(lambda m: " " * len(m.group(0)), own.text)
    allowed = {o.strip().upper() for o in options}
    stated = re.compile(rf"(?i:\b(?:final\s+)?(?:answer|choice|option|verdict|grade)\s*(?:is|would\s+be)?\s*"
                        rf"[:=\-]?\s*)\(?{_LETTER}\b(?![’'])")
    alone = re.compile(rf"^[\s\-•>]*\(?{_LETTER}(?:\)|[.:]|\s*$)|\(({'|'.join(map(re.escape, sorted(allowed)))})\)",
                       re.MULTILINE)
    for pattern in (stated, alone):
        found = [g.upper() for m in pattern.finditer(clean) for g in m.groups() if g]
        letters = list(dict.fromkeys(x for x in found if x in allowed))
        if len(letters) > 1:
            return Parsed(None, f"ambiguous: different options chosen: {', '.join(letters)}", text)
        if letters:
            return Parsed(letters[0], None, text)
    tail = f": {own.describe()}" if own.echoed else ""
    return Parsed(None, f"no choice among {', '.join(sorted(allowed))} found{tail}", text)


def extract_json(text: str, prompt: str | None = None) -> Parsed:
    """Find and decode the JSON object or array in a judge's own answer.

    Code fences and prose around the JSON are ignored; the first decodable object (or array)
    wins. Lines that reproduce the prompt or the judged text (an echoed answer-format example,
    a JSON object forged inside the judged text) are blanked first (:func:`assay.echo.own_answer`),
    so JSON lying in them is never taken.
    """
    own = own_answer(text, prompt)
    body = own.text
    fenced = re.search(r"```(?:json)?\s*(.*?)```", body, re.DOTALL | re.IGNORECASE)
    candidates = [fenced.group(1)] if fenced else []
    candidates.append(body)
    decoder = json.JSONDecoder()
    for cand in candidates:
        for start, ch in enumerate(cand):
            if ch in "{[":
                try:
                    obj, _end = decoder.raw_decode(cand[start:])
                except json.JSONDecodeError:
                    continue
                return Parsed(obj, None, text)
    return Parsed(None, "no JSON object found" + (f": {own.describe()}" if own.echoed else ""), text)


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"
