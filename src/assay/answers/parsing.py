"""Reading a judge's answer: ratings on a scale and JSON objects, with failures as data, never as zeros."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from assay.answers.echo import own_answer
from assay.types import Scale

#: The parse failure of an answer that stayed empty through the middleware's retries (a 200 with no content).
EMPTY_ANSWER = "the answer is empty (no content, after retries)"

_NUM = r"[-+]?\d+(?:\.\d+)?"
_MARKUP = re.compile(r"[*_`#]+")
NUMBER_WORDS = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                "eight": 8, "nine": 9, "ten": 10}
_VAL = r"(\d+(?:\.\d+)?|" + "|".join(NUMBER_WORDS) + r")"
_OUT_OF = r"(?:\s*(?:/|out\s+of)\s*(\d+(?:\.\d+)?)(?![\d/]))?"
# After a rating's value: not the first half of a game score or range ("6-0", "3 - 4"), nor a compound's
# ("two-goal cushion").
_NO_PAIR = r"(?![ \t]*[-–][ \t]*\d|-[A-Za-z])"
_LABELS = r"score|rating|grade|mark"
_PAREN = r"(?:\s*\([^)\n]*\))?"
#: Rating levels, strongest first: a final/overall rating, a form line ("Coherence: 4"), a rating
#: stated in prose ("a score of 4", "4 out of 5", "3 stars"), a bare number.
FINAL, FORM, PROSE, BARE = 0, 1, 2, 3
_LEVEL_NAMES = {FINAL: "final", FORM: "labelled", PROSE: "labelled", BARE: "bare"}
# Words that may follow a bare rating; any other word makes the number a quantity ("6 people").
_AFTER_BARE = {"out", "of", "and", "or", "but", "because", "since", "as", "for", "overall", "is", "seems",
               "given", "points", "point", "stars", "star", "on", "in", "the", "to", "would", "i", "it"}
# Words that may follow a rating given with a verb ("I would rate it 4 if ..."), besides ``_AFTER_BARE``.
_AFTER_RATING = {"if", "when", "while", "so", "with", "at", "here", "this", "that", "which", "although", "though",
                 "considering", "based", "due", "from", "by", "now", "then", "too", "also", "only", "there", "a",
                 "an", "meaning", "indicating", "reflecting", "showing", "score", "rating", "grade", "mark", "rather",
                 "instead", "what", "where", "since", "according", "even", "just", "still", "yet", "not", "all",
                 "across", "regarding", "mainly", "primarily", "largely", "my", "its", "their",
                 "be", "am", "are", "was", "were", "has", "have", "had", "will", "can", "could", "should", "possible"}
# A rating is hypothetical, not the judge's, when its clause leads up to it with a counterfactual
# ("from being a perfect 5", "to make it a 5", "would make the summary a 5", "could reach a 5",
# "to elevate it to a 5") or a negation ("not a 5", "doesn't deserve a 5", "short of a perfect 5").
# The words between: a few, none that starts the judge's own statement ("... and gets a 3", "I give").
_HYPO_GAP = (r"(?:\s+(?!(?:i|is|was|give|gives|gave|rate|rates|rated|assigns?|awards?|gets|earns|receives|deserves"
             r"|merits|scores)\b)[\w'’-]+){0,6}?")
_COUNTERFACTUAL = (r"\b(?:from\s+(?:being|reaching|achieving|getting|earning|receiving|scoring|attaining)"
                   r"|to\s+(?:make|elevate|raise|bring|reach|achieve|push|lift|attain|improve)"
                   r"|(?:would|could|might)\s+(?:make|elevate|raise|bring|push|lift|reach|achieve)"
                   r"|(?:would|could|might)\s+have\s+(?:been|made|earned|gotten|got|received|scored|reached|achieved)"
                   r"|(?:needed|required|necessary)\s+(?:for|to\s+(?:get|reach|earn|achieve)))" + _HYPO_GAP)
_TOP = r"(?:perfect|full|top|maximum|highest)"
_NEGATION = (r"(?:\bnot|n['’]t|\bnever|\brather\s+than|\binstead\s+of|\bshort\s+of)"
             r"(?:\s+(?:quite|yet|even|really|be|worthy\s+of|giv|gave|rat|scor|award|assign|deserv|warrant"
             r"|merit|earn|get|got|reach|achiev|receiv)\w*)*(?:\s+(?:it|this|that|the\s+summary|an?|the))*"
             rf"(?:\s+{_TOP})?(?:\s+(?:score|rating|grade|mark)\s+(?:of|is))?")
# Aiming at the top of the scale is hypothetical: "to earn a perfect score of 5", "could be a perfect 5".
# ("I would score it a perfect 5" is a rating: the judge gives it.)
_ASPIRATION = (r"(?:\bto\s+(?:be|earn|get|receive|reach|achieve|deserve|warrant)"
               r"|\b(?:would|could|might)\s+(?:have\s+been|be)|['’]d\s+be)\s+(?:\w+\s+){0,2}?(?:an?|the)\s+"
               rf"{_TOP}(?:\s+(?:score|rating|grade|mark)\s+(?:of|is))?")
_HYPOTHETICAL = re.compile(rf"(?:{_COUNTERFACTUAL}|{_NEGATION}|{_ASPIRATION})\s+$", re.IGNORECASE)
# A conditional ("it would be a 5 if it were shorter", "could get a 5 with more detail") is
# hypothetical too; "my score would be 4" is not (the score is the subject).
_MODAL = re.compile(r"(?<!score\s)(?<!rating\s)(?:\b(?:would|could|might)|['’]d)\s+"
                    r"(?:be|get|earn|deserve|receive|merit)" + _HYPO_GAP + r"\s+$", re.IGNORECASE)
_CONDITION = re.compile(r"[^.;:!?\n]{0,60}?\b(?:if|once|unless|with\s+(?:more|less|fewer|better|some|a\s+few))\b",
                        re.IGNORECASE)
# A standalone number; not a word's part, a decimal's, a compound's ("15-year-old") or a pair's ("6-0", "1 to 5").
_BARE = re.compile(r"(?<![\w.\-–/:,$£€#%])(\d+(?:\.\d+)?)(?![\w%/:]|[.,]\d|-[A-Za-z]|\s*(?:-|–|to\b)\s*\d)")
# A list item's line: "* ...", "- ...", "• ...", "1. ...", "2) ...": ratings there are a breakdown's.
_ITEM = re.compile(r"[ \t>]*(?:[*\-•+]|\d{1,2}[.)]|[a-z][.)])[ \t]+")


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
    end: int
    item: bool = False
    hypothetical: bool = False


def _value(token: str) -> float:
    low = token.lower()
    return float(NUMBER_WORDS[low]) if low in NUMBER_WORDS else float(token)


@lru_cache(maxsize=256)
def _patterns(label: str | None) -> tuple[tuple[int, bool, re.Pattern[str]], ...]:
    """(level, counts_things, pattern): where ``counts_things``, a noun after the value makes it a quantity.
    Built once per label (every answer of a dimension is read with the same patterns)."""
    names = _LABELS + ("|" + re.escape(label).replace("\\ ", r"\s+") if label else "")
    dimension = r"(?:" + re.escape(label).replace("\\ ", r"\s+") + r"\s+)?" if label else ""
    flags = re.IGNORECASE
    words = "|".join(NUMBER_WORDS)
    return (
        (FINAL, False, re.compile(rf"\b((?:final|overall)\s+{dimension}(?:{_LABELS}|answer|verdict)){_PAREN}\s*"
                                  rf"(?:[:=\-–]|\bis\b|\bof\b|would\s+be)?\s*(?:an?\s+)?{_VAL}\b{_NO_PAIR}{_OUT_OF}",
                                  flags)),
        (FORM, False, re.compile(rf"(?<![\w-])({names}){_PAREN}\s*[:=\-–]\s*(?:an?\s+)?{_VAL}\b{_NO_PAIR}{_OUT_OF}",
                                 flags)),
        (PROSE, False, re.compile(rf"\b({_LABELS})\s+(?:of|is|would\s+be|=)\s*(?:an?\s+)?{_VAL}\b{_NO_PAIR}"
                                  rf"{_OUT_OF}", flags)),
        (PROSE, True, re.compile(rf"\b(give|gives|gave|giving|rate|rates|rated|rating|score|scores|scored|scoring"
                                 rf"|assigns?|assigned|assigning|awards?|awarded|awarding)\b"
                                 rf"(?:\s+(?!(?:an?|as|between|from|by)\b)[a-z']+){{0,3}}?\s+(?:(?:an?|as)\s+)?"
                                 rf"{_VAL}\b{_NO_PAIR}{_OUT_OF}",
                                 flags)),
        (PROSE, True, re.compile(r"(?<![\w.\-/:,])()(\d+(?:\.\d+)?)\s*(?:/|out\s+of)\s*(\d+(?:\.\d+)?)"
                                  r"(?![\d/]|[.-]\d)", flags)),
        (PROSE, True, re.compile(rf"\b()({words})\s+out\s+of\s+({words}|\d+)\b", flags)),
        (PROSE, False, re.compile(rf"\b()({words}|\d+(?:\.\d+)?)\s+stars?\b()", flags)),
    )


def _counts_things(after: str) -> bool:
    """Whether a noun follows a number on its line ("scored four goals", "three out of five sentences").

    A word of ``_AFTER_RATING`` goes on with the clause ("a 4 if pressed", "a 4 for fluency") and
    does not make the number a count; a name does ("scored four Premier League goals").
    """
    word = re.match(r"[ \t]+([A-Za-z']+)\b", after)
    return bool(word) and word.group(1).lower() not in _AFTER_BARE | _AFTER_RATING


def _list_marker(clean: str, start: int) -> bool:
    """Whether the number at ``start`` opens its line as a list marker ("1. Grammar ...")."""
    line_start = clean.rfind("\n", 0, start) + 1
    return not clean[line_start:start].strip(" -•>(") and bool(re.match(r"\d+[.)]\s+\S", clean[start:]))


def _on_item(text: str, start: int) -> bool:
    """Whether the position ``start`` lies on a list item's line (``*``, ``-``, ``•``, ``1.`` ...)."""
    return bool(_ITEM.match(text, text.rfind("\n", 0, start) + 1))


