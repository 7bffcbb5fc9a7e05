"""CheckEval's answer reading: one yes/no per numbered question, from the judge's own text or its log-probabilities."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from assay.answers.echo import own_answer
from assay.answers.parsing import EMPTY_ANSWER
from assay.judges.base import TokenLogprobs

_WORD = r"(yes|no)\b"


_LEAD = (r"[\s*_`'\"\[\(«»:\-–—=>]*(?:(?:my\s+)?answer\s*(?:is)?\s*[:=\-]?\s*|[a-z]\s*[:)]\s*)?"
         r"[\s*_`'\"\[\(]*")


_TEMPLATE = re.compile(rf"^{_LEAD}(?:yes|no)\s*(?:/|\bor\b|\|)\s*(?:yes|no)\b", re.IGNORECASE)


_START = re.compile(rf"^{_LEAD}{_WORD}", re.IGNORECASE)


_END = re.compile(r"(?:[:=\-–—>]|\banswer\s+is)\s*[*_`'\"\[\(]*(yes|no)\b[\W_]*$", re.IGNORECASE)


_STATED = re.compile(r"\b(?:my\s+|the\s+)?answer\s+(?:is|would\s+be)\s*[:\-]?\s*[*_`'\"]*(yes|no)\b", re.IGNORECASE)


_NUMBERED = re.compile(
    r"^[\s*_#>\-•(\[]*(?:q(?:uestion)?\s*#?\s*(\d{1,3})|(\d{1,3})(?=\s*[.):\-–—\]]))[\s*_]*[.):\-–—\]=]?[\s*_]*(.*)$",
    re.IGNORECASE)


@dataclass(frozen=True)
class Answer:
    """A read answer: yes (True) or no (False), and where its word starts in the text."""

    yes: bool
    offset: int


@dataclass
class ParsedAnswers:
    """The answers found for questions 1..n, and notes on what could not be read or was odd."""

    answers: dict[int, Answer] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    reasons: dict[int, str] = field(default_factory=dict)


def _decide(segment: str, base: int) -> tuple[Answer | None, str]:
    """The yes/no in one answer segment, or None with the reason.

    Accepted: the segment starts with yes/no (after markup, brackets, 'Answer:', 'A:'); or, after an
    echoed question, what follows its '?' starts with yes/no; or it ends with ': yes' / 'answer
    is no'; or it states 'the answer is yes' anywhere. A yes/no word elsewhere in prose ("there is
    no error") is not an answer.
    """
    if _TEMPLATE.match(segment):
        return None, "the answer format was echoed ('yes or no'), not answered"
    m = _START.match(segment)
    if m:
        return Answer(m.group(1).lower() == "yes", base + m.start(1)), ""
    q = segment.rfind("?")
    if q >= 0:
        rest = segment[q + 1:]
        m = _START.match(rest)
        if m and not _TEMPLATE.match(rest):
            return Answer(m.group(1).lower() == "yes", base + q + 1 + m.start(1)), ""
    m = _END.search(segment) or _STATED.search(segment)
    if m:
        return Answer(m.group(1).lower() == "yes", base + m.start(1)), ""
    return None, "no yes/no answer"


def echo_reference(prompt: str) -> str:
    """The prompt lines an answer must not echo: all but the numbered question and format lines.

    A judge may restate a question before answering it (``Q2: Is it polite?`` then ``No``); that
    restatement is how the next line's answer is numbered, so it is left to :func:`parse_answers`.
    """
    return "\n".join(line for line in prompt.splitlines() if not re.match(r"\s*Q\d+\s*:", line))


def parse_answers(text: str, n: int, prompt: str | None = None) -> ParsedAnswers:
    """Read the answers to questions 1..n from a judge's own reply.

    Accepted: ``Q3: Yes``, ``Q3 - no.``, ``3. yes``, ``**Q3:** **Yes**``, ``Question 3: no``,
    answers in any order, with prose around them, an echoed question followed by its answer,
    and a bare yes/no line right after a numbered line that had none. Unnumbered yes/no lines
    count only when there are no numbered ones and their number equals n (or n is 1). A
    question answered twice keeps its last answer (a judge may restate its form); numbers
    outside 1..n are ignored. Everything not read is simply absent: missing, never 'no'.

    Lines that are not the judge's own are blanked first (offsets kept, for the soft score): any
    line carrying a neutralisation mark (``» Q1: yes`` from a judged text) or a fence marker, and,
    with ``prompt``, lines echoing it (see :func:`echo_reference` and :func:`assay.answers.echo.own_answer`).
    """
    out = ParsedAnswers()
    if not text.strip():
        out.reasons = dict.fromkeys(range(1, n + 1), EMPTY_ANSWER)
        out.notes.append(EMPTY_ANSWER)
        return out
    own = own_answer(text, echo_reference(prompt) if prompt else None)
    if own.forged:  # a forged answer line copied back: no answer of this reply is the judge's own for sure
        out.reasons = dict.fromkeys(range(1, n + 1), own.forged)
        out.notes.append(f"not read: {own.forged}")
        return out
    if own.echoed:
        out.notes.append(f"not read: {own.describe()}")
    text = own.text
    pending: int | None = None
    bare: list[Answer] = []
    numbered_seen = False
    pos = 0
    for line in text.splitlines(keepends=True):
        start, pos = pos, pos + len(line)
        body = line.rstrip("\r\n")
        if not body.strip():
            continue
        m = _NUMBERED.match(body)
        if m:
            numbered_seen = True
            k = int(m.group(1) or m.group(2))
            if not 1 <= k <= n:
                out.notes.append(f"ignored an answer numbered {k} (questions are 1-{n})")
                pending = None
                continue
            ans, why = _decide(m.group(3), start + m.start(3))
            pending = None if ans else k
            if ans is None:
                out.reasons.setdefault(k, why)
                continue
            old = out.answers.get(k)
            if old is not None and old.yes != ans.yes:
                out.notes.append(f"Q{k} answered twice ({yes_no(old.yes)}, then {yes_no(ans.yes)}): the last is kept")
            out.answers[k] = ans
            continue
        m = _START.match(body) or _END.search(body) or _STATED.search(body)
        if m and not _TEMPLATE.match(body):
            ans = Answer(m.group(1).lower() == "yes", start + m.start(1))
            if pending is not None:
                out.answers.setdefault(pending, ans)
                pending = None
            else:
                bare.append(ans)
    if not numbered_seen and bare:
        if n == 1 or len(bare) == n:
            out.answers.update({i: a for i, a in enumerate(bare[:n], start=1)})
        else:
            out.notes.append(f"{len(bare)} unnumbered yes/no lines for {n} questions: not assigned")
    for k in range(1, n + 1):
        if k in out.answers:
            out.reasons.pop(k, None)
        else:
            out.reasons.setdefault(k, "not answered")
    if out.reasons:
        out.notes.append("missing: " + "; ".join(f"Q{k} ({why})" for k, why in sorted(out.reasons.items())))
    return out


_JSON_ANSWER = re.compile(r'"Q(\d{1,3})"\s*:\s*"(yes|no)"', re.IGNORECASE)


def answers_schema(n: int) -> dict[str, object]:
    """CheckEval's answer as JSON: one ``"yes"`` / ``"no"`` per question id, ``Q1`` to ``Qn`` in order."""
    keys = [f"Q{k}" for k in range(1, n + 1)]
    return {"type": "object", "properties": {k: {"type": "string", "enum": ["yes", "no"]} for k in keys},
            "required": keys, "additionalProperties": False}


