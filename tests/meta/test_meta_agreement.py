"""Agreement measures against published values (fixtures name their sources) and the categorisation rules."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from assay.meta.agreement import (
    agreement_row,
    categorize,
    fleiss_kappa,
    group_agreement,
    icc,
    krippendorff_alpha,
    ratings_matrix,
)
from published import TESTS

GOLD = json.loads((TESTS / "fixtures" / "meta" / "agreement_golden.json").read_text())


def _nan(rows):
    return np.array([[np.nan if v is None else v for v in r] for r in rows], dtype=float)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_krippendorff_worked_example(level):
    case = GOLD["krippendorff_2011"]
    got = krippendorff_alpha(_nan(case["ratings"]), level=level)
    assert round(got, case["decimals"]) == case["expected"][level]


def test_fleiss_1971_diagnoses():
    case = GOLD["fleiss_1971"]
    ratings = np.array(case["ratings_items_by_raters"]).T  # -> [raters, items]
    assert round(fleiss_kappa(ratings, categories=case["categories"]), 3) == case["expected"]
    # integer scores need no rule: each distinct value is a category
    assert round(fleiss_kappa(ratings), 3) == case["expected"]


def test_fleiss_wikipedia_counts():
    case = GOLD["fleiss_wikipedia"]
    columns = []
    for counts in case["counts_items_by_categories"]:
        columns.append([cat + 1 for cat, n in enumerate(counts) for _ in range(n)])
    ratings = np.array(columns).T  # 14 raters x 10 items
    assert ratings.shape == (14, 10)
    assert round(fleiss_kappa(ratings, categories=[1, 2, 3, 4, 5]), 3) == case["expected"]


def test_icc_shrout_fleiss():
    case = GOLD["shrout_fleiss_1979"]
    out = icc(np.array(case["ratings_targets_by_judges"]).T)
    assert round(out["icc2_1"], 2) == case["expected"]["icc2_1"]
    assert round(out["icc2_k"], 2) == case["expected"]["icc2_k"]
    assert (out["n_raters"], out["n_items"]) == (4, 6)


def test_icc_drops_items_with_missing_ratings():
    case = GOLD["shrout_fleiss_1979"]
    base = np.array(case["ratings_targets_by_judges"], dtype=float).T
    extra = np.column_stack([base, [1.0, np.nan, 3.0, 2.0]])
    assert icc(extra)["icc2_1"] == pytest.approx(icc(base)["icc2_1"])
    assert icc(extra)["n_items"] == 6


def test_categorize_rules():
    r = np.array([[1.2, 2.5, 4.9, np.nan], [1.0, 3.4, 5.0, 2.0]])
    codes, labels, rule = categorize(r, categories=[1, 2, 3, 4, 5])
    assert labels == ["1", "2", "3", "4", "5"]
    assert codes.tolist() == [[0, 1, 4, -1], [0, 2, 4, 1]]  # 2.5 ties to the lower value
    assert "nearest" in rule
    codes, labels, rule = categorize(np.array([[0.0, 0.3, 0.99, 1.0, 1.7]]), bins=[0, 0.5, 1])
    assert codes.tolist() == [[0, 0, 1, 1, 1]]  # 1.0 in the closed last bin, 1.7 clipped
    assert labels == ["[0,0.5)", "[0.5,1]"]
    with pytest.raises(ValueError, match="bins"):
        categorize(np.array([[0.5, 1.5], [1.0, 2.0]]))


def test_fleiss_continuous_needs_rule_and_binning_changes_result():
    r = np.array([[0.1, 0.4, 0.9, 0.6], [0.2, 0.45, 0.8, 0.1]])
    with pytest.raises(ValueError):
        fleiss_kappa(r)
    # bins -> items [2,0] [2,0] [0,2] [1,1]: P = 0.75, Pe = (5/8)^2 + (3/8)^2, kappa = 7/15
    assert fleiss_kappa(r, bins=[0, 0.5, 1]) == pytest.approx(7 / 15)
    row = agreement_row(r)
    assert math.isnan(row["fleiss_kappa"]) and row["fleiss_rule"].startswith("not computed")


def test_undefined_cases_are_nan():
    assert math.isnan(krippendorff_alpha([[3, 3, 3], [3, 3, 3]]))
    assert math.isnan(krippendorff_alpha([[1, 2, 3]]))
    assert math.isnan(icc([[2, 2], [2, 2]])["icc2_1"])
    assert math.isnan(fleiss_kappa([[1, 1, 1], [1, 1, 1]]))


def test_perfect_agreement_is_one():
    r = [[1, 2, 3, 4, 5], [1, 2, 3, 4, 5], [1, 2, 3, 4, 5]]
    assert krippendorff_alpha(r) == pytest.approx(1.0)
    assert fleiss_kappa(r) == pytest.approx(1.0)
    assert icc(r)["icc2_1"] == pytest.approx(1.0)


def test_group_agreement_and_alignment():
    scores = {"a": {"x": 1, "y": 2, "z": 3}, "b": {"x": 1, "y": 2, "z": 3, "w": 5}, "c": {"x": 3, "y": 1, "z": 2}}
    mat, raters, items = ratings_matrix(scores)
    assert items == ["w", "x", "y", "z"] and raters == ["a", "b", "c"]
    assert np.isnan(mat[0, 0]) and mat[1, 0] == 5
    rows = group_agreement(scores, {"pair": ["a", "b"], "all": ["a", "b", "c"]}, categories=[1, 2, 3, 4, 5])
    assert [r["group"] for r in rows] == ["pair", "all"]
    assert rows[0]["alpha_interval"] == pytest.approx(1.0)
    assert rows[1]["alpha_interval"] < rows[0]["alpha_interval"]
    assert rows[0]["n_complete"] == 3
    with pytest.raises(KeyError, match="nobody"):
        group_agreement(scores, {"g": ["a", "nobody"]})