def _is_hypothetical(clean: str, start: int, end: int) -> bool:
    """Whether a rating's clause makes it hypothetical ("from being a perfect 5", "not a 5", "would be a 5 if")."""
    before = clean[max(0, start - 120):start]
    return bool(_HYPOTHETICAL.search(before) or (_MODAL.search(before) and _CONDITION.match(clean, end)))


def _bare(clean: str, taken: list[tuple[int, int]]) -> list[_Candidate]:
    """Standalone numbers that may be ratings: not list markers, years, ranges, game scores, times, quantities."""
    out = []
    for m in _BARE.finditer(clean):
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
        out.append(_Candidate(float(m.group(1)), None, BARE, "bare", m.group(0), m.start(), m.end()))
    return out


def rating_candidates(text: str, label: str | None = None) -> list[_Candidate]:
    """Every candidate rating in an answer, each with its level, in reading order.

    Each candidate also says whether it stands on a list item (a breakdown's sub-score) and
    whether its clause makes it hypothetical ("keeps it from being a perfect 5 out of 5").
    """
    alone = text.strip()
    if alone.isdigit() and alone.isascii() and len(alone) != 4:
        # The commonest answer, a number alone ("4"), read without the searches below: a bare rating on no list
        # item and in no clause, what they find in it (a four-digit number is a year to them, and no rating).
        start = text.index(alone)
        return [_Candidate(float(alone), None, BARE, "bare", alone, start, start + len(alone))]
    return _candidates(text, label)


