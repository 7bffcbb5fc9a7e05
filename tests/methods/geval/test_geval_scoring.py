"""G-Eval's scoring function against hand-computed cases: rating tokens, renormalisation, equation 1."""

from __future__ import annotations

import math

import pytest

from assay.answers.parsing import parse_rating
from assay.judges.base import TokenLogprobs, TopToken
from assay.methods.geval.scoring import (
    find_score_position,
    greedy_estimate,
    is_rating_piece,
    logprob_estimate,
    rating_masses,
    renormalise,
    sampling_estimate,
    weighted_score,
)
from assay.types import Scale

L5, L3, L10, BIN = Scale(low=1, high=5), Scale(low=1, high=3), Scale(low=1, high=10), Scale(low=0, high=1)
SIGNED = Scale(low=-2, high=2)


def pos(generated: str, table: dict[str, float]) -> TokenLogprobs:
    """One generated position: the token written and its top-k table (most likely first)."""
    top = sorted(table.items(), key=lambda kv: -kv[1])
    return TokenLogprobs(token=generated, logprob=math.log(table.get(generated, 1e-9)),
                         top=[TopToken(token=t, logprob=math.log(p)) for t, p in top])


def written(*tokens: str) -> list[TokenLogprobs]:
    """Positions whose only candidate is the written token (for locating the score position)."""
    return [pos(t, {t: 1.0}) for t in tokens]


# -- rating tokens ------------------------------------------------------------------------------


@pytest.mark.parametrize(("token", "scale", "expected"), [
    ("3", L5, True), (" 3", L5, True), ("3 ", L5, True), ("\n3", L5, True), ("5", L5, True),
    ("7", L5, False), ("0", L5, False), ("10", L10, True), (" 10", L10, True), ("1", L10, True),
    ("0", L10, False), ("11", L10, False), ("0", BIN, True), ("2", BIN, False),
    ("", L5, False), (" ", L5, False), ("3.", L5, False), ("-1", L5, False), ("**", L5, False),
    ("three", L5, False), ("３", L5, False), ("Co", L5, False),
    ("2", SIGNED, True), ("0", SIGNED, True), ("-", SIGNED, False), ("-2", SIGNED, False),  # a sign is no digit
])
def test_rating_pieces(token: str, scale: Scale, expected: bool) -> None:
    assert is_rating_piece(token, scale) is expected


def test_score_position_skips_label_space_and_markup() -> None:
    assert find_score_position(written("Co", "herence", ":", " ", "3"), L5, "Coherence") == 4
    assert find_score_position(written("**", "4", "**"), L5) == 1
    assert find_score_position(written(" ", "2", "\n"), L3) == 1


def test_score_position_first_rating_after_the_restated_label() -> None:
    # a weak judge echoes a numbered list before filling the form: "1. Coherence: 2."
    tokens = written("1", ".", " Co", "herence", ":", " ", "2", ".")
    assert find_score_position(tokens, L5, "Coherence") == 6


def test_score_position_skips_list_numbers_but_not_a_final_rating() -> None:
    assert find_score_position(written("1", ".", " Read", " it", "\n", "4"), L5) == 5
    assert find_score_position(written("3", "."), L5) == 0
    assert find_score_position(written("3", ".", "\n"), L5) == 0
    # "1. 0: ..." and "1. 1" on a binary scale: the list number is not the rating
    assert find_score_position(written("1", ".", " ", "0", ":", " The"), BIN) == 3
    assert find_score_position(written("1", ".", " ", "1", "\n", "-"), BIN) == 3
    assert find_score_position(written("1", ")", " Read", "\n", "2"), L5) == 4


def test_score_position_out_of_scale_and_absent() -> None:
    assert find_score_position(written("7", " or", " 4"), L5) == 2  # 7 is no rating on 1-5
    assert find_score_position(written("The", " summary", " is", " fine"), L5) is None
    assert find_score_position([], L5) is None


# -- masses, renormalisation, equation 1 -------------------------------------------------------


def test_leading_space_variants_add_up_and_words_are_invalid() -> None:
    # ' 3' and '3' are the same rating; 'Hello' holds mass that is not a rating
    p = [pos("3", {"3": 0.3, " 3": 0.2, "4": 0.1, "Hello": 0.25})]
    m = rating_masses(p, 0, L5)
    assert m.valid == pytest.approx({3: 0.5, 4: 0.1})
    assert m.invalid == pytest.approx(0.25)
    est = logprob_estimate(p, L5)
    assert est.distribution == pytest.approx({3: 0.5 / 0.6, 4: 0.1 / 0.6})
    assert est.score == pytest.approx(19 / 6)


