"""Reading a pairwise verdict from a judge's own answer: ``[[A]]``, ``[[B]]``, ``[[C]]`` or the same in words."""

from __future__ import annotations

import re
from typing import Any

from assay.answers.echo import own_answer
from assay.answers.parsing import Parsed, extract_json, parse_choice

#: The verdicts, as the prompt's letters: the first position, the second, a tie.
#: Room for the reasoning of a JSON verdict (a few sentences).
REASONING_CHARS = 600
VERDICTS = ("A", "B", "C")
_MARKUP = re.compile(r"[*_`#]+")
_BRACKET = re.compile(r"\[\[\s*([ABC]|tie)\s*\]\]", re.IGNORECASE)
_WHO = r"(?:response|assistant|answer|output|summary|option|candidate|text|reply)"
_BETTER = r"(?:better|superior|preferred|preferable|stronger|the\s+better\s+one|the\s+winner|wins)"
_LETTER = r"(?-i:([AB]))"  # a capital letter only: "prefer a shorter summary" names no output
# "Response A is better", "Assistant B's answer is better", "Assistant B wins", "I prefer Response A",
# "the better response is B", and a line holding only "Response A"
_WORDS = [re.compile(rf"\b{_WHO}\s+{_LETTER}\b(?:['’]s\s+{_WHO})?\s+(?:is|was|seems|appears)?\s*"
                     rf"(?:clearly\s+|slightly\s+|much\s+)?{_BETTER}", re.IGNORECASE),
          re.compile(rf"\bprefer\s+(?:{_WHO}\s+)?{_LETTER}\b", re.IGNORECASE),
          re.compile(rf"\b(?:better|preferred|winning)\s+{_WHO}\s+is\s+(?:{_WHO}\s+)?{_LETTER}\b", re.IGNORECASE),
          re.compile(rf"^[ \t>*-]*(?:the\s+)?(?:better\s+)?{_WHO}\s+{_LETTER}[ \t.!]*$", re.IGNORECASE | re.MULTILINE)]
_TIE = re.compile(r"\b(?:it(?:'s|\s+is)\s+a\s+tie|(?:a|the)\s+verdict\s+is\s+(?:a\s+)?tie|both\s+are\s+equally"
                  r"|equally\s+good|tie\b)", re.IGNORECASE)


def _one(found: list[str], form: str, raw: str) -> Parsed | None:
    letters = list(dict.fromkeys("C" if x.lower() == "tie" else x.upper() for x in found))
    if len(letters) > 1:
        return Parsed(None, f"ambiguous: different verdicts {form}: {', '.join(letters)}", raw)
    return Parsed(letters[0], None, raw) if letters else None


def parse_verdict(text: str, *, prompt: str | None = None) -> Parsed:
    """The verdict a judge gave (value: ``"A"`` first position, ``"B"`` second, ``"C"`` tie).

    Read only from the judge's own answer (lines echoing the prompt or the judged text are blanked first,
    :func:`assay.answers.echo.own_answer`), strongest form first: the bracketed verdict (``[[A]]``, ``[[C]]``,
    ``[[tie]]``), then a stated choice (``Verdict: B``, ``B`` alone on a line:
    :func:`assay.answers.parsing.parse_choice`),
    then words (``Response A is better``, ``Assistant B wins``, ``I prefer A``, ``it is a tie``). Two different
    verdicts of the strongest form present are ambiguous and fail, naming them; nothing found fails. Never a
    guess.
    """
    own = own_answer(text, prompt)
    clean = _MARKUP.sub(lambda m: " " * len(m.group(0)), own.text)
    found = _one(_BRACKET.findall(clean), "in brackets", text)
    if found is not None:
        return found
    stated = parse_choice(own.text, VERDICTS)
    if stated.ok or (stated.error and stated.error.startswith("ambiguous")):
        return Parsed(stated.value, stated.error, text)
    words = [m.group(1) for pattern in _WORDS for m in pattern.finditer(clean)]
    if _TIE.search(clean):
        words.append("C")
    found = _one(words, "in words", text)
    if found is not None:
        return found
    tail = f": {own.describe()}" if own.echoed else ""
    return Parsed(None, f"no verdict ([[A]], [[B]] or [[C]]) found{tail}", text)


def parse_json_verdict(text: str, *, prompt: str | None = None) -> Parsed:
    """The verdict of a JSON answer (``{"reasoning": "...", "verdict": "A"}``), read like any other: only the
    judge's own answer (echoes blanked), then ``verdict``, which must be ``A``, ``B`` or ``C``; anything else is a
    parse failure naming it, never a guess."""
    found = extract_json(text, prompt)
    if not found.ok:
        return Parsed(None, found.error, text)
    obj = found.value
    verdict = obj.get("verdict") if isinstance(obj, dict) else None
    if not isinstance(verdict, str) or verdict.strip().upper() not in VERDICTS:
        return Parsed(None, f"the JSON answer's 'verdict' is not A, B or C: {verdict!r}", text)
    return Parsed(verdict.strip().upper(), None, text)


def verdict_schema() -> dict[str, Any]:
    """The verdict as JSON: ``{"reasoning": str, "verdict": "A" | "B" | "C"}``, the reasoning first so that the
    judge compares before it commits."""
    return {"type": "object",
            "properties": {"reasoning": {"type": "string", "maxLength": REASONING_CHARS},
                           "verdict": {"type": "string", "enum": sorted(VERDICTS)}},
            "required": ["reasoning", "verdict"], "additionalProperties": False}


def winner(verdict: str | None, first: str) -> str | None:
    """The output a verdict chose, as the pair's ``"A"``/``"B"`` (``"C"`` a tie), given which output was shown
    first (``first`` = ``"A"`` for the (A, B) order, ``"B"`` for (B, A))."""
    if verdict not in VERDICTS:
        return None
    if verdict == "C":
        return "C"
    second = "B" if first == "A" else "A"
    return first if verdict == "A" else second


def decide(trace: dict[str, Any], winners: dict[str, str | None],
           inconsistent: str) -> tuple[float | None, str | None]:
    """A pair's score (the preference for A) and error from the output chosen in each order (``ab``, ``ba``:
    ``"A"``, ``"B"``, ``"C"`` or None when unread); sets ``consistent`` and ``outcome`` in ``trace``. Shared by
    the live method and the import of pairwise verdicts (pure)."""
    unread = [k for k in ("ab", "ba") if winners.get(k) is None]
    if unread:
        trace["outcome"] = None
        errors = "; ".join(f"({k[0].upper()}, {k[1].upper()}) order: "
                           f"{(trace.get('orders', {}).get(k) or {}).get('error') or 'no verdict'}" for k in unread)
        return None, f"unreadable verdict: {errors}"
    consistent = winners["ab"] == winners["ba"]
    trace["consistent"] = consistent
    trace["outcome"] = winners["ab"] if consistent else "inconsistent"
    if consistent:
        return {"A": 1.0, "B": 0.0, "C": 0.5}[str(winners["ab"])], None
    if inconsistent == "drop":
        return None, (f"inconsistent: the verdict flips with the order ({winners['ab']} shown (A, B), "
                      f"{winners['ba']} shown (B, A)); dropped (inconsistent=drop)")
    return 0.5, None
