"""The trust estimators against ppi_py's own functions and examples, and hand-computed cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

ppi_py = pytest.importorskip("ppi_py")

from assay.meta.table import ScoreTable, make_frame  # noqa: E402
from assay.meta.trust import (  # noqa: E402
    Labels,
    calibrate,
    combine,
    difference,
    estimate_mean,
    fit_map,
    held_out_metrics,
    labels_needed,
    pick,
    power_tuning,
    simulate_labels,
    to_human_scale,
    trust,
)


def _pair(n: int, big_n: int, rho: float, seed: int):
    """Human ratings and a judge correlated at about rho; labelled and unlabelled parts."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=n + big_n)
    y = 3 + z
    yhat = 3.2 + rho * z + math.sqrt(1 - rho**2) * rng.normal(size=n + big_n)
    return y[:n], yhat[:n], yhat[n:], y


def test_ppi_mean_is_ppi_pys_own_with_its_power_tuning():
    y, yhat, unl, _ = _pair(80, 2000, 0.7, 1)
    res = estimate_mean(y, yhat, unl, alpha=0.05, interval="normal")
    assert res.interval == "normal" and res.to_dict()["interval"] == "normal"
    lo, hi = ppi_py.ppi_mean_ci(y, yhat, unl, alpha=0.05)  # lam=None: ppi_py tunes lambda itself
    assert res.ppi.low == pytest.approx(float(np.ravel(lo)[0]), rel=1e-12)
    assert res.ppi.high == pytest.approx(float(np.ravel(hi)[0]), rel=1e-12)
    est = ppi_py.ppi_mean_pointestimate(y, yhat, unl)
    assert res.ppi.estimate == pytest.approx(float(np.ravel(est)[0]), rel=1e-12)
    assert 0 < res.lam < 1
    lo, hi = ppi_py.classical_mean_ci(y, alpha=0.05)
    assert (res.human_only.low, res.human_only.high) == pytest.approx((lo, hi))
    assert res.human_only.estimate == pytest.approx(y.mean())
    assert res.judge_only.estimate == pytest.approx(np.concatenate([yhat, unl]).mean())
    assert res.judge_only.low is None and "low" not in res.to_dict()["judge_only"]


def test_power_tuning_is_ppi_pys_with_weights():
    y, yhat, unl, _ = _pair(60, 500, 0.5, 2)
    w = np.random.default_rng(3).uniform(0.5, 2, size=60)
    lam = power_tuning(y, yhat, unl, w)
    lo, hi = ppi_py.ppi_mean_ci(y, yhat, unl, alpha=0.1, w=w)
    lo2, hi2 = ppi_py.ppi_mean_ci(y, yhat, unl, alpha=0.1, w=w, lam=lam)
    assert (float(np.ravel(lo)[0]), float(np.ravel(hi)[0])) == pytest.approx(
        (float(np.ravel(lo2)[0]), float(np.ravel(hi2)[0])), rel=1e-12)


def test_ppi_pys_example_a_judge_off_by_a_constant_is_fully_corrected():
    # ppi_py's tests/test_mean.py::test_ppi_mean_pointestimate: Yhat = Y + 2, unlabelled all 2 -> estimate 0
    y = np.random.default_rng(0).normal(0, 1, 100)
    res = estimate_mean(y, y + 2, np.ones(10000) * 2)
    assert res.ppi.estimate == pytest.approx(0.0, abs=1e-12)
    assert res.lam == 1.0


def test_a_useless_judge_gives_lambda_zero_and_the_labels_alone():
    y = np.array([1.0, 2, 3, 4, 5, 1, 2, 3, 4, 5])
    yhat = np.array([3.0, 3, 3, 3, 3, 3, 3, 3, 3, 3]) + np.array([0, 1, 0, 1, 0, 1, 0, 1, 0, 1]) * 0.0
    yhat = yhat - 0.1 * (y - 3)  # runs against the labels: covariance < 0, lambda clipped to 0
    res = estimate_mean(y, yhat, np.full(50, 3.0))
    assert res.lam == 0.0
    assert res.ppi.estimate == pytest.approx(y.mean())
    assert (res.ppi.low, res.ppi.high) == pytest.approx((res.human_only.low, res.human_only.high))
    assert any("lambda = 0" in n for n in res.notes)


def test_ppi_is_narrower_by_about_the_theory_for_a_good_judge():
    widths = []
    for seed in range(40):
        y, yhat, unl, _ = _pair(100, 20000, 0.8, seed)
        res = estimate_mean(y, yhat, unl)
        widths.append((res.ppi.high - res.ppi.low) / (res.human_only.high - res.human_only.low))
    assert np.median(widths) == pytest.approx(math.sqrt(1 - 0.8**2 * 20000 / 20100), abs=0.05)