def test_weighted_score_differs_from_the_mode() -> None:
    dist = {1: 0.1, 2: 0.1, 3: 0.4, 4: 0.1, 5: 0.3}
    assert max(dist, key=dist.__getitem__) == 3
    assert weighted_score(dist) == pytest.approx(3.4)  # 0.1 + 0.2 + 1.2 + 0.4 + 1.5
    p = [pos("3", {"1": 0.05, "2": 0.05, "3": 0.2, "4": 0.05, "5": 0.15})]
    assert logprob_estimate(p, L5).score == pytest.approx(3.4)


def test_renormalisation_when_invalid_tokens_hold_mass() -> None:
    # '7' is off the 1-5 scale and ' the' is a word: 0.45 of the mass is invalid
    p = [pos("2", {"2": 0.3, "7": 0.25, " the": 0.2, "4": 0.1})]
    est = logprob_estimate(p, L5)
    assert est.distribution == pytest.approx({2: 0.75, 4: 0.25})
    assert est.score == pytest.approx(2.5)
    assert est.details["valid_mass"] == pytest.approx(0.4)
    assert est.details["invalid_mass"] == pytest.approx(0.45)
    assert est.details["invalid_tokens"] == pytest.approx({"7": 0.25, " the": 0.2})
    assert list(est.details["invalid_tokens"]) == ["7", " the"]  # largest mass first


def test_renormalise_edge_cases() -> None:
    assert renormalise({}) == {}
    assert renormalise({1: 0.0}) == {}
    assert renormalise({2: 1.0, 1: 3.0}) == {1: 0.75, 2: 0.25}


def test_binary_scale() -> None:
    p = [pos("1", {"1": 0.7, "0": 0.2, "2": 0.1})]
    assert logprob_estimate(p, BIN).score == pytest.approx(0.7 / 0.9)


def test_multi_token_rating_resolved_by_the_next_position() -> None:
    # scale 1-10 written digit by digit: '1' then '0' is 10, '1' then a newline is 1
    p = [pos("1", {"1": 0.6, "7": 0.3, "9": 0.1}),
         pos("0", {"0": 0.5, "\n": 0.3, "5": 0.2})]
    m = rating_masses(p, 0, L10)
    assert m.valid == pytest.approx({10: 0.3, 1: 0.18, 7: 0.3, 9: 0.1})
    assert m.invalid == pytest.approx(0.12)  # '15' is off the scale
    est = logprob_estimate(p, L10)
    assert est.score == pytest.approx(6.18 / 0.88)


def test_multi_token_prefix_not_written_is_unresolved() -> None:
    # the judge wrote '7': what would have followed a '1' (1 or 10?) is unknown
    p = [pos("7", {"7": 0.5, "1": 0.2, "8": 0.3}), pos("\n", {"\n": 1.0})]
    m = rating_masses(p, 0, L10)
    assert m.valid == pytest.approx({7: 0.5, 8: 0.3})
    assert m.unresolved == pytest.approx(0.2)
    est = logprob_estimate(p, L10)
    assert est.score == pytest.approx((3.5 + 2.4) / 0.8)
    assert est.details["unresolved_mass"] == pytest.approx(0.2)


def test_single_token_ten_and_leading_space() -> None:
    # tokenizers with a '10' token (or ' 10'): no continuation needed
    p = [pos("10", {"10": 0.5, " 9": 0.3, "1": 0.2})]
    est = logprob_estimate(p, L10)
    assert est.distribution == pytest.approx({9: 0.375, 10: 0.625})
    assert est.details["unresolved_mass"] == pytest.approx(0.2)


def test_multi_token_rating_at_the_end_of_the_answer_is_unresolved() -> None:
    p = [pos("1", {"1": 0.9, "5": 0.1})]
    est = logprob_estimate(p, L10)
    assert est.distribution == {5: 1.0}
    assert est.details["unresolved_mass"] == pytest.approx(0.9)


def test_no_rating_token_is_a_failure_not_a_zero() -> None:
    est = logprob_estimate(written("I", " cannot", " rate", " this"), L5)
    assert est.score is None
    assert "no rating token" in (est.error or "")
    assert est.details["generated_tokens"] == ["I", " cannot", " rate", " this"]
    assert logprob_estimate(None, L5).score is None
    assert logprob_estimate([], L5).error == "the judge returned no log-probabilities"


