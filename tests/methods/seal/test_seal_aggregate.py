"""SEAL's aggregation (equations 5-7) against hand-computed cases, and the weight checks."""

from __future__ import annotations

import math

import pytest

from assay.methods.seal.aggregate import (
    check_weights,
    dimension_score,
    rating_to_unit_interval,
    rescore,
    uniform_weights,
    unit_score,
)


def test_unit_score_is_the_weighted_sum_of_decisions():
    # 0.25*1 + 0.20*1 + 0.20*0 + 0.15*1 + 0.20*1 = 0.80 (the paper's engagingness case study: Q4 = 0)
    assert unit_score([0.25, 0.20, 0.20, 0.15, 0.20], [1, 1, 0, 1, 1]) == pytest.approx(0.80)
    assert unit_score([0.2] * 5, [1, 1, 1, 0, 1]) == pytest.approx(0.80)


def test_dimension_score_is_the_mean_of_unit_scores():
    weights = [0.5, 0.3, 0.2]
    matrix = [[1, 1, 1], [1, 0, 0], [0, 1, 1], [0, 0, 0]]
    # unit scores 1.0, 0.5, 0.5, 0.0 -> mean 0.5
    assert dimension_score(weights, matrix) == pytest.approx(0.5)
    # coherence of a 4-sentence summary: transitions 1,0,1 with one sub-dimension -> 2/3
    assert dimension_score([1.0], [[1], [0], [1]]) == pytest.approx(2 / 3)


def test_aggregation_is_deterministic_and_order_free_over_units():
    weights = [0.1, 0.2, 0.3, 0.4]
    rows = [[1, 0, 1, 0], [0, 1, 1, 1], [1, 1, 0, 0]]
    assert dimension_score(weights, rows) == dimension_score(weights, list(reversed(rows)))
    assert dimension_score(weights, rows) == pytest.approx((0.4 + 0.9 + 0.3) / 3)


def test_aggregation_rejects_shapes_that_do_not_fit():
    with pytest.raises(ValueError):
        unit_score([0.5, 0.5], [1])
    with pytest.raises(ValueError):
        dimension_score([1.0], [])


def test_weights_summing_to_one_are_kept():
    check = check_weights([0.25, 0.20, 0.20, 0.15, 0.20], 5)
    assert check.error is None and not check.renormalised
    assert math.fsum(check.weights) == pytest.approx(1.0)
    assert check.weights == pytest.approx([0.25, 0.20, 0.20, 0.15, 0.20])


def test_weights_not_summing_to_one_are_renormalised_and_flagged():
    check = check_weights([2, 1, 1], 3)
    assert check.renormalised and check.raw_sum == 4
    assert check.weights == pytest.approx([0.5, 0.25, 0.25])
    # zeros are allowed (non-negative), as long as something carries weight
    check = check_weights([0, 0.5, 0], 3)
    assert check.weights == pytest.approx([0, 1, 0]) and check.renormalised


@pytest.mark.parametrize(("values", "reason"), [
    ([0.6, -0.1, 0.5], "negative weight"),
    ([0, 0, 0], "sum to 0"),
    ([0.5, 0.5], "expected 3 weights, got 2"),
    ([float("inf"), 0.5, 0.5], "not a finite"),
])
def test_unusable_weights(values, reason):
    check = check_weights(values, 3)
    assert check.weights is None and reason in check.error


def test_uniform_weights():
    assert uniform_weights(4) == [0.25] * 4
    with pytest.raises(ValueError):
        uniform_weights(0)


def test_rating_to_unit_interval():
    assert [rating_to_unit_interval(r, 1, 5) for r in (1, 3, 5)] == [0.0, 0.5, 1.0]


def test_rescore_from_a_trace_with_the_judges_or_uniform_weights():
    trace = {"matrix": [[1, 0, 1], [0, 0, 1]], "weights": {"values": [0.6, 0.3, 0.1]}}
    assert rescore(trace) == pytest.approx((0.7 + 0.1) / 2)
    assert rescore(trace, uniform=True) == pytest.approx((2 / 3 + 1 / 3) / 2)
    assert rescore({"verify_error": "x"}) is None


def test_reading_decisions_and_digits_from_log_probabilities():
    from assay.judges.scripted import logprob_response
    from assay.methods.seal.logprobs import read_decision, read_digit_argmax, read_digit_mean

    def pos(table):
        return logprob_response("x", [table]).choices[0].logprobs[0]

    d = read_decision(pos({" Yes": 0.3, "1": 0.2, "no": 0.4})).value
    assert d.v == 1 and d.p_yes == pytest.approx(0.5) and d.p_no == pytest.approx(0.4)
    assert read_decision(pos({"0": 0.5, "yes": 0.1})).value.v == 0
    assert "neither" in read_decision(pos({"The": 0.9})).error
    assert "equally" in read_decision(pos({"1": 0.4, "0": 0.4})).error
    assert read_decision(None).error
    assert read_digit_mean(pos({"2": 0.25, "6": 0.25, "x": 0.5}), 0, 9).value == pytest.approx(4.0)
    assert read_digit_mean(pos({"12": 0.5}), 0, 9).error
    assert read_digit_argmax(pos({"2": 0.3, "4": 0.35, "7": 0.9}), 1, 5).value == 4
