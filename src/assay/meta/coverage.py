"""Parse and coverage: the share of items with a score, per dimension, always printed beside the correlations."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pandas as pd

__all__ = ["below_coverage", "coverage", "error_kinds"]


def coverage(frame: pd.DataFrame) -> dict[str, Any]:
    """Coverage of one dimension's rows (or a whole table's).

    Returns:
        ``items`` (rows judged), ``scored`` (with a score), ``coverage`` (scored / items, None when
        nothing was judged), ``human`` (rows with a human rating) and ``paired`` (rows with both,
        the ones correlations use).
    """
    items = len(frame)
    scored = int(frame["score"].notna().sum())
    return {"items": items, "scored": scored, "coverage": scored / items if items else None,
            "human": int(frame["human"].notna().sum()),
            "paired": int((frame["score"].notna() & frame["human"].notna()).sum())}


def error_kinds(errors: dict[tuple[str, str], str], dimension: str | None = None, top: int = 3) -> list[list[Any]]:
    """The most frequent reasons items went unscored, as ``[reason, count]`` (first 80 characters of each)."""
    counts = Counter(e[:80] for (_sid, dim), e in errors.items() if dimension is None or dim == dimension)
    return [[reason, n] for reason, n in counts.most_common(top)]


def below_coverage(rows: list[dict[str, Any]], bound: float) -> list[dict[str, Any]]:
    """The dimension rows whose coverage is below ``bound``, for a CI gate (``--fail-under-coverage``).

    Each dimension must reach the bound on its own: a pooled average would let a well-covered dimension
    hide one that is mostly unscored. The ``average`` row is not a dimension; a dimension with nothing
    judged counts as coverage 0.

    Args:
        rows: Rows with ``dimension`` and ``coverage`` (:func:`coverage`'s keys), e.g. ``meta_evaluate``'s rows.
        bound: The least share of scored units, 0 to 1.
    """
    dims = [r for r in rows if r["dimension"] != "average"] or rows
    return [r for r in dims if (r["coverage"] or 0.0) < bound]
