"""G-Eval's scoring function as pure functions: rating tokens, their probabilities, equation 1.

G-Eval (Liu et al. 2023, section 2) scores an output as ``sum_i p(s_i) * s_i`` over the valid
ratings ``s_i`` of the scale, where ``p(s_i)`` is the judge's probability of writing ``s_i`` in
the evaluation form. Where the judge reports top-k log-probabilities, ``p`` is read from the
position where it writes its rating; where it does not, ``p`` is estimated from n sampled
answers (the paper's GPT-4 setting). Everything here works on plain data (token tables and
parsed ratings), so it is tested against hand-computed cases without any model.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from assay.answers.echo import OwnAnswer, own_answer
from assay.answers.parsing import Parsed
from assay.judges.base import TokenLogprobs
from assay.types import Scale


@dataclass(frozen=True)
class Estimate:
    """A G-Eval score with the distribution it came from, or the reason there is none.

    Attributes:
        score: ``sum p(s) * s`` over the renormalised distribution, or None.
        distribution: Probability of each valid rating (renormalised to sum to 1).
        error: Why there is no score (None when there is one).
        details: What the trace keeps: masses, positions, counts.
    """

    score: float | None
    distribution: dict[int, float] = field(default_factory=dict)
    error: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class _Ratings:
    """An integer scale's ratings as a judge writes them, with the digit strings that begin one: every score
    position's top-k tokens are looked up here (sets, not a scan over the ratings per token)."""

    values: dict[str, int]
    starts: frozenset[str]  # "1" and "10" of a 1-10 scale: a rating or the first digits of one
    unfinished: frozenset[str]  # "1" of a 1-10 scale: the first digits of a longer rating


@lru_cache(maxsize=64)
def _ratings(scale: Scale) -> _Ratings:
    """The scale's ratings as digit strings, e.g. ``{"1": 1}`` (:meth:`Scale.values`: an integer scale's only)."""
    values = {str(v): v for v in scale.values()}
    starts = frozenset(v[:k] for v in values for k in range(1, len(v) + 1))
    return _Ratings(values, frozenset(p for p in starts if _digits(p)),  # a sign is never read as a rating's start
                    frozenset(v[:k] for v in values for k in range(1, len(v))))


def is_rating_piece(token: str, scale: Scale) -> bool:
    """Whether a generated token starts a valid rating: after stripping whitespace it is a rating
    (``'3'``, ``' 3'``, ``'10'``) or the first digits of a multi-token one (``'1'`` of ``'10'``)."""
    s = token.strip()
    return s in _ratings(scale).starts  # ASCII digits only: not '３', not '', not '-'


def _offsets(positions: Sequence[TokenLogprobs]) -> tuple[str, list[int]]:
    """The generated text and the character offset where each token starts."""
    offsets, n = [], 0
    for pos in positions:
        offsets.append(n)
        n += len(pos.token)
    return "".join(p.token for p in positions), offsets


def _list_marker(positions: Sequence[TokenLogprobs], i: int, text: str, offsets: list[int]) -> bool:
    """Whether the digits at ``i`` number a list item (``1. Read the...``, ``1. 0: ...``) rather than rate.

    True when they open a line and are followed by ``.`` or ``)`` and then by more text on the
    same line; a bare ``3.`` at the end of a line or of the answer is still a rating.
    """
    line_start = text[:offsets[i]].rsplit("\n", 1)[-1]
    if line_start.strip() or i + 1 >= len(positions):
        return False
    after = positions[i + 1].token
    if after.strip() not in (".", ")") or "\n" in after:
        return False
    rest_of_line = text[offsets[i + 1] + len(after):].split("\n", 1)[0]
    return bool(rest_of_line.strip())


