"""The judge's own answer region: blank out every line of an answer that reproduces the prompt or the judged text."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

# Marks that assay.answers.fence puts into judged text: the look-alike guillemets that replace fence
# markers and the "» " that defuses answer look-alikes. No judge answer of its own carries them.
NEUTRAL_MARK = "» "
_FENCE_OPEN, _FENCE_CLOSE = "<<<", ">>>"
_FENCE_LOOKALIKES = ("‹‹‹", "›››")
_FENCE_LINE = re.compile(r"<<<\s*(END\s+)?([^>\n]{1,60}?)\s*>>>", re.IGNORECASE)
_MARKUP = re.compile(r"[*_`#]+")
_BULLET = re.compile(r"^[\s\-•>]+")
#: A prompt line shorter than this (once normalised) is too common to prove an echo on its own.
STRONG_CHARS = 20


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

    @property
    def echoed(self) -> bool:
        return self.removed > 0

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

    Args:
        answer: The judge's answer.
        prompt: The prompt it answers (all of it, or its fenced blocks and instruction lines).
    """
    lines = answer.splitlines(keepends=True)
    plines = _prompt_lines(prompt) if prompt else frozenset()
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
            kind = _echo_kind(norm, plines) if plines and re.search(r"\w", norm) else None
            verdict.append(None if kind is None else kind)
    evidence = any(v not in (None, "weak") for v in verdict)
    out, reasons = [], {}
    for line, v in zip(lines, verdict, strict=True):
        if v == "weak" and not evidence:
            v = None
        if v is None or not line.strip():
            out.append(line)
            continue
        why = "echoed the prompt" if v in ("strong", "weak") else v
        reasons[why] = reasons.get(why, 0) + 1
        body = line.rstrip("\r\n")
        out.append(" " * len(body) + line[len(body):])
    return OwnAnswer("".join(out), sum(reasons.values()), reasons)
