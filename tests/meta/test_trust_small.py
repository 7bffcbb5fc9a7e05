"""The small-sample intervals (Student-t, bootstrap-t, Hall's transformation) around ppi_py's estimates."""

from __future__ import annotations

import math

import numpy as np
import pytest

ppi_py = pytest.importorskip("ppi_py")

from assay.meta.trust import Interval, MeanEstimate, difference, estimate_mean, labels_needed  # noqa: E402
from assay.meta.trust.ppi import choose_interval  # noqa: E402
from assay.meta.trust.small import bounds  # noqa: E402


def _skewed(n: int, seed: int) -> np.ndarray:
    """Ratings piled at the top of a 1-5 scale, as SummEval's fluency and consistency are (long left tail)."""
    return np.random.default_rng(seed).choice([1.0, 2, 3, 4, 5], size=n, p=[0.04, 0.04, 0.07, 0.15, 0.70])


def test_t_interval_by_hand():
    y = np.array([1.0, 2, 3, 4, 5, 5])
    res = estimate_mean(y, y, np.full(10, 3.0), interval="t")
    # mean 20/6; ppi_py's standard error: population sd sqrt(13.333/6) over sqrt(6) = 0.608581; t(5, 0.975) = 2.570582
    assert res.human_only.estimate == pytest.approx(3.333333, abs=1e-6)
    assert (res.human_only.low, res.human_only.high) == pytest.approx((1.768918, 4.897749), abs=1e-5)
    assert res.interval == "t" and res.to_dict()["interval"] == "t"


def test_bootstrap_t_is_asymmetric_on_skewed_ratings_and_seeded():
    y = _skewed(40, 1)
    yhat = y + np.random.default_rng(2).normal(0, 1, 40)
    unl = np.random.default_rng(3).normal(4.3, 1, 1000)
    a = estimate_mean(y, yhat, unl, interval="bootstrap-t", seed=5)
    iv = a.human_only
    assert iv.estimate - iv.low > 1.15 * (iv.high - iv.estimate)  # the long arm points at the long tail
    checked = 0
    for seed in range(4):  # PPI's terms y - lambda * yhat: the long arm follows their own skewness
        y2 = _skewed(40, 1 + seed)
        yhat2 = y2 + np.random.default_rng(2 + seed).normal(0, 1, 40)
        res = estimate_mean(y2, yhat2, unl, interval="bootstrap-t", seed=5)
        terms = y2 - res.lam * yhat2
        skew = np.mean((terms - terms.mean()) ** 3) / np.std(terms) ** 3
        arms = (res.ppi.estimate - res.ppi.low) / (res.ppi.high - res.ppi.estimate)
        if abs(skew) > 0.15:  # a clear skew either way (not resampling noise around a symmetric sample)
            assert (arms > 1) == (skew < 0), (seed, arms, skew)
            checked += 1
    assert checked >= 2
    b = estimate_mean(y, yhat, unl, interval="bootstrap-t", seed=5)
    assert (b.human_only.low, b.ppi.high) == (a.human_only.low, a.ppi.high)
    c = estimate_mean(y, yhat, unl, interval="bootstrap-t", seed=6)
    assert c.human_only.low != a.human_only.low
    assert c.human_only.low == pytest.approx(a.human_only.low, abs=0.1)  # resampling noise (sd ~0.03 here)
    normal = estimate_mean(y, yhat, unl, interval="normal")
    assert a.human_only.estimate == normal.human_only.estimate and a.ppi.estimate == normal.ppi.estimate
    assert a.human_only.low < normal.human_only.low  # widened where the normal interval undercovers


def test_hall_is_asymmetric_the_same_way_and_needs_no_seed():
    y = _skewed(40, 1)
    res = estimate_mean(y, y, np.full(500, 4.3), interval="hall")
    iv = res.human_only
    assert iv.estimate - iv.low > 1.15 * (iv.high - iv.estimate)
    assert (iv.low, iv.high) == (estimate_mean(y, y, np.full(500, 4.3), interval="hall", seed=9).human_only.low,
                                 iv.high)


def test_hall_is_the_normal_interval_on_symmetric_terms():
    terms = np.array([[1.0, 2, 3, 4, 5]])
    est, se = np.array([3.0]), np.array([math.sqrt(2 / 5)])
    hall = np.concatenate(bounds(est, se, 5, alpha=0.05, kind="hall", terms=terms))
    assert hall == pytest.approx(np.concatenate(bounds(est, se, 5, alpha=0.05, kind="normal")))