def find_score_position(positions: Sequence[TokenLogprobs], scale: Scale, label: str | None = None, *,
                        prompt: str | None = None, own: OwnAnswer | None = None) -> int | None:
    """Index of the generated position where the judge writes its rating, or None.

    The form ends with ``- Coherence:``, so the first rating piece the judge writes is its
    answer; tokens before it (a space, markup) are skipped. Three refinements keep a weak
    judge's echo of the prompt from being read as its rating: tokens on lines that echo the
    prompt or the judged text (:func:`assay.answers.echo.own_answer`) are never the rating; when the
    answer restates the form's label (``Coherence:``) on its own lines, the first rating piece
    after it counts; and list numbers (``1. Read the article``) are skipped. ``own`` is the answer's
    :func:`own_answer` against ``prompt`` where the caller has it already.
    """
    text, offsets = _offsets(positions)
    mine = (own if own is not None else own_answer(text, prompt)).text
    starts = [0]
    if label:
        m = _form_label(label).search(mine)
        if m:
            starts.insert(0, m.end())
    for start in starts:
        for i, pos in enumerate(positions):
            if offsets[i] >= start and is_rating_piece(pos.token, scale) and _own(mine, offsets[i], pos.token) \
                    and not _list_marker(positions, i, text, offsets):
                return i
    return None


@lru_cache(maxsize=64)
def _form_label(label: str) -> re.Pattern[str]:
    """The form's label restated in an answer (``Coherence:``, ``**Coherence (1-5):**``), compiled once per label."""
    return re.compile(rf"{re.escape(label)}\s*\**\s*(?:\([^)]*\))?\s*:", re.IGNORECASE)


def _own(own: str, offset: int, token: str) -> bool:
    """Whether a token lies in the judge's own answer (its characters were not blanked as an echo)."""
    return bool(own[offset:offset + len(token)].strip())


@dataclass
class _Masses:
    """Probability mass found at the score position, split by what it means."""

    valid: dict[int, float] = field(default_factory=dict)
    invalid: float = 0.0
    unresolved: float = 0.0
    invalid_tokens: dict[str, float] = field(default_factory=dict)

    def add_valid(self, value: int, p: float) -> None:
        self.valid[value] = self.valid.get(value, 0.0) + p

    def add_invalid(self, token: str, p: float) -> None:
        self.invalid += p
        self.invalid_tokens[token] = self.invalid_tokens.get(token, 0.0) + p


def _digits(token: str) -> bool:
    return token.isdigit() and token.isascii()


def _resolve(positions: Sequence[TokenLogprobs], index: int, i: int, prefix: str, weight: float,
             ratings: _Ratings, out: _Masses) -> None:
    """Assign ``weight``, the probability of the judge writing ``prefix`` (last piece at ``i``).

    A multi-token rating such as ``'10'`` written as ``'1'`` + ``'0'`` is resolved by the next
    position's table: ``'0'`` continues it to 10, a non-digit ends it at 1. That table only
    describes what follows ``prefix`` where the judge actually wrote ``prefix``; elsewhere
    the mass stays unresolved (kept out of the distribution, counted in the trace).
    """
    values = ratings.values
    if prefix not in ratings.unfinished:
        out.add_valid(values[prefix], weight)
        return
    written = "".join(p.token for p in positions[index:i + 1]).strip()
    if written != prefix or i + 1 >= len(positions):
        out.unresolved += weight
        return
    for top in positions[i + 1].top:
        p = weight * math.exp(top.logprob)
        extended = prefix + top.token
        if _digits(top.token) and extended in ratings.starts:
            _resolve(positions, index, i + 1, extended, p, ratings, out)
        elif _digits(top.token):
            out.add_invalid(extended, p)
        elif prefix in values:
            out.add_valid(values[prefix], p)  # the number ended after prefix
        else:
            out.add_invalid(extended, p)


def rating_masses(positions: Sequence[TokenLogprobs], index: int, scale: Scale,
                  probabilities: Sequence[float] | None = None) -> _Masses:
    """The probability mass of every valid rating at the score position ``index``.

    Each top-k token is stripped of surrounding whitespace (``' 3'`` and ``'3'`` both mean 3,
    and their masses add up); tokens that are no rating (words, out-of-scale numbers,
    ``'3.'``) hold invalid mass. ``probabilities``: the top-k tokens' probabilities where the caller has them.
    """
    ratings = _ratings(scale)
    out = _Masses()
    tops = positions[index].top
    for top, p in zip(tops, probabilities or [math.exp(t.logprob) for t in tops], strict=True):
        s = top.token.strip()
        if s in ratings.starts:
            _resolve(positions, index, index, s, p, ratings, out)
        else:
            out.add_invalid(top.token, p)
    return out


