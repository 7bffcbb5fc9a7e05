"""Significance across judges: Wilcoxon rank-sum and signed-rank on per-judge correlations, Benjamini-Hochberg.

CheckEval 2025 (table 2) compares the distributions of the per-judge average correlations of two
methods with the Wilcoxon rank-sum test and controls the false discovery rate over the family of
tests with the Benjamini-Hochberg procedure. When the same judges ran both methods, the paired
signed-rank test uses that pairing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["adjust_family", "benjamini_hochberg", "rank_sum", "signed_rank"]


def _clean(values: Sequence[float | None]) -> np.ndarray:
    arr = np.array([np.nan if v is None else v for v in values], dtype=float)
    return arr[~np.isnan(arr)]


def rank_sum(a: Sequence[float | None], b: Sequence[float | None]) -> dict[str, Any]:
    """Wilcoxon rank-sum test (two-sided, normal approximation as scipy's ``ranksums``) of two samples.

    Returns:
        ``{"test": "rank-sum", "statistic", "p_value", "n_a", "n_b"}``; NaN p when a side has fewer
        than two values (one judge per method is no distribution to compare, yet scipy would still
        give p = 0.32 for any two single values).
    """
    from scipy import stats

    x, y = _clean(a), _clean(b)
    if len(x) < 2 or len(y) < 2:
        return {"test": "rank-sum", "statistic": float("nan"), "p_value": float("nan"), "n_a": len(x), "n_b": len(y)}
    res = stats.ranksums(x, y)
    return {"test": "rank-sum", "statistic": float(res.statistic), "p_value": float(res.pvalue),
            "n_a": len(x), "n_b": len(y)}


def signed_rank(a: Mapping[str, float | None], b: Mapping[str, float | None]) -> dict[str, Any]:
    """Wilcoxon signed-rank test (two-sided) on the judges both methods share, paired by judge.

    Returns:
        ``{"test": "signed-rank", "statistic", "p_value", "n_pairs"}``; NaN p with fewer than two
        pairs or when every difference is zero (the test is undefined).
    """
    from scipy import stats

    keys = [k for k in a if k in b and a[k] is not None and b[k] is not None
            and not np.isnan(a[k]) and not np.isnan(b[k])]  # type: ignore[arg-type]
    x = np.array([a[k] for k in keys], dtype=float)
    y = np.array([b[k] for k in keys], dtype=float)
    if len(keys) < 2 or np.all(x == y):
        return {"test": "signed-rank", "statistic": float("nan"), "p_value": float("nan"), "n_pairs": len(keys)}
    res = stats.wilcoxon(x, y)
    return {"test": "signed-rank", "statistic": float(res.statistic), "p_value": float(res.pvalue),
            "n_pairs": len(keys)}


def benjamini_hochberg(p_values: Sequence[float], alpha: float = 0.05) -> dict[str, list[Any]]:
    """Benjamini-Hochberg adjustment over a family of tests (statsmodels ``fdr_bh``).

    NaN p-values (undefined tests) stay NaN and are not counted in the family.

    Returns:
        ``{"adjusted": [...], "reject": [...]}`` in the input order.
    """
    from statsmodels.stats.multitest import multipletests

    p = np.asarray(p_values, dtype=float)
    ok = ~np.isnan(p)
    adjusted = np.full(len(p), np.nan)
    reject = np.zeros(len(p), dtype=bool)
    if ok.any():
        rej, adj, _, _ = multipletests(p[ok], alpha=alpha, method="fdr_bh")
        adjusted[ok], reject[ok] = adj, rej
    return {"adjusted": [float(v) for v in adjusted], "reject": [bool(v) for v in reject]}


def adjust_family(tests: list[dict[str, Any]], alpha: float = 0.05) -> list[dict[str, Any]]:
    """Add ``p_adjusted`` and ``significant`` (BH over the whole list) to each test result."""
    bh = benjamini_hochberg([t["p_value"] for t in tests], alpha)
    return [{**t, "p_adjusted": adj, "significant": rej, "alpha": alpha}
            for t, adj, rej in zip(tests, bh["adjusted"], bh["reject"], strict=True)]
