"""Pairwise statistics against hand-computed cases (assay.meta.pairwise)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from assay.meta import pairwise as pw
from assay.types import Scale

# Three systems on two inputs. Verdicts are the prompt's letters: ``ab`` shows A first, ``ba`` shows B first.
# d1 X-Y: A, B -> X both orders (consistent, pref 1)      d2 X-Y: A, B -> X (consistent, pref 1)
# d1 X-Z: A, A -> X then Z (flip toward the first slot)     d2 X-Z: A, C -> X then tie (flip toward the first slot)
# d1 Y-Z: C, C -> tie (consistent, pref 0.5)              d2 Y-Z: B, B -> Z then Y (flip toward the second slot)
ROWS = [
    ("d1", "X", "Y", "A", "B", 4, 2, 5, 1),
    ("d1", "X", "Z", "A", "A", 3, 3.2, 5, 3),
    ("d1", "Y", "Z", "C", "C", 2, 4, 1, 3),
    ("d2", "X", "Y", "A", "B", 3, 4, 2, 4),
    ("d2", "X", "Z", "A", "C", 1, 5, 2, 4),
    ("d2", "Y", "Z", "B", "B", 3, 3, 4, 4),
]


def table() -> pd.DataFrame:
    return pd.DataFrame([{"doc_id": d, "a_system": a, "b_system": b, "dimension": "q", "ab": ab, "ba": ba,
                          "a_id": f"{d}:{a}", "b_id": f"{d}:{b}", "a_human": ha, "b_human": hb}
                         for d, a, b, ab, ba, ha, hb, _, _ in ROWS])


def pointwise() -> dict[str, float]:
    out = {}
    for d, a, b, *_, sa, sb in ROWS:
        out[f"{d}:{a}"], out[f"{d}:{b}"] = sa, sb
    return out


def test_outcomes_read_each_order_and_count_a_flip_as_a_tie() -> None:
    read = pw.outcomes(table())
    assert list(read["win_ab"]) == ["A", "A", "C", "A", "A", "B"]
    assert list(read["win_ba"]) == ["A", "B", "C", "A", "C", "A"]
    assert list(read["consistent"]) == [True, False, True, True, False, False]
    assert list(read["pref"]) == [1.0, 0.5, 0.5, 1.0, 0.5, 0.5]
    dropped = pw.outcomes(table(), "drop")
    assert dropped["pref"].isna().tolist() == [False, True, False, False, True, True]


def test_an_unread_verdict_leaves_the_pair_out() -> None:
    frame = table()
    frame.loc[0, "ba"] = None
    read = pw.outcomes(frame)
    assert math.isnan(read["pref"][0])
    stats = pw.order_stats(read)
    assert stats["n_pairs"] == 5 and stats["n_unread"] == 1


def test_order_statistics_by_hand() -> None:
    stats = pw.order_stats(pw.outcomes(table()))
    assert stats["consistency"] == pytest.approx(3 / 6)
    assert stats["n_inconsistent"] == 3
    assert stats["position_bias"] == pytest.approx(2 / 3)  # d1 X-Z and d2 X-Z lean first, d2 Y-Z second
    assert stats["second_position_bias"] == pytest.approx(1 / 3)
    # 12 verdicts: 5 first-slot wins, 3 ties, 4 second-slot wins
    assert stats["first_position_win_rate"] == pytest.approx((5 + 1.5) / 12)
    assert stats["tie_rate"] == pytest.approx(3 / 12)


def test_win_rates_by_hand_with_intervals_over_inputs() -> None:
    res = pw.win_rates(pw.outcomes(table()), n_boot=200, seed=1)
    assert res["matrix"]["X"] == {"Y": 1.0, "Z": 0.5}
    assert res["matrix"]["Y"] == {"X": 0.0, "Z": 0.5}
    assert res["matrix"]["Z"] == {"X": 0.5, "Y": 0.5}
    x, y, z = (res["systems"][s] for s in "XYZ")
    assert (x["win_rate"], y["win_rate"], z["win_rate"]) == (0.75, 0.25, 0.5)
    assert x["games"] == 4
    # each input alone gives X 0.75, Y 0.25, Z 0.5: every resample does too
    assert (x["low"], x["high"]) == (0.75, 0.75) and (y["low"], y["high"]) == (0.25, 0.25)


def test_dropping_inconsistent_pairs_changes_the_rates_as_computed_by_hand() -> None:
    res = pw.win_rates(pw.outcomes(table(), "drop"), n_boot=0)
    assert res["systems"]["X"]["win_rate"] == 1.0
    assert res["systems"]["Y"]["win_rate"] == pytest.approx(0.5 / 3)
    assert res["systems"]["Z"]["win_rate"] == 0.5
    assert res["systems"]["X"]["low"] is None


def test_the_interval_widens_when_inputs_disagree() -> None:
    frame = pd.DataFrame([{"doc_id": f"d{i}", "a_system": "X", "b_system": "Y", "dimension": "q",
                           "ab": "A" if i < 5 else "B", "ba": "B" if i < 5 else "A"} for i in range(10)])
    res = pw.win_rates(pw.outcomes(frame), n_boot=500, seed=0)["systems"]["X"]
    assert res["win_rate"] == 0.5
    assert res["low"] < 0.5 < res["high"]


def two_systems(wins: int, losses: int) -> pd.DataFrame:
    rows = [("A", "B")] * wins + [("B", "A")] * losses
    return pw.outcomes(pd.DataFrame([{"doc_id": f"d{i}", "a_system": "P", "b_system": "Q", "dimension": "q",
                                      "ab": ab, "ba": ba, "a_length": 10, "b_length": 10}
                                     for i, (ab, ba) in enumerate(rows)]))


def test_bradley_terry_two_systems_is_the_log_odds() -> None:
    bt = pw.bradley_terry(two_systems(3, 1), n_boot=0, alpha=0.0)
    # P beats Q 3 times in 4: exp(bP) / (exp(bP) + exp(bQ)) = 3/4, strengths centred on zero
    assert bt["P"]["bt"] == pytest.approx(math.log(3) / 2, abs=1e-4)
    assert bt["Q"]["bt"] == pytest.approx(-math.log(3) / 2, abs=1e-4)


def test_bradley_terry_orders_and_interval_holds_the_fit() -> None:
    bt = pw.bradley_terry(pw.outcomes(table()), n_boot=200, seed=0)
    assert bt["X"]["bt"] > bt["Z"]["bt"] > bt["Y"]["bt"]
    for s in "XYZ":
        assert bt[s]["bt_low"] <= bt[s]["bt"] + 1e-9 and bt[s]["bt"] - 1e-9 <= bt[s]["bt_high"]


def test_length_controlled_rate_equals_the_win_rate_when_lengths_are_equal() -> None:
    lc = pw.length_controlled(two_systems(3, 1))
    assert lc["P"] == pytest.approx(0.75, abs=0.01)
    assert lc["Q"] == pytest.approx(0.25, abs=0.01)


def test_length_controlled_rate_removes_a_pure_length_preference() -> None:
    # the judge always prefers the longer output; P is the longer one on 7 inputs of 10 (by similar margins
    # either way): its raw win rate is 0.7, its rate at equal length much nearer 0.5
    diffs = [20, 30, 40, 50, 25, 35, 45, -20, -30, -40]
    rows = [{"doc_id": f"d{i}", "a_system": "P", "b_system": "Q", "dimension": "q", "a_length": 100 + d,
             "b_length": 100, "ab": "A" if d > 0 else "B", "ba": "B" if d > 0 else "A"} for i, d in enumerate(diffs)]
    read = pw.outcomes(pd.DataFrame(rows))
    raw = pw.win_rates(read, n_boot=0)["systems"]["P"]["win_rate"]
    lc = pw.length_controlled(read)
    assert raw == pytest.approx(0.7)
    assert abs(lc["P"] - 0.5) < 0.5 * abs(raw - 0.5)
    assert lc["P"] + lc["Q"] == pytest.approx(1.0)


def test_length_controlled_is_none_without_lengths() -> None:
    assert pw.length_controlled(pw.outcomes(table())) == {"X": None, "Y": None, "Z": None}


def test_default_margin_is_a_third_of_the_step() -> None:
    assert pw.default_margin(Scale(low=1, high=5)) == pytest.approx(1 / 3)
    assert pw.default_margin(Scale(low=0, high=1, integer=False)) == pytest.approx(1 / 30)


def test_human_preferences_keep_pairs_beyond_the_margin() -> None:
    prefs = pw.human_preferences(table(), 1 / 3)
    assert list(prefs) == ["A", None, "B", "B", "B", None]


def test_agreement_with_people_by_hand() -> None:
    rep = pw.pairwise_report(table(), n_boot=0, human_margin=1 / 3, pointwise={"q": pointwise()})["q"]
    # judge labels on the 4 human-decided pairs: A, C, A, C; people: A, B, B, B
    # accuracy 1/4. kappa on both orientations (8 labels): judge A, C, A, C, B, C, B, C; people A, B, B, B, B, A,
    # A, A: p_o = 2/8; judge marginals A 2, B 2, C 4; people A 4, B 4 -> p_e = (2*4 + 2*4) / 64 = 1/4 -> kappa 0
    assert rep["human_agreement"]["accuracy"] == pytest.approx(0.25)
    assert rep["human_agreement"]["kappa"] == pytest.approx(0.0)
    assert rep["human_agreement"]["n_pairs"] == 4
    # pointwise scores imply A, B, B, B on those pairs: all agree
    assert rep["pointwise_agreement"]["accuracy"] == 1.0
    assert rep["pointwise_agreement"]["kappa"] == pytest.approx(1.0)
    assert rep["pointwise_agreement"]["n_pairs"] == 4


def test_kappa_by_hand_and_unchanged_when_pairs_are_flipped() -> None:
    judge = pd.Series(["A", "A", "B", "A", "C"])
    people = pd.Series(["A", "A", "B", "B", "A"])
    # both orientations (10 labels): judge A 4, B 4, C 2; people A 5, B 5; agreeing 6 of 10
    # p_e = (4*5 + 4*5) / 100 = 0.4 -> kappa = (0.6 - 0.4) / 0.6 = 1/3
    res = pw.agreement(judge, people)
    assert res == {"accuracy": pytest.approx(0.6), "kappa": pytest.approx(1 / 3), "n_pairs": 5}
    swap = {"A": "B", "B": "A", "C": "C"}
    flipped = pw.agreement(judge.map(swap).where(judge.index != 0, judge), people.map(swap).where(people.index != 0,
                                                                                                     people))
    assert flipped["kappa"] == pytest.approx(1 / 3)


def test_implied_preferences_tie_on_equal_scores_and_skip_missing() -> None:
    frame = table()
    scores = pointwise()
    del scores["d1:X"]
    implied = pw.implied_preferences(frame, scores)
    assert list(implied) == [None, None, "B", "B", "B", "C"]


def test_report_carries_every_key_per_dimension() -> None:
    frame = pd.concat([table(), table().assign(dimension="r")])
    rep = pw.pairwise_report(frame, n_boot=50)
    assert set(rep) == {"q", "r"}
    entry = rep["q"]
    for key in ("consistency", "position_bias", "tie_rate", "systems", "matrix", "human_agreement"):
        assert key in entry
    assert set(entry["systems"]["X"]) >= {"win_rate", "low", "high", "bt", "bt_low", "bt_high", "lc_win_rate"}
    assert entry["human_agreement"] is None  # no margin given


def test_bootstrap_is_reproducible_from_its_seed() -> None:
    frame = pw.outcomes(pd.concat([table().assign(doc_id=table()["doc_id"] + str(k)) for k in range(5)]))
    a = pw.win_rates(frame, n_boot=100, seed=3)
    b = pw.win_rates(frame, n_boot=100, seed=3)
    assert a == b
    assert not np.isnan(a["systems"]["X"]["low"])
