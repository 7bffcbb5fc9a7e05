"""Human agreement as the ceiling: the agreement measures among the human annotators, where a dataset keeps them.

The papers set the judges' inter-evaluator agreement beside the human annotators' (about 0.7 on
SummEval's experts); the same functions of :mod:`assay.meta.agreement` compute both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from assay.meta.agreement import agreement_row

__all__ = ["annotator_matrix", "human_agreement"]


def annotator_matrix(annotators: Mapping[str, Mapping[str, Sequence[float]]], dimension: str,
                     items: Sequence[str] | None = None) -> tuple[np.ndarray, list[str]]:
    """``[n_annotators, n_items]`` ratings of one dimension; annotator k is the k-th rating of each item.

    Items with fewer ratings than the most-rated item get NaN for the missing annotators.
    """
    ids = [i for i in (items if items is not None else annotators) if dimension in annotators.get(i, {})]
    width = max((len(annotators[i][dimension]) for i in ids), default=0)
    mat = np.full((width, len(ids)), np.nan)
    for col, i in enumerate(ids):
        ratings = annotators[i][dimension]
        mat[: len(ratings), col] = ratings
    return mat, ids


def human_agreement(annotators: Mapping[str, Mapping[str, Sequence[float]]], dimensions: Sequence[str], *,
                    scales: Mapping[str, tuple[float, float, bool]] | None = None,
                    items: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Agreement among the annotators per dimension (alpha, Fleiss' kappa on the scale's values, ICC).

    Args:
        annotators: ``{item: {dimension: [rating per annotator]}}``.
        dimensions: Which dimensions.
        scales: ``{dimension: (low, high, integer)}``; an integer scale gives Fleiss' categories.
        items: Restrict to these items (e.g. the ones a run judged).

    Returns:
        One row per dimension that has annotator ratings.
    """
    rows = []
    for dim in dimensions:
        mat, _ids = annotator_matrix(annotators, dim, items)
        if mat.shape[0] < 2:
            continue
        cats = None
        if scales and dim in scales and scales[dim][2]:
            low, high, _ = scales[dim]
            cats = list(range(int(np.ceil(low)), int(np.floor(high)) + 1))
        rows.append({"dimension": dim, "raters": "human annotators", **agreement_row(mat, categories=cats)})
    return rows
