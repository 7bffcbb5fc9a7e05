"""Bootstrap, significance, stability, quality split and the human ceiling."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from assay.meta.bootstrap import bootstrap_intervals, paired_bootstrap
from assay.meta.compare import compare, fleiss_rule_for, rater_labels
from assay.meta.correlation import level_correlation
from assay.meta.human import annotator_matrix, human_agreement
from assay.meta.quality_split import quality_split
from assay.meta.significance import adjust_family, benjamini_hochberg, rank_sum, signed_rank
from assay.meta.stability import density, stability
from assay.meta.table import ScoreTable, make_frame
from published import TESTS

GOLD = json.loads((TESTS / "fixtures" / "meta" / "correlation_golden.json").read_text())


def _synthetic(noise: float, seed: int, docs: int = 12, systems: int = 6, dims=("coherence", "fluency")):
    """Human ratings 1-5 and a score = human + noise, per (doc, system, dimension)."""
    rng = np.random.default_rng(seed)
    human_rng = np.random.default_rng(1234)  # the same human ratings for every method
    rows = []
    for dim in dims:
        for d in range(docs):
            for s in range(systems):
                h = float(human_rng.integers(1, 6))
                rows.append({"sample_id": f"d{d}:s{s}", "doc_id": f"d{d}", "system_id": f"s{s}", "dimension": dim,
                             "score": h + noise * rng.normal(), "human": h})
    return make_frame(rows)


def _frames(frame):
    return {d: frame[frame["dimension"] == d] for d in dict.fromkeys(frame["dimension"])}


def test_benjamini_hochberg_by_hand():
    c = GOLD["benjamini_hochberg_by_hand"]
    out = benjamini_hochberg(c["p"], 0.05)
    assert out["adjusted"] == pytest.approx(c["adjusted"])
    assert out["reject"] == c["reject"]
    with_nan = benjamini_hochberg([*c["p"], float("nan")])
    assert math.isnan(with_nan["adjusted"][-1]) and with_nan["adjusted"][:5] == pytest.approx(c["adjusted"])


def test_rank_sum_and_signed_rank():
    far = rank_sum([0.6, 0.62, 0.58, 0.65, 0.61, 0.63], [0.3, 0.32, 0.28, 0.35, 0.31, 0.29])
    near = rank_sum([0.5, 0.4, 0.6], [0.45, 0.55, 0.5])
    assert far["p_value"] < 0.01 < near["p_value"]
    paired = signed_rank({"j1": 0.5, "j2": 0.6, "j3": 0.7, "j4": 0.4, "j5": 0.55, "j6": 0.65},
                         {"j1": 0.4, "j2": 0.5, "j3": 0.6, "j4": 0.3, "j5": 0.45, "j6": 0.5, "other": 0.9})
    assert paired["n_pairs"] == 6 and paired["p_value"] == pytest.approx(0.03125)  # exact: 2 / 2^6
    assert math.isnan(signed_rank({"a": 0.5}, {"a": 0.4})["p_value"])
    fam = adjust_family([far, near])
    assert fam[0]["significant"] and not fam[1]["significant"]
    assert fam[0]["p_adjusted"] >= fam[0]["p_value"]


def test_stability_and_density():
    s = stability({"a": 0.5, "b": 0.7, "c": None, "d": 0.6})
    assert s["n"] == 3 and s["mean"] == pytest.approx(0.6) and s["variance"] == pytest.approx(0.01)
    assert stability([0.5, 0.7], ddof=0)["variance"] == pytest.approx(0.01)
    d = density([0.5, 0.7, 0.6])
    assert d["y"] is not None and np.trapezoid(d["y"], d["x"]) == pytest.approx(1.0, abs=0.02)
    assert density([0.5])["y"] is None


def test_bootstrap_intervals_are_seeded_and_bracket_the_estimate():
    frame = _synthetic(noise=1.0, seed=0)
    frames = _frames(frame)
    a = bootstrap_intervals(frames, "sample", ["spearman"], n_boot=300, seed=7)
    b = bootstrap_intervals(frames, "sample", ["spearman"], n_boot=300, seed=7)
    c = bootstrap_intervals(frames, "sample", ["spearman"], n_boot=300, seed=8)
    assert a == b and a["intervals"] != c["intervals"]
    assert a["unit"] == "document" and a["n_units"] == 12
    point = level_correlation(frames["coherence"], "sample", "spearman")["value"]
    lo, hi = a["intervals"]["coherence"]["spearman"]
    assert lo < point < hi
    wide = bootstrap_intervals(frames, "dataset", ["pearson"], n_boot=300, seed=7)
    assert wide["unit"] == "item" and wide["n_units"] == 72
    lo2, hi2 = wide["intervals"]["average"]["pearson"]
    assert lo2 < hi2 and hi2 - lo2 < hi - lo  # 72 pooled items pin the value down more than 12 documents


def test_paired_bootstrap_detects_a_better_method():
    good, bad = _frames(_synthetic(0.5, seed=1)), _frames(_synthetic(3.0, seed=2))
    res = paired_bootstrap(good, bad, "dataset", "spearman", n_boot=500, seed=0)
    assert res["tests"]["average"]["delta"] > 0.2
    assert res["tests"]["average"]["p_value"] < 0.01
    same = paired_bootstrap(good, good, "sample", "spearman", n_boot=200, seed=0)
    assert same["tests"]["coherence"]["delta"] == 0 and same["tests"]["coherence"]["p_value"] == 1.0


def test_paired_bootstrap_uses_common_items_only():
    good, bad = _synthetic(0.5, seed=1), _synthetic(3.0, seed=2)
    bad.loc[bad["sample_id"].str.startswith("d0:"), "score"] = np.nan  # B failed on document d0
    res = paired_bootstrap(_frames(good), _frames(bad), "dataset", "pearson", n_boot=50, seed=0)
    assert res["tests"]["coherence"]["n_items"] == 66


def test_quality_split_uses_scale_midpoint_or_given_threshold():
    table = ScoreTable(frame=_synthetic(1.0, seed=3), name="t", scales={"coherence": (1, 5, True)})
    rows = {r["dimension"]: r for r in quality_split(table, "dataset", ["spearman"], thresholds={"fluency": 4})}
    assert rows["coherence"]["threshold"] == 3 and "midpoint" in rows["coherence"]["rule"]
    assert rows["fluency"]["threshold"] == 4 and rows["fluency"]["rule"] == "given"
    coh = table.dim("coherence")
    assert rows["coherence"]["high"]["items"] == int((coh["human"] >= 3).sum())
    assert rows["coherence"]["low"]["items"] == int((coh["human"] < 3).sum())


def test_human_agreement_from_annotators():
    ann = {"a": {"coherence": [1, 2, 1]}, "b": {"coherence": [4, 5, 4]}, "c": {"coherence": [3, 3]},
           "d": {"fluency": [2, 2, 2]}}
    mat, ids = annotator_matrix(ann, "coherence")
    assert ids == ["a", "b", "c"] and mat.shape == (3, 3) and math.isnan(mat[2, 2])
    rows = human_agreement(ann, ["coherence"], scales={"coherence": (1, 5, True)})
    assert rows[0]["n_complete"] == 2 and rows[0]["alpha_interval"] > 0.7
    assert "nearest scale value" in rows[0]["fleiss_rule"]


def test_fleiss_rule_choice():
    assert fleiss_rule_for(np.array([1.0, 2.0, 3.0]), (1, 5, True)) == {}
    assert fleiss_rule_for(np.array([1.2, 2.7]), (1, 5, True)) == {"categories": [1, 2, 3, 4, 5]}
    assert fleiss_rule_for(np.array([0.2, 0.7]), None)["bins"][0] == pytest.approx(0.2)
    assert fleiss_rule_for(np.array([0.2, 0.7]), None, bins=[0, 1]) == {"bins": [0, 1]}


def _table(name, method, judge, noise, seed):
    return ScoreTable(frame=_synthetic(noise, seed), name=name, method=method, judge=judge,
                      scales={"coherence": (1, 5, True), "fluency": (1, 5, True)})


def test_compare_methods_by_judges():
    tables = [_table(f"{m}-{j}", m, j, noise, seed)
              for m, noise in (("checklist", 0.6), ("likert", 2.5))
              for seed, j in enumerate(["small:a", "small:b", "large:c", "large:d", "large:e"])]
    res = compare(tables, groups={"Small": ["small:a", "small:b"], "Large": ["large:c", "large:d", "large:e"],
                                  "Solo": ["large:e"]},
                  level="sample", measures=["spearman", "kendall"], bootstrap=100)
    assert len(res["notes"]) == 2 and all("'Solo'" in n for n in res["notes"])  # one per method, never silent
    assert [r["label"] for r in res["runs"]][:2] == ["small:a", "small:b"]
    groups = {(r["method"], r["group"], r["dimension"]): r for r in res["agreement"]}
    assert set(groups) == {(m, g, d) for m in ("checklist", "likert") for g in ("Small", "Large")
                           for d in ("coherence", "fluency")}
    assert groups[("checklist", "Large", "coherence")]["alpha_interval"] > groups[("likert", "Large",
                                                                                   "coherence")]["alpha_interval"]
    assert groups[("checklist", "Large", "coherence")]["n_raters"] == 3
    rank = next(t for t in res["significance"] if t["test"] == "rank-sum" and t["measure"] == "spearman")
    assert rank["p_value"] < 0.05 and rank["significant"]
    assert len(res["significance"]) == 4  # rank-sum and signed-rank x 2 measures, one BH family
    stab = {(r["method"], r["measure"]): r for r in res["stability"] if r["dimension"] == "average"}
    assert stab[("checklist", "spearman")]["mean"] > stab[("likert", "spearman")]["mean"]
    assert stab[("checklist", "spearman")]["n"] == 5 and stab[("checklist", "spearman")]["density"]["y"]
    assert len(res["paired_bootstrap"]) == 5  # one per judge shared by the two methods


def test_rater_labels_fall_back_to_run_names_for_repeated_runs():
    tables = [_table("run1", "geval", "j:x", 1, 0), _table("run2", "geval", "j:x", 1, 1),
              _table("run3", "geval", "j:y", 1, 2)]
    assert rater_labels(tables) == ["run1", "run2", "j:y"]


def test_bootstrap_counts_resamples_without_a_correlation():
    # one item carries all the variance: resamples that miss it have constant scores
    rows = [{"sample_id": f"i{i}", "doc_id": f"i{i}", "system_id": "s", "dimension": "d",
             "score": 3.0 if i == 0 else 1.0, "human": float(1 + i % 3)} for i in range(10)]
    res = bootstrap_intervals({"d": make_frame(rows)}, "dataset", ["pearson"], n_boot=200, seed=0)
    # P(item 0 never drawn in 10 draws) = 0.9^10 = 0.35
    assert 40 < res["undefined"]["d"]["pearson"] < 100
    assert res["intervals"]["d"]["pearson"] is not None


def test_rank_sum_needs_two_judges_per_method():
    # scipy would give p = 0.317 for any two single values; one judge per method is no distribution
    one = rank_sum([0.9], [0.1])
    assert math.isnan(one["p_value"]) and (one["n_a"], one["n_b"]) == (1, 1)
    assert adjust_family([one, rank_sum([0.6, 0.7, 0.65], [0.1, 0.2, 0.15])])[1]["p_adjusted"] == pytest.approx(
        rank_sum([0.6, 0.7, 0.65], [0.1, 0.2, 0.15])["p_value"])  # the undefined test is not in the family


def test_sample_level_bootstrap_resamples_whole_documents():
    from assay.meta.bootstrap import resample_indices
    from assay.meta.correlation import per_document

    frames = _frames(_synthetic(noise=1.5, seed=4, docs=8))
    res = bootstrap_intervals({"coherence": frames["coherence"]}, "sample", ["kendall"], n_boot=150, seed=11)
    per_doc = per_document(frames["coherence"], "kendall").to_numpy()
    draws = resample_indices(8, 150, 11)  # the same seeded draws of document positions
    means = np.array([np.nanmean(per_doc[row]) for row in draws])
    assert res["intervals"]["coherence"]["kendall"] == pytest.approx(list(np.percentile(means, [2.5, 97.5])))
    assert res["seed"] == 11 and res["unit"] == "document"
