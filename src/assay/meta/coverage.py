"""Parse and coverage: the share of items with a score, per dimension, always printed beside the correlations."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pandas as pd

__all__ = ["coverage", "error_kinds"]


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
