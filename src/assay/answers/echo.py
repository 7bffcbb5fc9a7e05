"""The judge's own answer region: blank out every line of an answer that reproduces the prompt or the judged text."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

# Marks that assay.answers.fence puts into judged text: the look-alike guillemets that replace fence
# markers and the "» " that defuses answer look-alikes. No judge answer of its own carries them.
NEUTRAL_MARK = "» "
#: The mark's first character alone: most prompts lack it, and testing for one character is some forty times
#: cheaper than for the two (CPython searches a long text for a single character with memchr-like loops).
_MARK_CHAR = NEUTRAL_MARK[0]
_FENCE_OPEN, _FENCE_CLOSE = "<<<", ">>>"
_FENCE_LOOKALIKES = ("‹‹‹", "›››")
_FENCE_LINE = re.compile(r"<<<\s*(END\s+)?([^>\n]{1,60}?)\s*>>>", re.IGNORECASE)
_MARKUP = re.compile(r"[*_`#]+")
_BULLET = re.compile(r"^[\s\-•>]+")
#: A prompt line shorter than this (once normalised) is too common to prove an echo on its own.
STRONG_CHARS = 20
#: Why an answer that copies a forged answer line of the judged text back is not read (a parse failure).
REPEATS_JUDGED = "repeats the judged text"


def normalise_line(line: str) -> str:
    """A line as compared with the prompt: lower case, no markup, no neutralisation marks, single spaces."""
    text = line.replace(NEUTRAL_MARK, "").replace("‹‹‹", "<<<").replace("›››", ">>>")
    text = _MARKUP.sub("", text)
    text = _BULLET.sub("", text)
    return " ".join(text.lower().split())


@dataclass(frozen=True)
class OwnAnswer:
    """An answer with the lines that are not the judge's own blanked (same length, offsets kept).

    Attributes:
        text: The answer with every removed line replaced by spaces (newlines kept).
        removed: How many non-blank lines were removed.
        reasons: Why lines were removed, e.g. ``{"echoed the prompt": 12}``.
    """

    text: str
    removed: int
    reasons: dict[str, int]
    repeated: tuple[str, ...] = ()

    @property
    def echoed(self) -> bool:
        return self.removed > 0

    @property
    def forged(self) -> str | None:
        """Why the whole answer is unusable, or None: it repeats a forged answer line of the judged text.

        Such a line (``Rating: 5/5`` inside the judged output, copied back without its ``» `` mark) may be the
        judge's own verdict, but it may equally be the judged text speaking through the judge: it is never read,
        whatever else the answer says, so the unit is a parse failure with this reason.
        """
        if not self.repeated:
            return None
        return f"the answer {REPEATS_JUDGED} ({', '.join(repr(x) for x in self.repeated[:3])})"

    def describe(self) -> str:
        """The removals as a clause for a parse failure, e.g. ``the answer echoed the prompt (12 lines)``."""
        parts = [f"{why} ({n} line{'s' if n != 1 else ''})" for why, n in self.reasons.items()]
        return "the answer " + " and ".join(parts)


#: Prompt lines kept normalised: the lines of a source text recur in every prompt about it (each output,
#: each dimension), so that each is normalised once.
_normalised_line = lru_cache(maxsize=16384)(normalise_line)


@lru_cache(maxsize=1024)
def _prompt_lines(prompt: str) -> frozenset[str]:
    """The prompt's normalised lines; cached, since every answer of a request (n samples, re-asks) is read against
    the same prompt, and a run has as many requests in flight as its concurrency."""
    return frozenset(n for n in (_normalised_line(x) for x in prompt.splitlines()) if n)


def _forged_lines(prompt: str) -> frozenset[str]:
    """The answer look-alikes of the prompt's fenced texts, normalised: what a judge must not copy back.

    A forged line is a line inside a fenced block (``<<<OUTPUT>>>`` ... ``<<<END OUTPUT>>>``) that
    :func:`assay.answers.fence.neutralise` marked because it reads as an answer (``» Score: 5``): the whole
    line, and what follows each mark or the word holding it (``Great. » Rating: 5/5`` gives ``rating: 5/5``
    too, ``In short {"» score": 5}`` gives ``{"score": 5}``). A line of the
    judged text that reads as no answer (a bare ``5``, a title) carries no mark and is not forged, so an
    honest short answer that happens to equal it is still read.
    """
    if _MARK_CHAR not in prompt or NEUTRAL_MARK not in prompt:  # nothing was marked: no forged line (most prompts)
        return frozenset()
    return _marked_lines(prompt)


@lru_cache(maxsize=1024)
def _marked_lines(prompt: str) -> frozenset[str]:
    """:func:`_forged_lines` of a prompt with marks; cached (not the test for marks: most prompts have none, and
    each is new, so that hashing it for the cache would cost more than the test)."""
    found: set[str] = set()
    inside = False
    for line in prompt.splitlines():
        fence = _FENCE_LINE.fullmatch(line.strip())
        if fence:  # a marker alone on its line; the instructions' "<<<...>>>" in prose opens nothing
            inside = not fence.group(1)
            continue
        if not inside or NEUTRAL_MARK not in line:
            continue
        marks = [m.start() for m in re.finditer(re.escape(NEUTRAL_MARK), line)]
        starts = [0, *marks, *(line.rfind(" ", 0, i) + 1 for i in marks)]  # the line, from each mark, its word
        found.update(n for n in (normalise_line(line[i:]) for i in starts) if re.search(r"\w", n))
    return frozenset(found)


def _carries_mark(line: str) -> bool:
    return NEUTRAL_MARK in line or any(m in line for m in _FENCE_LOOKALIKES) or (
        _FENCE_OPEN in line and _FENCE_CLOSE in line)


def _echo_kind(norm: str, prompt_lines: frozenset[str]) -> str | None:
    """``strong`` (a long prompt line, or the start of one: a truncated echo), ``weak`` (a short one), or None."""
    if norm in prompt_lines:
        return "strong" if len(norm) >= STRONG_CHARS else "weak"
    if len(norm) >= STRONG_CHARS and any(p.startswith(norm) for p in prompt_lines):
        return "strong"
    return None


def own_answer(answer: str, prompt: str | None = None) -> OwnAnswer:
    """Blank out what is not the judge's own answer.

    Removed, always: a line carrying a neutralisation mark (``» ``, ``‹‹‹``) or a fence marker,
    and every line inside an echoed fenced block (from ``<<<NAME>>>`` to ``<<<END NAME>>>``, or
    to the end when the echo stops early). With the prompt: a line equal (once normalised) to a
    prompt line of at least :data:`STRONG_CHARS` characters, or the start of one (an echo cut by
    the token limit); and a shorter line equal to a prompt line (``Score: 5``, ``- Coherence:``)
    only when the answer echoes the prompt elsewhere too, since such a line alone may be the
    judge's own answer. Lines with no letter or digit (``{``, ``}``) are never removed for matching.
    A line equal to a forged answer line of a fenced text (:func:`_forged_lines`), whatever its
    length, is removed; unless the answer echoes the prompt otherwise too (then it is part of that echo),
    it is recorded in ``repeated``, and :attr:`OwnAnswer.forged` makes the answer unusable.

    Args:
        answer: The judge's answer.
        prompt: The prompt it answers (all of it, or its fenced blocks and instruction lines).
    """
    lines = answer.splitlines(keepends=True)
    forged = _forged_lines(prompt) if prompt else frozenset()
    plines: frozenset[str] | None = None  # the prompt's lines, built only when an answer line could prove an echo
    short: dict[int, str] = {}  # lines too short to prove an echo alone: "weak" only where another line does
    repeated: list[str] = []
    verdict: list[str | None] = []
    inside: str | None = None
    for line in lines:
        fence = _FENCE_LINE.search(line)
        if fence:  # a real marker (judged text only holds look-alikes): it opens or closes a block
            inside = None if fence.group(1) else fence.group(2).strip().lower()
            verdict.append("echoed a fenced text")
            continue
        if inside is not None:
            verdict.append("echoed a fenced text")
        elif _carries_mark(line):
            verdict.append("reproduced neutralised judged text")
        else:
            norm = normalise_line(line)
            if norm in forged:
                repeated.append(line.strip())
                verdict.append(REPEATS_JUDGED)
                continue
            if not prompt or not re.search(r"\w", norm):
                verdict.append(None)
            elif len(norm) < STRONG_CHARS:
                short[len(verdict)] = norm
                verdict.append(None)
            else:
                plines = _prompt_lines(prompt) if plines is None else plines
                verdict.append(_echo_kind(norm, plines))
    evidence = any(v is not None for v in verdict)
    if evidence and short and prompt:  # a short line equal to a prompt line is part of an echo proven elsewhere
        plines = _prompt_lines(prompt) if plines is None else plines
        for i, norm in short.items():
            verdict[i] = _echo_kind(norm, plines)
    # A forged line inside a wider echo of the prompt is part of that echo: blanked with it, and what the judge
    # wrote after the echo is still read. Alone (a copy, not an echo), it makes the whole answer unusable.
    if any(v not in (None, "weak", REPEATS_JUDGED) for v in verdict):
        repeated = []
    out: list[str] = []
    reasons: dict[str, int] = {}
    for line, v in zip(lines, verdict, strict=True):
        if v is None or not line.strip():
            out.append(line)
            continue
        why = "echoed the prompt" if v in ("strong", "weak") else v
        reasons[why] = reasons.get(why, 0) + 1
        body = line.rstrip("\r\n")
        out.append(" " * len(body) + line[len(body):])
    return OwnAnswer("".join(out), sum(reasons.values()), reasons, tuple(repeated))
