"""Correlations at each level against hand-computed and published values (fixtures name their sources)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from assay.meta.correlation import (
    correlate,
    dataset_level,
    kendall_tau,
    level_correlation,
    per_document,
    sample_level,
    system_level,
)
from assay.meta.levels import correlation_rows
from assay.meta.table import ScoreTable, make_frame, normalise_level
from published import TESTS

GOLD = json.loads((TESTS / "fixtures" / "meta" / "correlation_golden.json").read_text())


def _frame(rows, dimension="coherence"):
    return make_frame([{"sample_id": f"{d}:{s}", "doc_id": d, "system_id": s, "dimension": dimension,
                        "score": sc, "human": h} for d, s, sc, h in rows])


@pytest.mark.parametrize("case", ["kendall_hollander_wolfe", "kendall_ties_by_hand"])
def test_kendall_variants_golden(case):
    c = GOLD[case]
    for variant, want in c["expected"].items():
        assert kendall_tau(c["x"], c["y"], variant) == pytest.approx(want, abs=1e-7), variant


def test_kendall_variants_differ_only_with_ties():
    c = GOLD["kendall_hollander_wolfe"]
    a, b, cc = (kendall_tau(c["x"], c["y"], v) for v in "abc")
    assert a == pytest.approx(b)
    t = GOLD["kendall_ties_by_hand"]
    assert kendall_tau(t["x"], t["y"], "a") < kendall_tau(t["x"], t["y"], "b") < kendall_tau(t["x"], t["y"], "c")
    assert 0 < cc < 1
    with pytest.raises(ValueError):
        kendall_tau([1, 2, 3], [1, 2, 3], "d")  # type: ignore[arg-type]


def test_sample_level_formula_by_hand():
    c = GOLD["sample_level_by_hand"]
    frame = _frame(c["rows"])
    rho = sample_level(frame, "spearman")
    tau = sample_level(frame, "kendall")
    assert rho["value"] == pytest.approx(c["expected"]["spearman"])
    assert tau["value"] == pytest.approx(c["expected"]["kendall"])
    assert (rho["n_units"], rho["skipped"]) == (c["expected"]["n_units"], c["expected"]["skipped"])
    per_doc = per_document(frame, "spearman")
    assert list(per_doc.index) == ["A", "B", "C", "D"]
    assert math.isnan(per_doc["C"]) and math.isnan(per_doc["D"])
    assert rho["n_items"] == 6  # only documents A and B contribute


def test_system_and_dataset_level_by_hand():
    rows = [r for r in GOLD["sample_level_by_hand"]["rows"] if r[0] in ("A", "B")]
    frame = _frame(rows)
    sys_ = system_level(frame, "pearson")
    assert sys_["value"] == pytest.approx(GOLD["system_level_by_hand"]["expected"]["pearson"])
    assert sys_["n_units"] == 3
    pooled = dataset_level(frame, "pearson")
    assert pooled["n_units"] == 6
    assert pooled["value"] == pytest.approx(np.corrcoef([1, 2, 3, 2, 4, 6], [1, 3, 2, 3, 2, 1])[0, 1])


def test_levels_have_aliases_and_undefined_is_nan():
    assert normalise_level("turn") == "dataset" and normalise_level("summary") == "sample"
    with pytest.raises(ValueError):
        normalise_level("corpus")
    assert math.isnan(correlate([1, 1, 1], [1, 2, 3], "pearson"))
    assert math.isnan(correlate([1], [2], "spearman"))
    frame = _frame([("A", "s1", 1, 2)])
    assert math.isnan(level_correlation(frame, "turn", "spearman")["value"])


def test_correlation_rows_average_and_coverage():
    rows = GOLD["sample_level_by_hand"]["rows"]
    frame = make_frame([*_frame(rows, "coherence").to_dict("records"),
                        *_frame([(d, s, None if sc is None else -sc, h) for d, s, sc, h in rows],
                                "fluency").to_dict("records")])
    table = ScoreTable(frame=frame, name="t")
    out = correlation_rows(table, "sample", ["spearman"], ["coherence", "fluency"])
    by = {r["dimension"]: r for r in out}
    assert by["fluency"]["spearman"] == pytest.approx(0.25)  # negated scores flip each document's rho
    assert by["average"]["spearman"] == pytest.approx(0.0)
    assert by["coherence"]["coverage"] == pytest.approx(10 / 11)
    assert by["average"]["scored"] == 20 and by["average"]["items"] == 22


def test_two_points_are_no_correlation():
    # two points always correlate at +1 or -1: a document with two rated outputs is skipped, not averaged in
    for m in ("pearson", "spearman", "kendall"):
        assert math.isnan(correlate([1, 2], [2, 1], m))
    assert correlate([1, 2, 3], [3, 1, 2], "pearson") == pytest.approx(-0.5)  # three points are enough
    frame = _frame([("A", "s1", 1, 1), ("A", "s2", 2, 3), ("A", "s3", 3, 2), ("B", "s1", 1, 2), ("B", "s2", 2, 1)])
    res = sample_level(frame, "spearman")
    assert (res["n_units"], res["skipped"]) == (1, 1) and res["value"] == pytest.approx(0.5)
    assert math.isnan(system_level(frame[frame["system_id"] != "s3"], "pearson")["value"])  # two systems


def test_kendall_variant_reaches_the_table():
    from assay.meta.evaluate import meta_evaluate

    rows = [("A", f"s{i}", sc, h) for i, (sc, h) in enumerate([(1, 1), (1, 2), (2, 2), (3, 2), (3, 3), (4, 5)])]
    table = ScoreTable(frame=_frame(rows), name="t")
    taus = {v: meta_evaluate(table, level="dataset", measures=["kendall"], variant=v) for v in "abc"}
    x, y = [r[2] for r in rows], [r[3] for r in rows]
    for v, res in taus.items():
        assert res["kendall_variant"] == v
        assert res["rows"][0]["kendall"] == pytest.approx(kendall_tau(x, y, v))
    assert taus["a"]["rows"][0]["kendall"] < taus["b"]["rows"][0]["kendall"]  # ties lower tau-a


@pytest.mark.parametrize("measure,variant", [("pearson", "b"), ("spearman", "b"), ("kendall", "b"),
                                             ("kendall", "c"), ("kendall", "a")])
def test_per_document_computed_along_rows_equals_each_document_alone(measure, variant):
    """Documents of equal size are computed together; each value must equal scipy's on that document alone, and
    documents that have no correlation (constant scores, fewer than three pairs, failed units) must stay NaN."""
    rng = np.random.default_rng(7)
    rows = []
    for d in range(60):
        n = (16, 16, 16, 12, 5, 2)[d % 6]  # mostly equal sizes, some smaller, one below MIN_PAIRS
        scores = rng.integers(1, 6, n).astype(float)  # ties, as judges' integer scores have
        if d % 10 == 3:
            scores[:] = 4.0  # a constant document
        human = np.round(rng.normal(3, 1, n), 1)
        if d % 7 == 0:
            scores[0] = np.nan  # a failed unit: left out of that document's pairs
        rows += [{"doc_id": f"d{d}", "system_id": f"s{i}", "score": s, "human": h}
                 for i, (s, h) in enumerate(zip(scores, human, strict=True))]
    frame = pd.DataFrame(rows)
    got = per_document(frame, measure, variant)
    want = {doc: correlate(g.dropna()["score"], g.dropna()["human"], measure, variant)
            for doc, g in frame.groupby("doc_id", sort=False)}
    assert list(got.index) == list(want)
    np.testing.assert_allclose(got.to_numpy(), np.array(list(want.values())), rtol=1e-12, atol=1e-12)
    assert got.isna().sum() == sum(np.isnan(v) for v in want.values()) > 0