def renormalise(masses: dict[int, float]) -> dict[int, float]:
    """Scale the masses of the valid ratings to sum to one (empty if they hold no mass)."""
    total = sum(masses.values())
    if total <= 0:
        return {}
    return {v: masses[v] / total for v in sorted(masses)}


def weighted_score(distribution: dict[int, float]) -> float:
    """Equation 1 of G-Eval: ``sum p(s) * s``."""
    return sum(p * s for s, p in distribution.items())


def logprob_estimate(positions: Sequence[TokenLogprobs] | None, scale: Scale, label: str | None = None, *,
                     prompt: str | None = None) -> Estimate:
    """G-Eval's score from one answer's top-k log-probabilities.

    Returns an Estimate without a score (never a zero) when the answer has no log-probabilities,
    no rating token in the judge's own answer (an echo of ``prompt`` is not), or no probability
    on any valid rating.
    """
    if not positions:
        return Estimate(None, error="the judge returned no log-probabilities")
    own = own_answer("".join(p.token for p in positions), prompt)  # read once: forged, position, why not
    if own.forged:
        return Estimate(None, error=own.forged, details={"generated_tokens": [p.token for p in positions]})
    index = find_score_position(positions, scale, label, prompt=prompt, own=own)
    if index is None:
        why = f" ({own.describe()})" if own.echoed else ""
        return Estimate(None, error=f"no rating token on the {scale.label()} scale in the judge's own answer{why}",
                        details={"generated_tokens": [p.token for p in positions]})
    tops = positions[index].top
    probabilities = [math.exp(t.logprob) for t in tops]
    masses = rating_masses(positions, index, scale, probabilities)
    dist = renormalise(masses.valid)
    details = {
        "score_position": index,
        "score_token": positions[index].token,
        "valid_mass": round(sum(masses.valid.values()), 6),
        "invalid_mass": round(masses.invalid, 6),
        "unresolved_mass": round(masses.unresolved, 6),
        "invalid_tokens": {t: round(p, 6) for t, p in sorted(masses.invalid_tokens.items(), key=lambda kv: -kv[1])},
        "top_tokens": [[t.token, round(p, 6)] for t, p in zip(tops, probabilities, strict=True)],
    }
    if not dist:
        return Estimate(None, error="no probability on any valid rating at the score position", details=details)
    return Estimate(weighted_score(dist), dist, None, details)


def sampling_estimate(parsed: Sequence[Parsed]) -> Estimate:
    """G-Eval's score from n sampled answers: p(s) is the share of the parsed answers rating s.

    Unparseable answers are counted and excluded; if none parses there is no score.
    """
    ratings = [_rating(p.value) for p in parsed if p.ok]
    failures = [p.error for p in parsed if not p.ok]
    details = {"samples": len(parsed), "parsed": len(ratings), "unparseable": len(failures),
               "parse_errors": dict(Counter(failures))}
    if not ratings:
        why = Counter(failures).most_common(1)[0][0] if failures else None
        return Estimate(None, error=f"none of the {len(parsed)} sampled answers held a rating"
                        + (f" ({why})" if why else ""), details=details)
    counts = Counter(ratings)
    dist = {v: counts[v] / len(ratings) for v in sorted(counts)}
    return Estimate(weighted_score(dist), dist, None, details)


def greedy_estimate(parsed: Parsed) -> Estimate:
    """The '- Probs' ablation: the one rating of a greedy answer, as is."""
    if not parsed.ok:
        return Estimate(None, error=f"unparseable answer: {parsed.error}")
    return Estimate(float(parsed.value), {_rating(parsed.value): 1.0})


def _rating(value: float) -> Any:
    """A read rating as a distribution key: an int for whole numbers, the value itself for a flagged fraction."""
    return int(value) if float(value).is_integer() else float(value)