@pytest.mark.parametrize("kind", ["bootstrap-t", "hall"])
def test_small_sample_intervals_become_the_normal_one_with_many_labels(kind):
    y = _skewed(4000, 4)
    yhat = y + np.random.default_rng(5).normal(0, 1, 4000)
    unl = np.random.default_rng(6).normal(4.3, 1, 20000)
    small = estimate_mean(y, yhat, unl, interval=kind)
    normal = estimate_mean(y, yhat, unl, interval="normal")
    for got, want in ((small.human_only, normal.human_only), (small.ppi, normal.ppi)):
        hw = want.half_width
        assert abs(got.low - want.low) < 0.08 * hw and abs(got.high - want.high) < 0.08 * hw


def test_small_sample_intervals_cover_skewed_ratings_where_the_normal_one_does_not():
    pool = _skewed(1200, 7)
    rng = np.random.default_rng(8)
    hits = {"normal": 0, "bootstrap-t": 0, "hall": 0}
    for b in range(300):
        pick = rng.choice(1200, 25, replace=False)
        mask = np.zeros(1200, bool)
        mask[pick] = True
        for kind in hits:
            res = estimate_mean(pool[mask], pool[mask], np.full(5, 4.0), interval=kind, seed=b, scale=(1.0, 5.0))
            iv = res.human_only
            hits[kind] += iv.low is not None and iv.low <= pool.mean() <= iv.high
    assert hits["normal"] / 300 < 0.935  # the failure the small-sample layer is for
    assert hits["bootstrap-t"] / 300 >= 0.935 and hits["hall"] / 300 >= 0.935


def test_auto_takes_bootstrap_t_below_200_labels_and_normal_from_there():
    assert choose_interval("auto", 199) == "bootstrap-t" and choose_interval("auto", 200) == "normal"
    assert choose_interval("t", 5000) == "t"
    with pytest.raises(ValueError, match="choose one of"):
        choose_interval("wald", 10)
    y = _skewed(60, 2)
    assert estimate_mean(y, y, np.full(50, 4.0)).interval == "bootstrap-t"


def test_labels_without_spread_get_no_interval_and_say_why():
    y = np.full(9, 5.0)
    res = estimate_mean(y, y - 0.5, np.full(40, 4.5), interval="bootstrap-t")
    assert res.human_only.low is None and res.ppi.low is None
    assert set(res.to_dict()["human_only"]) == {"estimate"}
    assert any("all 9 labels are 5: no interval" in n for n in res.notes)
    other = estimate_mean(_skewed(9, 3), _skewed(9, 3), np.full(40, 4.5), interval="bootstrap-t")
    d = difference(res, other)
    assert set(d["ppi"]) == {"estimate"}


def test_an_open_bootstrap_tail_is_closed_by_the_scale():
    y = np.array([5.0, 5, 5, 5, 5, 5, 5, 1])  # most resamples of 8 hold the 1 at most once: the lower tail is open
    open_ = estimate_mean(y, y, np.full(30, 4.5), interval="bootstrap-t")
    closed = estimate_mean(y, y, np.full(30, 4.5), interval="bootstrap-t", scale=(1.0, 5.0))
    assert open_.human_only.low is None and any("open on one side" in n for n in open_.notes)
    assert closed.human_only.low == 1.0 and closed.human_only.high <= 5.0


def test_difference_keeps_each_side_of_asymmetric_intervals():
    def est(e, lo, hi):
        return MeanEstimate(Interval(e, lo, hi), Interval(e, lo, hi), Interval(e), 10, 90, 0.0, 0.0, "bootstrap-t")

    d = difference(est(4.0, 3.0, 4.2), est(3.0, 2.6, 3.1))
    assert d["human_only"]["estimate"] == pytest.approx(1.0)
    assert d["human_only"]["low"] == pytest.approx(1.0 - math.hypot(1.0, 0.1))  # a's lower arm, b's upper arm
    assert d["human_only"]["high"] == pytest.approx(1.0 + math.hypot(0.2, 0.4))  # a's upper arm, b's lower arm
    assert d["interval"] == "bootstrap-t"


def test_plan_with_students_t_needs_a_few_more_labels_than_normal():
    rng = np.random.default_rng(0)
    y = rng.normal(3, 1, 50)
    normal = labels_needed(y, y + rng.normal(0, 1, 50), width=0.3, pool=2000)
    t = labels_needed(y, y + rng.normal(0, 1, 50), width=0.3, pool=2000, interval="t")
    n = t["human_only"]["labels"]
    from scipy.stats import t as student

    assert student.ppf(0.975, n - 1) * t["sigma"] / math.sqrt(n) <= 0.3  # the planned n reaches the width ...
    assert student.ppf(0.975, n - 2) * t["sigma"] / math.sqrt(n - 1) > 0.3  # ... and one fewer does not
    assert normal["human_only"]["labels"] < n and t["interval"] == "t" and normal["interval"] == "normal"
    boot = labels_needed(y, y, width=0.3, pool=2000, interval="bootstrap-t")
    assert boot["interval"] == "t" and "no closed-form width" in boot["notes"][0]