def test_coverage_of_both_intervals_on_a_finite_pool():
    _, _, _, y_all = _pair(0, 1000, 0.7, 9)
    rng = np.random.default_rng(9)
    yhat_all = 3.2 + 0.7 * (y_all - 3) + math.sqrt(1 - 0.49) * rng.normal(size=1000)
    truth, hits = y_all.mean(), np.zeros(2)
    for _ in range(400):
        lab = rng.choice(1000, 60, replace=False)
        mask = np.zeros(1000, bool)
        mask[lab] = True
        res = estimate_mean(y_all[mask], yhat_all[mask], yhat_all[~mask])
        hits += [res.human_only.low <= truth <= res.human_only.high, res.ppi.low <= truth <= res.ppi.high]
    assert (hits / 400 >= 0.92).all()


def test_difference_adds_half_widths_in_quadrature():
    a = estimate_mean(*_pair(50, 400, 0.6, 1)[:3], interval="normal")
    b = estimate_mean(*_pair(50, 400, 0.6, 2)[:3], interval="normal")
    d = difference(a, b)
    hw = math.hypot(a.ppi.half_width, b.ppi.half_width)
    assert d["ppi"]["estimate"] == pytest.approx(a.ppi.estimate - b.ppi.estimate)
    assert d["ppi"]["high"] - d["ppi"]["estimate"] == pytest.approx(hw)
    assert d["judge_only"] == {"estimate": pytest.approx(a.judge_only.estimate - b.judge_only.estimate)}


def test_estimate_refuses_too_few_labels():
    with pytest.raises(ValueError, match="at least 2"):
        estimate_mean(np.array([1.0]), np.array([1.0]), np.ones(5))


# -- a score table ----------------------------------------------------------------------------


def _table(dims=("coherence",), docs=30, systems=("A", "B", "C"), seed=0, judge_scale=(0.0, 1.0)):
    """Human ratings on 1-5; the judge on 0-1, correlated with them; system B better by 0.5."""
    rng = np.random.default_rng(seed)
    rows = []
    for dim in dims:
        for d in range(docs):
            base = rng.normal()
            for s in systems:
                h = float(np.clip(3 + base + (0.5 if s == "B" else 0) + 0.5 * rng.normal(), 1, 5))
                j = (h - 1) / 4 + 0.1 * rng.normal()
                rows.append({"sample_id": f"d{d}:{s}", "doc_id": f"d{d}", "system_id": s, "dimension": dim,
                             "score": float(np.clip(j, *judge_scale)), "human": h})
    table = ScoreTable(frame=make_frame(rows), name="t")
    table.scales = {d: (1.0, 5.0, False) for d in dims}
    return table


def test_trust_on_a_table_maps_the_judge_to_the_human_scale_and_reports_systems():
    table = _table(dims=("coherence", "fluency"))
    labels = simulate_labels(table, 40, seed=1)
    assert len(labels.ratings["coherence"]) == 40 and labels.simulated
    rep = trust(table, labels, judge_scales={"coherence": (0.0, 1.0), "fluency": (0.0, 1.0)})
    row = rep["coherence"]
    assert row["n_labelled"] == 40 and row["n_unlabelled"] == 90 - 40
    frame = table.dim("coherence")
    assert row["all_labels"] == pytest.approx(frame["human"].mean())
    assert row["judge_only"]["estimate"] == pytest.approx((1 + 4 * frame["score"]).mean())
    assert row["ppi"]["low"] <= row["ppi"]["estimate"] <= row["ppi"]["high"]
    # on its own 0-1 scale the judge would need lambda ~ 4: clipped at 1, PPI would lose power
    raw = trust(table, labels, systems=False)["coherence"]
    assert raw["lambda"] == 1.0 and 0 < row["lambda"] < 1
    assert row["ppi"]["high"] - row["ppi"]["low"] < raw["ppi"]["high"] - raw["ppi"]["low"]
    assert any("taken as on the human scale" in n for n in raw["notes"])
    assert set(row["systems"]) == {"A", "B", "C"}
    assert {(d["a"], d["b"]) for d in row["differences"]} == {("A", "B"), ("A", "C"), ("B", "C")}
    ab = next(d for d in row["differences"] if (d["a"], d["b"]) == ("A", "B"))
    assert ab["same_inputs"] is True
    assert ab["ppi"]["estimate"] == pytest.approx(row["systems"]["A"]["ppi"]["estimate"]
                                                  - row["systems"]["B"]["ppi"]["estimate"])


def test_a_unit_the_judge_failed_enters_ppi_with_a_stand_in_and_a_note():
    table = _table()
    table.frame.loc[table.frame.index[:3], "score"] = np.nan
    rep = trust(table, simulate_labels(table, 30, seed=0), judge_scales={"coherence": (0.0, 1.0)}, systems=False)
    assert rep["coherence"]["n_labelled"] + rep["coherence"]["n_unlabelled"] == 90
    assert any("3 unit(s) the judge did not score" in n for n in rep["coherence"]["notes"])