def _candidates(text: str, label: str | None) -> list[_Candidate]:
    """:func:`rating_candidates` by its searches, whatever the answer."""
    clean = _MARKUP.sub(lambda m: " " * len(m.group(0)), text)
    found: list[_Candidate] = []
    taken: list[tuple[int, int]] = []
    for level, counts_things, pattern in _patterns(label):
        for m in pattern.finditer(clean):
            if any(a <= m.start(2) < b for a, b in taken) or _list_marker(clean, m.start(2)):
                continue
            if counts_things and _counts_things(clean[m.end():]):
                continue  # a count: "scored four goals", "217/228 Yazidis"
            denominator = _value(m.group(3)) if m.group(3) else None
            form = " ".join(m.group(1).lower().split()) or "out of"
            found.append(_Candidate(_value(m.group(2)), denominator, level, form, " ".join(m.group(0).split()),
                                    m.start(2), m.end()))
            taken.append((m.start(), m.end()))
    found += _bare(clean, taken)
    return sorted((replace(c, item=_on_item(text, c.start),
                           hypothetical=c.level >= PROSE and _is_hypothetical(clean, c.start, c.end)) for c in found),
                  key=lambda c: c.start)


def _tier(c: _Candidate) -> int:
    """Form lines and ratings stated in prose are one tier: a judge that writes both means one rating."""
    return PROSE if c.level == FORM else c.level


