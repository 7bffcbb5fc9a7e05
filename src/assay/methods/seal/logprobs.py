"""SEAL for judges too small for the batched JSON answers: one question per call, read from log-probabilities.

This is assay's addition, not the paper's format (``--decisions logprobs``). Each v(u, s) is asked on
its own and decided by which of the two allowed answers the judge finds more likely at the first
answer position ("1"/"yes" against "0"/"no"): constrained decoding over {yes, no}, deterministic,
with both probabilities kept in the trace. Weights are asked per sub-dimension as an importance digit
0-9 whose probability-weighted mean (as in G-Eval) becomes the unnormalised weight. Every prompt of a
(sample, dimension) shares the same prefix, so a local judge re-evaluates only the question.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from assay.answers.parsing import Parsed
from assay.judges.base import TokenLogprobs
from assay.methods.seal.prompts import Ask, join_parts, rules_block
from assay.methods.seal.spec import Recipe, SubDimension
from assay.methods.seal.units import Unit

#: Top tokens requested at the answer position.
TOP_K = 20
_YES, _NO = {"1", "yes"}, {"0", "no"}


def unit_target(unit_type: str, unit: Unit | None, output_name: str) -> str:
    """How a question names its unit: ``sentence s3``, ``the transition s2 -> s3``, ``the response``."""
    if unit is None:
        return f"the {output_name}"
    if unit_type == "adjacent_pair":
        return f"the transition {unit.members[0]} -> {unit.members[1]}"
    if unit_type == "sentence":
        return f"sentence {unit.id}"
    return f"{output_name} fact {unit.id}"


def build_question(recipe: Recipe, sub: SubDimension, body: list[str], *, target: str, holistic: bool,
                   fine: bool) -> Ask:
    """One yes/no question about one unit; the answer is a single token."""
    intro = (recipe.holistic_intro or recipe.intro) if holistic else recipe.intro
    question = sub.holistic_question() if holistic else sub.question
    prompt = join_parts(intro, *body, rules_block(recipe.rules) if fine else None,
                   f"Question ({sub.name}), about {target}: {question}",
                   "Answer with 1 for yes or 0 for no, and nothing else.")
    return Ask(prompt, "1 or 0", 1)


def build_importance(recipe: Recipe, index: int, body: list[str], *, dimension: str, output_name: str,
                     holistic: bool) -> Ask:
    """How much sub-dimension ``index`` matters here, as one digit from 0 to 9 (the weights, eq. 5).

    It opens like the verification questions (same intro, same texts), so a local judge reuses their
    evaluated prefix.
    """
    sub = recipe.subdimensions[index]
    intro = (recipe.holistic_intro or recipe.intro) if holistic else recipe.intro
    question = sub.holistic_question() if holistic else sub.question
    prompt = join_parts(
        intro, *body,
        f"Criterion Q{index + 1} ({sub.name}): {question}",
        f"Do not answer it. How much does this criterion matter for the {dimension} of this {output_name}, "
        "from 0 (not at all) to 9 (essential)? Answer with one digit and nothing else.")
    return Ask(prompt, "one digit 0-9", 1)


def build_rating_question(recipe: Recipe, body: list[str], *, target: str, dimension: str, holistic: bool,
                          fine: bool) -> Ask:
    """The w/o-SV ablation in this mode: one rating digit from 1 to 5 for one unit."""
    intro = (recipe.holistic_intro or recipe.intro) if holistic else recipe.intro
    prompt = join_parts(intro, *body, rules_block(recipe.rules) if fine else None,
                        f"Rate {target} for {dimension} ({recipe.criterion}) from 1 (worst) to 5 (best).",
                        "Answer with one digit and nothing else.")
    return Ask(prompt, "one digit 1-5", 1)


@dataclass(frozen=True)
class Decision:
    """A yes/no decision read from the answer position: v, and the probabilities it was taken from."""

    v: int
    p_yes: float
    p_no: float


def _top(position: TokenLogprobs | None) -> list[tuple[str, float]]:
    if position is None:
        return []
    return [(t.token.strip().lower(), math.exp(t.logprob)) for t in position.top]


def read_decision(position: TokenLogprobs | None) -> Parsed:
    """v = 1 when "1"/"yes" is more probable than "0"/"no" among the top tokens at the answer position.

    Neither answer among the top tokens, or an exact tie, is an error: the question is not decided.
    """
    top = _top(position)
    p_yes = math.fsum(p for t, p in top if t in _YES)
    p_no = math.fsum(p for t, p in top if t in _NO)
    raw = " ".join(t for t, _ in top[:5])
    if p_yes == 0 and p_no == 0:
        return Parsed(None, f"neither yes nor no among the top {len(top)} tokens", raw)
    if p_yes == p_no:
        return Parsed(None, "yes and no equally likely", raw)
    return Parsed(Decision(int(p_yes > p_no), p_yes, p_no), None, raw)


def read_digit_mean(position: TokenLogprobs | None, low: int, high: int) -> Parsed:
    """The probability-weighted mean of the digits low..high among the top tokens (renormalised over them)."""
    mass: dict[int, float] = {}
    for tok, p in _top(position):
        if tok.isdigit() and low <= int(tok) <= high:
            mass[int(tok)] = mass.get(int(tok), 0.0) + p
    total = math.fsum(mass.values())
    if total == 0:
        return Parsed(None, f"no digit from {low} to {high} among the top tokens", "")
    return Parsed(math.fsum(d * p for d, p in mass.items()) / total, None, "")


def read_digit_argmax(position: TokenLogprobs | None, low: int, high: int) -> Parsed:
    """The most probable digit from low to high among the top tokens (the w/o-SV rating)."""
    best: dict[int, float] = {}
    for tok, p in _top(position):
        if tok.isdigit() and low <= int(tok) <= high:
            best[int(tok)] = best.get(int(tok), 0.0) + p
    if not best:
        return Parsed(None, f"no digit from {low} to {high} among the top tokens", "")
    return Parsed(max(best, key=lambda d: (best[d], -d)), None, "")
