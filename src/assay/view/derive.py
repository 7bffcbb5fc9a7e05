"""Pure helpers of the viewer's data: run labels, interned texts, rank disagreement, small-sample warnings."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from scipy.stats import rankdata

__all__ = ["SMALL_N", "TextTable", "interval_warning", "rank_disagreement", "run_label", "steps_by_dimension"]

# Below this many paired items a correlation's bootstrap interval is flagged: with a handful of items
# resampling draws the same few points again and again, and an interval like [1.000, 1.000] says nothing.
SMALL_N = 30


def run_label(run_dir_name: str, method: str | None, judge: str | None) -> str:
    """A run's label: its directory name, method and judge, so that three runs of one judge stay apart."""
    return " · ".join(p for p in (run_dir_name, method or "?", judge or "?") if p)


class TextTable:
    """Interns strings: long texts shared by many samples (a dialogue history, an article) are stored once."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self._index: dict[str, int] = {}

    def add(self, text: str | None) -> int | None:
        """The index of ``text`` in :attr:`texts` (None for no text)."""
        if text is None:
            return None
        if text not in self._index:
            self._index[text] = len(self.texts)
            self.texts.append(text)
        return self._index[text]


def rank_disagreement(scores: Sequence[float | None], humans: Sequence[float | None]) -> list[float | None]:
    """How far apart each item's predicted score and human rating sit, as a difference of percentile ranks.

    Predicted scores and human ratings are on different scales (CheckEval's 0-1 share against a 1-5 Likert
    rating), so raw differences mislead; percentile ranks (ties averaged, within the items given) put both
    on 0-1, the view Spearman takes. Items missing either value get None.
    """
    both = [i for i, (s, h) in enumerate(zip(scores, humans, strict=True)) if _num(s) and _num(h)]
    out: list[float | None] = [None] * len(scores)
    if len(both) < 2:
        return out
    s_rank = _percentile([scores[i] for i in both])  # type: ignore[misc]
    h_rank = _percentile([humans[i] for i in both])  # type: ignore[misc]
    for k, i in enumerate(both):
        out[i] = round(abs(float(s_rank[k]) - float(h_rank[k])), 4)
    return out


def _num(x: Any) -> bool:
    return isinstance(x, int | float) and math.isfinite(x)


def _percentile(values: Sequence[float]) -> np.ndarray:
    ranks = rankdata(values, method="average")
    return (ranks - 1) / (len(values) - 1)


def interval_warning(n: int | None, interval: Sequence[float | None] | None) -> str | None:
    """A warning for a correlation interval that should not be trusted, or None.

    Small samples (fewer than :data:`SMALL_N` paired items) and degenerate intervals (zero width, as when
    every resample picks the same few items) are both flagged, with n, so that ``[1.000, 1.000]`` at n=4
    is never read as certainty.
    """
    notes = []
    if n is not None and n < SMALL_N:
        notes.append(f"small sample: n={n} (< {SMALL_N}); the correlation and its interval are unreliable")
    if interval and len(interval) == 2 and None not in interval and interval[0] == interval[1]:
        notes.append("zero-width interval: the resamples all gave the same value")
    return "; ".join(notes) or None


def steps_by_dimension(artifacts: Iterable[tuple[str, str]]) -> dict[str, str]:
    """G-Eval's evaluation steps per dimension from the run's stored step artifacts (YAML text)."""
    import yaml

    steps: dict[str, str] = {}
    for name, content in artifacts:
        if not name.startswith("geval/steps/"):
            continue
        try:
            doc = yaml.safe_load(content) or {}
        except yaml.YAMLError:
            continue
        for dim, entry in (doc.get("dimensions") or {}).items():
            if isinstance(entry, dict) and isinstance(entry.get("steps"), str):
                steps[str(dim)] = entry["steps"]
    return steps