def _choose(cands: list[_Candidate], scale: Scale) -> tuple[_Candidate | None, str | None]:
    """The rating the answer gives: the strongest tier present; there, one value, or a restated form line.

    Two different values in the strongest tier are ambiguous (a failure naming them), except form
    lines of one and the same label ("Coherence: 2" ... "Coherence: 4"): the judge restated its
    form, and the last one counts; and except a breakdown: ratings on list items are sub-scores
    when the same tier has a rating stated outside any list, which counts. A final/overall rating
    beats every other. ``4``, ``4/5`` and ``4 out of 5`` are one rating on a 1-5 scale.
    """
    def rating(c: _Candidate) -> tuple[float, float | None]:
        return c.value, None if c.denominator == scale.high else c.denominator

    tier = min(_tier(c) for c in cands)
    top = [c for c in cands if _tier(c) == tier]
    stated = [c for c in top if not c.item]
    if stated and len(stated) < len(top) and len({rating(c) for c in top}) > 1:
        top = stated  # "a score of 3 out of 5 ... breakdown: * Grammar: 2/5 * Vocabulary: 3/5"
    if len({rating(c) for c in top}) == 1:
        return top[-1], None
    if all(c.level == FORM for c in top) and len({c.form for c in top}) == 1:
        return top[-1], None
    named = ", ".join(f"{_num(c.value)} ({c.text!r})" for c in top[:6])
    return None, f"ambiguous: {len(top)} different {_LEVEL_NAMES[tier]} ratings: {named}"


def _restatements(cands: list[_Candidate], scale: Scale) -> list[_Candidate]:
    """Ratings on another scale that restate an on-scale one exactly (``4/5`` ... ``8/10``): set aside."""
    on_scale = {c.value for c in cands if c.denominator in (None, scale.high)}
    return [c for c in cands if c.denominator not in (None, scale.high) and c.denominator
            and c.value / c.denominator * scale.high in on_scale]


def parse_rating(text: str, scale: Scale, label: str | None = None, *, prompt: str | None = None,
                 strict: bool = False) -> Parsed:
    """Read one rating from a judge's own answer, as a person would, or say why there is none.

    Only the judge's own answer is read: lines that reproduce the prompt or the judged text are
    blanked first (:func:`assay.answers.echo.own_answer`). Then the strongest kind of rating present
    wins: a final/overall rating (``Final score: 5``, ``Overall coherence score: 4/5``), then a
    form line (``Coherence: 4``, ``Score = 4``), then a rating stated in prose (``a score of 4``,
    ``4 out of 5``, ``a four out of five``, ``4/5``, ``I would give it a 3``, ``Three stars``),
    then a bare number (``4``, ``**3**``). List markers, years, ranges, game scores (``3-2``,
    ``the score is 6-0``), times, compounds (``15-year-old``) and counts (``6 people``,
    ``scored four goals``, ``217/228 Yazidis``) are no ratings. Hypothetical ratings are not the
    judge's: ``keeps it from being a perfect 5 out of 5``, ``not a 5``, ``to make it a 5``,
    ``would be a 5 if ...``. Two different ratings of the strongest kind are ambiguous and fail,
    naming them, except a restated form line of the same label, where the last counts, and a
    breakdown: ratings on list items are sub-scores when a rating of the same kind stands
    outside the list. A rating on another scale that restates the on-scale one exactly
    (``4/5`` ... ``Final score: 8/10``) is set aside. Values off the scale are rejected, not
    clipped. A fractional value inside an integer scale is read as given and flagged
    ``fractional`` (an error with ``strict``).

    Args:
        text: The judge's answer.
        scale: The scale the rating must lie on.
        label: The dimension or criterion name the form asks for.
        prompt: The prompt answered; lines echoing it are not read.
        strict: Refuse fractional ratings on an integer scale.
    """
    if not text.strip():
        return Parsed(None, EMPTY_ANSWER, text)
    own = own_answer(text, prompt)
    if own.forged:
        return Parsed(None, own.forged, text)
    cands = rating_candidates(own.text, label)
    if not cands:
        return Parsed(None, "no rating found" + (f": {own.describe()}" if own.echoed else ""), text)
    real = [c for c in cands if not c.hypothetical]
    if not real:
        named = ", ".join(repr(c.text) for c in cands[:6])
        return Parsed(None, f"no rating found: only hypothetical ratings ({named})", text)
    restated = _restatements(real, scale)
    chosen, error = _choose([c for c in real if c not in restated], scale)
    if chosen is None:
        return Parsed(None, str(error), text)
    value = chosen.value
    if chosen.denominator is not None and chosen.denominator != scale.high:
        return Parsed(None, f"rating {chosen.text!r} is not on the {scale.label()} scale", text)
    return on_scale(value, scale, text, strict=strict)