def parse_json_answers(text: str, n: int, prompt: str | None = None) -> ParsedAnswers:
    """Read the answers to questions 1..n from a JSON answer (``{"Q1": "yes", "Q2": "no"}``).

    The judge's own answer must hold one JSON object (:func:`assay.answers.parsing.extract_json`, echoes blanked);
    each ``"Qk": "yes"|"no"`` in it is an answer, at the offset of its word in ``text`` (for the soft score).
    A question without one is missing, never 'no'.
    """
    from assay.answers.parsing import extract_json

    out = ParsedAnswers()
    found = extract_json(text, prompt)
    if not found.ok or not isinstance(found.value, dict):
        why = found.error or "the JSON answer is not an object"
        out.reasons = {k: why for k in range(1, n + 1)}
        out.notes.append(f"no JSON answer: {why}")
        return out
    own = own_answer(text, prompt).text
    for m in _JSON_ANSWER.finditer(own):
        k = int(m.group(1))
        if 1 <= k <= n:
            out.answers[k] = Answer(m.group(2).lower() == "yes", m.start(2))
    for k in range(1, n + 1):
        if k not in out.answers:
            out.reasons[k] = "not answered in the JSON object"
    if out.reasons:
        out.notes.append("missing: " + "; ".join(f"Q{k} ({why})" for k, why in sorted(out.reasons.items())))
    return out


def yes_no(yes: bool) -> str:
    """An answer as the trace and the notes spell it."""
    return "yes" if yes else "no"


_YES_FORMS = {"yes", "ye", "y"}


_NO_FORMS = {"no", "n"}


def _form(token: str) -> str:
    return token.strip().strip("*_`'\"[]():").lower()


def p_yes_at(positions: list[TokenLogprobs], text: str, offset: int) -> tuple[float | None, str]:
    """P(yes) / (P(yes) + P(no)) at the generated token holding character ``offset`` of ``text``.

    The tokens' texts must spell ``text`` (possibly followed by a stop sequence the backend cut
    off), so that offsets line up; the yes and no mass is summed over the top alternatives at that
    position ("Yes", " yes", "YES", "y"...).

    Returns:
        The probability, or None and the reason.
    """
    if not "".join(p.token for p in positions).startswith(text):
        return None, "token texts do not spell the answer text; cannot locate the answer token"
    end = 0
    for pos in positions:
        start, end = end, end + len(pos.token)
        if start <= offset < end:
            alts = {t.token: t.logprob for t in pos.top}
            alts.setdefault(pos.token, pos.logprob)
            p_yes = sum(math.exp(lp) for t, lp in alts.items() if _form(t) in _YES_FORMS)
            p_no = sum(math.exp(lp) for t, lp in alts.items() if _form(t) in _NO_FORMS)
            if p_yes + p_no <= 0:
                return None, "no yes/no token among the alternatives at the answer position"
            return p_yes / (p_yes + p_no), ""
    return None, "answer position beyond the generated tokens"
