"""Inter-evaluator agreement: Krippendorff's alpha, Fleiss' kappa and ICC(2,1)/ICC(2,k), alone or per named judge group.

Every function takes ``ratings`` shaped ``[n_raters, n_items]`` (a rater is a judge, a repeated run
of one judge, or a human annotator), with NaN for a missing rating. The papers compare the judges'
agreement with the human annotators' (CheckEval 2025 tables 3 and 12-14, GER-Eval table 13), so the
same functions serve both.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np

AlphaLevel = Literal["interval", "ordinal", "nominal"]

__all__ = [
    "AlphaLevel", "agreement_row", "categorize", "fleiss_kappa", "group_agreement", "icc",
    "krippendorff_alpha", "ratings_matrix",
]


def _as_matrix(ratings: Any) -> np.ndarray:
    arr = np.asarray(ratings, dtype=float)
    if arr.ndim != 2:
        raise ValueError(f"ratings must be 2-D [n_raters, n_items], got shape {arr.shape}")
    return arr


def _complete_items(arr: np.ndarray) -> np.ndarray:
    """The items (columns) every rater scored; Fleiss and ICC need a full rater x item table."""
    return arr[:, ~np.isnan(arr).any(axis=0)]


def krippendorff_alpha(ratings: Any, level: AlphaLevel = "interval") -> float:
    """Krippendorff's alpha, which tolerates missing ratings and any number of raters.

    Args:
        ratings: Array-like ``[n_raters, n_items]``; NaN marks a missing rating.
        level: ``"interval"`` (squared difference), ``"ordinal"`` (rank-based distance over the
            observed values) or ``"nominal"`` (any difference counts fully).

    Returns:
        Alpha, or NaN when it is undefined: fewer than two raters, no item rated by two raters,
        or a single distinct value overall (no disagreement is possible to measure).
    """
    import krippendorff

    if level not in ("interval", "ordinal", "nominal"):
        raise ValueError(f"level must be interval, ordinal or nominal, not {level!r}")
    arr = _as_matrix(ratings)
    pairable = (~np.isnan(arr)).sum(axis=0) >= 2
    if arr.shape[0] < 2 or not pairable.any():
        return float("nan")
    values = np.unique(arr[:, pairable][~np.isnan(arr[:, pairable])])
    if len(values) < 2:
        return float("nan")
    return float(krippendorff.alpha(reliability_data=arr, level_of_measurement=level))


def categorize(ratings: Any, categories: Sequence[float] | None = None,
               bins: Sequence[float] | None = None) -> tuple[np.ndarray, list[str], str]:
    """Put scores into categories by a stated rule, for Fleiss' kappa.

    Rules, in order: with ``categories`` (a Likert scale's values) each score goes to the nearest
    category value (ties to the lower one), so averaged or fractional scores are rounded onto the
    scale; with ``bins`` (increasing edges) a score goes into the half-open bin ``[e_i, e_i+1)``,
    the last bin closed, values outside the edges clipped into the end bins; with neither, the
    scores must all be whole numbers and each distinct value is a category.

    Returns:
        ``(codes, labels, rule)``: integer category codes shaped like ``ratings`` (-1 where missing),
        the category labels, and the rule as one sentence for the result table.

    Raises:
        ValueError: Both rules given, or continuous scores with no rule.
    """
    arr = _as_matrix(ratings)
    missing = np.isnan(arr)
    codes = np.full(arr.shape, -1, dtype=int)
    if categories is not None and bins is not None:
        raise ValueError("give categories or bins, not both")
    if categories is not None:
        cats = np.asarray(sorted(categories), dtype=float)
        idx = np.abs(arr[..., None] - cats).argmin(axis=-1)
        codes[~missing] = idx[~missing]
        labels = [f"{c:g}" for c in cats]
        rule = f"each score rounded to the nearest scale value in {{{', '.join(labels)}}}"
    elif bins is not None:
        edges = np.asarray(bins, dtype=float)
        if len(edges) < 2 or np.any(np.diff(edges) <= 0):
            raise ValueError("bins must be at least two strictly increasing edges")
        idx = np.clip(np.searchsorted(edges, arr, side="right") - 1, 0, len(edges) - 2)
        codes[~missing] = idx[~missing]
        labels = [f"[{a:g},{b:g}{']' if i == len(edges) - 2 else ')'}"
                  for i, (a, b) in enumerate(itertools.pairwise(edges))]
        rule = f"scores binned into {', '.join(labels)} (outside values clipped to the end bins)"
    else:
        present = arr[~missing]
        if not np.all(present == np.round(present)):
            raise ValueError("continuous scores need `categories` (nearest scale value) or `bins` for Fleiss' kappa")
        cats = np.unique(present)
        codes[~missing] = np.searchsorted(cats, arr[~missing])
        labels = [f"{c:g}" for c in cats]
        rule = "each distinct integer score is a category"
    return codes, labels, rule


def fleiss_kappa(ratings: Any, categories: Sequence[float] | None = None,
                 bins: Sequence[float] | None = None) -> float:
    """Fleiss' kappa over categories made from the scores by the rule of :func:`categorize`.

    Likert scores: pass the scale's integer values as ``categories`` (each score is rounded to the
    nearest one). Continuous scores: pass explicit ``bins`` edges. Fleiss' kappa needs the same
    number of ratings per item, so items with any missing rating are left out.

    Args:
        ratings: Array-like ``[n_raters, n_items]``; NaN marks a missing rating.
        categories: The scale's values (e.g. ``[1, 2, 3, 4, 5]``).
        bins: Increasing bin edges for continuous scores (e.g. ``[0, 0.25, 0.5, 0.75, 1]``).

    Returns:
        Kappa, or NaN when fewer than two raters or items remain, or all ratings fall in one category.
    """
    from statsmodels.stats.inter_rater import fleiss_kappa as _fk

    arr = _complete_items(_as_matrix(ratings))
    if arr.shape[0] < 2 or arr.shape[1] < 2:
        return float("nan")
    codes, labels, _rule = categorize(arr, categories, bins)
    table = np.zeros((arr.shape[1], len(labels)), dtype=int)
    for item in range(arr.shape[1]):
        table[item] = np.bincount(codes[:, item], minlength=len(labels))
    if np.count_nonzero(table.sum(axis=0)) < 2:
        return float("nan")
    return float(_fk(table, method="fleiss"))


def icc(ratings: Any) -> dict[str, float]:
    """ICC(2,1) and ICC(2,k): two-way random effects, absolute agreement (Shrout and Fleiss 1979).

    ICC(2,1) is the reliability of one rater, ICC(2,k) of the mean of the k raters. Computed by
    pingouin on the items every rater scored (items with a missing rating are left out).

    Args:
        ratings: Array-like ``[n_raters, n_items]``; NaN marks a missing rating.

    Returns:
        ``{"icc2_1", "icc2_k", "n_items", "n_raters"}``; the ICCs are NaN when fewer than two raters
        or two items remain or the table has no variance.
    """
    import pandas as pd
    import pingouin as pg

    arr = _complete_items(_as_matrix(ratings))
    n_raters, n_items = arr.shape
    out = {"icc2_1": float("nan"), "icc2_k": float("nan"), "n_items": n_items, "n_raters": n_raters}
    if n_raters < 2 or n_items < 2 or np.nanvar(arr) == 0:
        return out
    long = pd.DataFrame({"item": np.tile(np.arange(n_items), n_raters),
                         "rater": np.repeat(np.arange(n_raters), n_items), "score": arr.ravel()})
    with warnings.catch_warnings():  # pingouin's intervals divide by zero on perfect agreement; its pandas
        warnings.simplefilter("ignore")  # deprecation notices are not the user's concern
        table = pg.intraclass_corr(data=long, targets="item", raters="rater", ratings="score").set_index("Type")
    # pingouin >= 0.7 names them ICC(A,1)/ICC(A,k); older releases ICC2/ICC2k.
    one = "ICC(A,1)" if "ICC(A,1)" in table.index else "ICC2"
    k = "ICC(A,k)" if "ICC(A,k)" in table.index else "ICC2k"
    out["icc2_1"], out["icc2_k"] = float(table.loc[one, "ICC"]), float(table.loc[k, "ICC"])
    return out


def ratings_matrix(scores: Mapping[str, Mapping[str, float | None]],
                   raters: Sequence[str] | None = None) -> tuple[np.ndarray, list[str], list[str]]:
    """Align per-rater score maps ``{rater: {item_id: score}}`` into a ``[n_raters, n_items]`` array.

    Items are the union over the raters (sorted); a rater's missing or None score becomes NaN.

    Returns:
        ``(matrix, raters, items)``.
    """
    names = list(raters) if raters is not None else list(scores)
    items = sorted({i for r in names for i in scores[r]})
    mat = np.array([[_nan(scores[r].get(i)) for i in items] for r in names], dtype=float).reshape(len(names),
                                                                                                  len(items))
    return mat, names, items


def _nan(x: float | None) -> float:
    return float("nan") if x is None else float(x)


def agreement_row(ratings: Any, categories: Sequence[float] | None = None,
                  bins: Sequence[float] | None = None) -> dict[str, Any]:
    """All agreement measures for one set of raters, as one table row.

    Fleiss' kappa is skipped (NaN, with the reason as its rule) when the scores are continuous and
    no categorisation rule is given, rather than guessing a binning.
    """
    arr = _as_matrix(ratings)
    row: dict[str, Any] = {"n_raters": arr.shape[0], "n_items": arr.shape[1],
                           "n_complete": int((~np.isnan(arr).any(axis=0)).sum())}
    row["alpha_interval"] = krippendorff_alpha(arr, "interval")
    row["alpha_ordinal"] = krippendorff_alpha(arr, "ordinal")
    try:
        row["fleiss_rule"] = categorize(arr, categories, bins)[2]
        row["fleiss_kappa"] = fleiss_kappa(arr, categories, bins)
    except ValueError as exc:
        row["fleiss_rule"], row["fleiss_kappa"] = f"not computed: {exc}", float("nan")
    row.update({k: v for k, v in icc(arr).items() if k.startswith("icc")})
    return row


def group_agreement(scores: Mapping[str, Mapping[str, float | None]],
                    groups: Mapping[str, Sequence[str]] | None = None, *,
                    categories: Sequence[float] | None = None,
                    bins: Sequence[float] | None = None) -> list[dict[str, Any]]:
    """Agreement within each named group of judges (CheckEval's Large / Medium / Small / GPT / Top-3).

    Args:
        scores: ``{judge: {item_id: score}}`` for one dimension.
        groups: ``{group name: [judge, ...]}``; default one group ``"all"`` of every judge.
        categories / bins: The Fleiss categorisation rule (see :func:`categorize`).

    Returns:
        One row per group: ``group``, ``judges`` plus the fields of :func:`agreement_row`.

    Raises:
        KeyError: A group names a judge that has no scores.
    """
    groups = groups or {"all": list(scores)}
    rows = []
    for name, judges in groups.items():
        unknown = [j for j in judges if j not in scores]
        if unknown:
            raise KeyError(f"group {name!r} names judges with no scores: {unknown}; known: {sorted(scores)}")
        mat, _, _ = ratings_matrix(scores, judges)
        rows.append({"group": name, "judges": list(judges), **agreement_row(mat, categories, bins)})
    return rows
