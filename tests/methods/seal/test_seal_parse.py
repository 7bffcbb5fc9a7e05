"""Parsing every SEAL answer format (Tables 22-25), including misaligned lengths: errors, never padding."""

from __future__ import annotations

import pytest

from assay.methods.seal.parse import parse_binary, parse_joint, parse_ratings, parse_support, parse_weights

# ---------------------------------------------------------------- Table 22: "1,0,1" per unit


@pytest.mark.parametrize(("answer", "expected"), [
    ('{"adjacent coherence": "1,0,1"}', [1, 0, 1]),
    ('Sure!\n```json\n{"adjacent coherence": "1, 0, 1"}\n```', [1, 0, 1]),
    ('{"adjacent coherence": [1, 0, 1]}', [1, 0, 1]),
    ('{"adjacent coherence": ["1", "0", "1"]}', [1, 0, 1]),
    ('{"Adjacent_Coherence": "[1,0,1]"}', [1, 0, 1]),
    ('{"adjacent coherence": "yes,no,yes"}', [1, 0, 1]),
    ('{"adjacent coherence": [true, false, true]}', [1, 0, 1]),
    ('Transition [1] is fine. {"adjacent coherence": "1,0,1"}', [1, 0, 1]),
])
def test_binary_accepted_forms(answer, expected):
    assert parse_binary(answer, "adjacent coherence", 3).value == expected


@pytest.mark.parametrize(("answer", "reason"), [
    ('{"adjacent coherence": "1,0"}', "expected exactly 3 values, got 2"),
    ('{"adjacent coherence": "1,0,1,1"}', "expected exactly 3 values, got 4"),
    ('{"adjacent coherence": ""}', "expected exactly 3 values, got 0"),
    ('{"adjacent coherence": "1,2,0"}', "value 2 is '2', not 0 or 1"),
    ('{"adjacent coherence": "1,0.5,0"}', "value 2 is '0.5'"),
    ('{"fluency": "1,0,1"}', 'no "adjacent coherence" field'),
    ('{"adjacent coherence": {"p1": 1}}', "must be a string"),
    ('{"adjacent coherence": [[1], [0], [1]]}', "must be a string"),
    ("1,0,1", "no JSON object found"),
    ('["1,0,1"]', "no JSON object found"),
])
def test_binary_misaligned_or_malformed_is_an_error(answer, reason):
    parsed = parse_binary(answer, "adjacent coherence", 3)
    assert parsed.value is None
    assert reason in parsed.error


# ---------------------------------------------------------------- Table 22: supporting source fact ids

IDS, SRC = ["s1", "s2", "s3"], ["c1", "c2", "c3", "c4", "c5"]


@pytest.mark.parametrize(("answer", "expected"), [
    ('{"supporting source facts": [["c2", "c5"], [], ["c1"]]}', [["c2", "c5"], [], ["c1"]]),
    ('{"supporting source facts": [["C5", "c2", "c2"], "", "c1"]}', [["c2", "c5"], [], ["c1"]]),
    ('{"supporting source facts": [["c2: the fact text"], [], ["c1", "c3"]]}', [["c2"], [], ["c1", "c3"]]),
    ('{"supporting source facts": {"s2": [], "s1": ["c4"], "s3": "c1, c2"}}', [["c4"], [], ["c1", "c2"]]),
])
def test_support_accepted_forms(answer, expected):
    assert parse_support(answer, "supporting source facts", IDS, SRC).value == expected


@pytest.mark.parametrize(("answer", "reason"), [
    ('{"supporting source facts": [["c2"], []]}', "expected exactly 3 lists"),
    ('{"supporting source facts": [["c2"], [], [], []]}', "expected exactly 3 lists"),
    ('{"supporting source facts": [["c2"], [], ["c9"]]}', "entry 3 cites unknown source fact ids: c9"),
    ('{"supporting source facts": [["c2"], [3], []]}', "entry 2 is not a list"),
    ('{"supporting source facts": {"s1": [], "s2": []}}', "exactly the keys s1, s2, s3"),
    ('{"supporting source facts": "c1"}', "one list per summary fact"),
    # the paper's own example writes a set, {"c2", "c5"}: not JSON, so it is re-asked, never guessed
    ('{"supporting source facts": [{"c2", "c5"}, [], ["c1"]]}', "no JSON object found"),
])
def test_support_misaligned_or_unknown_ids_are_errors(answer, reason):
    parsed = parse_support(answer, "supporting source facts", IDS, SRC)
    assert parsed.value is None
    assert reason in parsed.error


# ---------------------------------------------------------------- Tables 23-25: decisions + weights


def test_joint_reads_decisions_and_weights():
    d, w = parse_joint('{"naturalness": "1,1,0,1,1", "naturalness_weight": "0.25,0.20,0.20,0.15,0.20"}',
                       "naturalness", "naturalness_weight", 5)
    assert d.value == [1, 1, 0, 1, 1]
    assert w.value == [0.25, 0.2, 0.2, 0.15, 0.2]


def test_joint_keeps_decisions_when_only_the_weights_are_bad():
    d, w = parse_joint('{"coherence": "1,1,0,1,1,0", "coherence_weight": "0.5,0.5"}', "coherence",
                       "coherence_weight", 6)
    assert d.value == [1, 1, 0, 1, 1, 0]
    assert w.value is None and "expected exactly 6 weights, got 2" in w.error
    d, w = parse_joint('{"coherence": "1,1,0,1,1,0"}', "coherence", "coherence_weight", 6)
    assert d.ok and not w.ok and "coherence_weight" in w.error


def test_joint_misaligned_decisions_fail_even_with_good_weights():
    d, w = parse_joint('{"consistency": "1,1,1,0", "consistency_weight": "0.30,0.20,0.15,0.25,0.10"}',
                       "consistency", "consistency_weight", 5)
    assert not d.ok and "expected exactly 5 answers" in d.error
    assert w.ok


def test_weights_format():
    assert parse_weights('{"x_weight": [0.5, "0.25", 0.25]}', "x_weight", 3).value == [0.5, 0.25, 0.25]
    # sign and sum are judged by the aggregation's check, not the parser
    assert parse_weights('{"x_weight": "-0.5,1,0.5"}', "x_weight", 3).value == [-0.5, 1.0, 0.5]
    assert "not a number" in parse_weights('{"x_weight": "a,b,c"}', "x_weight", 3).error
    assert "not a finite" in parse_weights('{"x_weight": "nan,0.5,0.5"}', "x_weight", 3).error
    assert "expected exactly 3 weights" in parse_weights('{"x_weight": "1"}', "x_weight", 3).error


# ---------------------------------------------------------------- w/o SV: scalar ratings


def test_ratings():
    assert parse_ratings('{"fluency ratings": "4,5,1"}', "fluency ratings", 3, 1, 5).value == [4, 5, 1]
    assert parse_ratings('{"fluency ratings": 3}', "fluency ratings", 1, 1, 5).value == [3]
    assert "not a whole number from 1 to 5" in parse_ratings('{"fluency ratings": "4,6,1"}', "fluency ratings",
                                                             3, 1, 5).error
    assert "not a whole number" in parse_ratings('{"fluency ratings": "4.5,3,1"}', "fluency ratings", 3, 1, 5).error
    assert "expected exactly 3 ratings" in parse_ratings('{"fluency ratings": "4"}', "fluency ratings", 3, 1,
                                                         5).error