_LETTER = r"([A-Z])"


def parse_choice(text: str, options: Sequence[str], *, prompt: str | None = None) -> Parsed:
    """Read the option a judge chose in a multiple-choice answer (value: the option letter, e.g. ``"D"``).

    Accepted: a letter alone on a line (``D``, ``**D**``, ``(D)``, ``D.``), ``D) Good``, ``Answer: (C)``,
    ``The answer is C``, ``option C``. A stated answer ("Answer: C") wins over the other forms;
    two different letters of the strongest form are ambiguous and fail, naming them. The article
    "A" in prose is never read as a choice.
    """
    if not text.strip():
        return Parsed(None, EMPTY_ANSWER, text)
    own = own_answer(text, prompt)
    if own.forged:
        return Parsed(None, own.forged, text)
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
    a JSON object forged inside the judged text) are blanked first (:func:`assay.answers.echo.own_answer`),
    so JSON lying in them is never taken.
    """
    if not text.strip():
        return Parsed(None, EMPTY_ANSWER, text)
    own = own_answer(text, prompt)
    if own.forged:
        return Parsed(None, own.forged, text)
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


def parse_json_rating(text: str, scale: Scale, key: str = "score", *, prompt: str | None = None,
                      strict: bool = False) -> Parsed:
    """Read the rating of a JSON answer (``{"reasoning": "...", "score": 4}``), or say why there is none.

    The answer the judge wrote under a schema is read like any other: only its own answer
    (:func:`extract_json`, echoes blanked), then the ``key`` field, which must be a number (or a string
    holding one) on ``scale``. A schema-valid answer whose score is off the scale is still a parse failure;
    nothing is clipped or guessed. A fractional value on an integer scale is flagged as
    :func:`parse_rating` flags it (an error with ``strict``).
    """
    found = extract_json(text, prompt)
    if not found.ok:
        return Parsed(None, found.error, text)
    obj = found.value
    if not isinstance(obj, dict):
        return Parsed(None, f"the JSON answer is a {type(obj).__name__}, not an object with {key!r}", text)
    if key not in obj:
        return Parsed(None, f"the JSON answer has no {key!r} field (fields: {', '.join(map(str, obj)) or 'none'})",
                      text)
    raw = obj[key]
    try:
        value = float(raw.strip()) if isinstance(raw, str) else float(raw)
    except (TypeError, ValueError, AttributeError):
        value = None
    if isinstance(raw, bool) or value is None or value != value:
        return Parsed(None, f"the JSON answer's {key!r} is not a number: {raw!r}", text)
    return on_scale(value, scale, text, strict=strict)


def on_scale(value: float, scale: Scale, text: str, *, strict: bool = False) -> Parsed:
    """A rating read from ``text`` checked against its scale: off the scale is a failure naming it; a fractional
    rating on an integer scale is read and flagged ``fractional`` (a failure with ``strict``)."""
    if not scale.low <= value <= scale.high:
        return Parsed(None, f"rating {_num(value)} is outside the {scale.label()} scale", text)
    if scale.integer and not value.is_integer():
        if strict:
            return Parsed(None, f"rating {_num(value)} is not a whole number on the {scale.label()} scale "
                          "(strict ratings)", text)
        return Parsed(value, None, text, ("fractional",))
    return Parsed(value, None, text)


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


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