def test_weighted_labels_use_inverse_probabilities_and_the_whole_pool():
    table = _table()
    frame = table.dim("coherence")
    ids = list(frame["sample_id"][:20])
    labels = Labels({"coherence": dict(zip(ids, frame["human"][:20], strict=True))},
                    inclusion={i: 0.5 if k % 2 else 0.25 for k, i in enumerate(ids)})
    rep = trust(table, labels, judge_scales={"coherence": (0.0, 1.0)}, systems=False, interval="normal")
    p = np.array([0.5 if k % 2 else 0.25 for k in range(20)])
    y = frame["human"].to_numpy()[:20]
    yhat = 1 + 4 * frame["score"].to_numpy()
    lo, hi = ppi_py.classical_mean_ci(y, w=1 / p, alpha=0.05)
    assert (rep["coherence"]["human_only"]["low"], rep["coherence"]["human_only"]["high"]) == pytest.approx((lo, hi))
    assert rep["coherence"]["n_unlabelled"] == 90  # the imputed term covers every unit
    lam = power_tuning(y, yhat[:20], yhat, 1 / p)
    lo, hi = ppi_py.ppi_mean_ci(y, yhat[:20], yhat, alpha=0.05, lam=lam, w=1 / p)
    assert rep["coherence"]["ppi"]["low"] == pytest.approx(float(np.ravel(lo)[0]))


def test_to_human_scale_is_linear_between_the_scales():
    assert to_human_scale(np.array([0.0, 0.5, 1.0]), (0.0, 1.0), (1.0, 3.0)).tolist() == [1.0, 2.0, 3.0]
    assert to_human_scale(np.array([2.0]), None, (1.0, 5.0)).tolist() == [2.0]


def test_simulate_labels_refuses_k_that_leaves_nothing_unlabelled():
    with pytest.raises(ValueError, match="choose 2 <= K < 90"):
        simulate_labels(_table(), 90)


# -- plans -------------------------------------------------------------------------------------


def test_labels_needed_human_only_is_the_classical_formula_and_ppi_matches_ppi_py():
    y, yhat, _, _ = _pair(200, 0, 0.8, 4)
    plan = labels_needed(y, yhat, width=0.1, pool=5000, price=2.0)
    sigma, rho = np.std(y), np.corrcoef(y, yhat)[0, 1]
    n0 = (1.959963984540054 * sigma / 0.1) ** 2
    assert plan["human_only"]["labels"] == math.ceil(n0)
    assert plan["human_only"]["cost"] == 2.0 * math.ceil(n0)
    # ppi_py's power analysis with the unlabelled set capped at the pool and predictions nearly free
    ref = ppi_py.ppi_power(rho, cost_X=0, cost_Y=1, cost_Yhat=1e-9, effective_n=n0, n_max=5000)
    assert plan["ppi"]["labels"] == pytest.approx(ref["n"], abs=1)
    assert plan["ppi"]["labels"] < plan["human_only"]["labels"]


def test_labels_needed_beyond_the_pool_is_infeasible():
    y, yhat, _, _ = _pair(50, 0, 0.3, 5)
    plan = labels_needed(y, yhat, width=0.01, pool=300)
    assert plan["human_only"] == {"labels": 300, "feasible": False, "cost": None}


def test_random_pick_is_seeded_with_equal_probabilities():
    import pandas as pd

    units = pd.DataFrame({"sample_id": [f"s{i}" for i in range(100)], "system_id": ["A", "B"] * 50,
                          "judge": np.linspace(1, 5, 100)})
    a, _ = pick(units, 10, seed=3)
    b, _ = pick(units, 10, seed=3)
    assert a["sample_id"].tolist() == b["sample_id"].tolist()
    assert (a["inclusion_probability"] == 0.1).all()


def test_stratified_pick_covers_every_stratum_with_its_probability():
    import pandas as pd

    units = pd.DataFrame({"sample_id": [f"s{i}" for i in range(90)], "system_id": ["A"] * 60 + ["B"] * 30,
                          "judge": np.tile(np.linspace(1, 5, 30), 3)})
    out, _ = pick(units, 18, strategy="stratified", seed=0)
    assert len(out) == 18
    assert out["stratum"].nunique() == 6  # 2 systems x 3 score bins (K allows about 3 labels a stratum)
    few, notes = pick(units, 12, strategy="stratified", seed=0)
    assert few["stratum"].nunique() == 4 and any("2 judge-score bin(s)" in n for n in notes)
    for stratum, part in out.groupby("stratum"):
        size = 20 if stratum.startswith("A") else 10
        assert part["inclusion_probability"].iloc[0] == pytest.approx(len(part) / size)