def test_no_valid_mass_at_the_score_position() -> None:
    # the written '1' on scale 1-10 can only be resolved by the next position, which has no digits
    # that form a valid rating and no end marker: all of its mass is invalid
    p = [pos("1", {"1": 1.0}), pos("1", {"1": 0.6, "5": 0.4})]
    est = logprob_estimate(p, L10)
    assert est.score is None and est.error and "no probability" in est.error


# -- sampling and greedy ------------------------------------------------------------------------


def test_sampling_estimate_counts_and_excludes_unparseable_answers() -> None:
    answers = ["4", "Coherence: 3", "- Coherence: 5", "nonsense", "Coherence: 7", "4/5"]
    est = sampling_estimate([parse_rating(a, L5, "coherence") for a in answers])
    assert est.distribution == pytest.approx({3: 0.25, 4: 0.5, 5: 0.25})
    assert est.score == pytest.approx(4.0)
    assert est.details["samples"] == 6 and est.details["parsed"] == 4 and est.details["unparseable"] == 2
    assert sum(est.details["parse_errors"].values()) == 2


def test_sampling_estimate_differs_from_the_mode() -> None:
    est = sampling_estimate([parse_rating(a, L5) for a in ["1", "1", "1", "5", "5"]])
    assert est.score == pytest.approx(2.6)
    assert est.distribution == pytest.approx({1: 0.6, 5: 0.4})


def test_sampling_estimate_with_nothing_parseable() -> None:
    est = sampling_estimate([parse_rating(a, L5) for a in ["great", "Coherence: 9", ""]])
    assert est.score is None and "none of the 3" in (est.error or "")
    assert est.details["unparseable"] == 3


def test_greedy_estimate() -> None:
    assert greedy_estimate(parse_rating("Coherence: 4", L5, "coherence")).score == 4.0
    bad = greedy_estimate(parse_rating("Coherence: 6", L5, "coherence"))
    assert bad.score is None and "outside" in (bad.error or "")


# -- the rating formats G-Eval's text answers come in ---------------------------------------------


@pytest.mark.parametrize(("text", "label", "value"), [
    ("4", "coherence", 4.0),
    ("Coherence: 4", "coherence", 4.0),
    ("4/5", "coherence", 4.0),
    ("- Fluency: 2", "fluency", 2.0),
    ("**3**", "coherence", 3.0),
    ("I would rate it **3** overall, given the errors.", "coherence", 3.0),
    ("Evaluation Form (scores ONLY):\n- Coherence: 2", "coherence", 2.0),
    ("- **Coherence:** 5 (well organised)", "coherence", 5.0),
    ("Coherence (1-5): 3", "coherence", 3.0),
    ("1. Read the article.\n2. Compare.\nCoherence: 4", "coherence", 4.0),
    ("Score: 4 out of 5", "coherence", 4.0),
])
def test_text_ratings_accepted(text: str, label: str, value: float) -> None:
    parsed = parse_rating(text, L5, label)
    assert parsed.ok and parsed.value == value


@pytest.mark.parametrize(("text", "why"), [
    ("Coherence: 7", "outside"),
    ("Coherence: 0", "outside"),
    ("3.5", "whole number"),
    ("Coherence: 3/10", "not on the 1-5 scale"),
    ("Coherence: 3 out of 10", "not on the 1-5 scale"),
    ("I would rate it 3 out of 10.", "not on the 1-5 scale"),
    ("It is quite coherent.", "no rating"),
    ("", "the answer is empty"),  # issue 23: said so, after the middleware retried it
])
def test_text_ratings_rejected_and_recorded(text: str, why: str) -> None:
    parsed = parse_rating(text, L5, "coherence", strict=True)
    assert parsed.value is None and why in (parsed.error or "")
    assert parsed.raw == text


@pytest.mark.parametrize(("tokens", "scored"), [(("Coherence", ":", " ", "4"), True), (("No", " idea"), False)])
def test_the_estimate_reads_the_judges_own_answer_once(monkeypatch, tokens, scored) -> None:
    """The echo guard runs once per answer: its result serves the forged-line check, the score position and the
    reason for no score."""
    from assay.methods.geval import scoring

    calls: list[str] = []
    real = scoring.own_answer

    def counting(answer: str, prompt: str | None = None) -> object:
        calls.append(answer)
        return real(answer, prompt)

    monkeypatch.setattr(scoring, "own_answer", counting)
    est = scoring.logprob_estimate(written(*tokens), L5, "Coherence", prompt="Rate it.\n- Coherence:")
    assert (est.score is not None) is scored and calls == ["".join(tokens)]