# -- calibration -------------------------------------------------------------------------------


def test_isotonic_map_pools_adjacent_violators_by_hand():
    fn = fit_map("isotonic", np.array([1.0, 2, 3, 4]), np.array([1.0, 3, 2, 4]))
    assert fn(np.array([1.0, 2, 3, 4, 10])).tolist() == [1.0, 2.5, 2.5, 4.0, 4.0]
    lin = fit_map("linear", np.array([0.0, 1, 2]), np.array([1.0, 3, 5]), (1.0, 4.0))
    assert lin(np.array([0.5, 5.0])).tolist() == [2.0, 4.0]


def test_calibration_is_cross_fitted_and_reports_a_gain_only_when_held_out_shows_one():
    rng = np.random.default_rng(0)
    y = rng.integers(1, 6, size=120).astype(float)
    x = 0.2 + 0.15 * y + 0.05 * rng.normal(size=120)  # a judge on the wrong scale, monotone in y
    res = calibrate("isotonic", x, y, np.append(x, np.nan), scale=(1.0, 5.0, True))
    assert res["after"]["mae"] < res["before"]["mae"] and res["improved"]
    assert "qwk" in res["after"] and res["after"]["qwk"] > 0.8
    assert np.isnan(res["calibrated"][-1])
    # a held-out value never comes from a map that saw its label: refit without sample 0 and compare
    fold = np.random.default_rng(0).permutation(120) % 5
    train = fold != fold[0]
    assert res["held_out"][0] == pytest.approx(fit_map("isotonic", x[train], y[train], (1.0, 5.0))(x[:1])[0])
    noise = calibrate("linear", rng.normal(size=40) + 3, rng.normal(size=40) + 3, np.zeros(3))
    assert noise["improved"] == (noise["after"]["mae"] < noise["before"]["mae"])


def test_held_out_metrics_by_hand():
    m = held_out_metrics(np.array([1.0, 2, 3]), np.array([1.0, 3, 3]), integer=True)
    assert m["mae"] == pytest.approx(1 / 3)
    assert "qwk" in m


# -- juries ------------------------------------------------------------------------------------


def test_equal_jury_is_the_mean_and_a_missing_member_is_explicit():
    scores = np.array([[1.0, 3.0], [2.0, np.nan], [4.0, 4.0]])
    res = combine(scores, ["a", "b"])
    assert res["score"][0] == 2.0 and np.isnan(res["score"][1]) and res["score"][2] == 4.0
    assert res["error"][1] == "jury: no score from b"
    part = combine(scores, ["a", "b"], missing="mean")
    assert part["score"][1] == 2.0 and part["partial"][1] == ["b"] and part["error"][1] is None
    assert any("fewer than 2 members" in n for n in part["notes"])


def test_learned_jury_recovers_weights_and_cross_fits():
    rng = np.random.default_rng(0)
    truth = rng.normal(3, 1, 200)
    good, bad = truth + 0.1 * rng.normal(size=200), rng.normal(3, 1, 200)
    labels = np.where(np.arange(200) < 100, truth, np.nan)
    res = combine(np.column_stack([good, bad]), ["good", "bad"], weights="learned", labels=labels)
    assert res["weights"][1] == pytest.approx(1.0, abs=0.05) and abs(res["weights"][2]) < 0.05
    assert np.all(np.isfinite(res["score"]))
    with pytest.raises(ValueError, match="learned weights need"):
        combine(np.column_stack([good, bad]), ["g", "b"], weights="learned", labels=np.full(200, np.nan))


def test_a_dimension_that_cannot_be_estimated_says_why_and_the_others_still_are():
    table = _table(dims=("coherence", "fluency"))
    frame = table.dim("coherence")
    ids = list(frame["sample_id"])
    labels = Labels({"coherence": {ids[0]: 3.0}, "fluency": dict.fromkeys(ids, 3.0)})
    rep = trust(table, labels, systems=False)
    assert "at least 2" in rep["coherence"]["error"] and rep["coherence"]["n_labelled"] == 1
    assert "every unit is labelled" in rep["fluency"]["error"]
    ok = Labels({"coherence": {i: 3.0 + (k % 3) for k, i in enumerate(ids[:10])}, "fluency": {ids[0]: 2.0}})
    rep = trust(table, ok, systems=False)
    assert rep["coherence"]["n_labelled"] == 10 and "error" in rep["fluency"]


def test_assess_refuses_both_or_neither_source_of_labels():
    from assay.errors import ConfigError
    from assay.meta import assess

    with pytest.raises(ConfigError, match="not both"):
        assess(_table(), human="x.csv", labels=10)
    with pytest.raises(ConfigError, match="not both"):
        assess(_table())
    with pytest.raises(ConfigError, match="--alpha"):
        assess(_table(), labels=10, alpha=1.5)
