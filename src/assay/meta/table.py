"""The score table every measure reads: one row per (item, dimension) with the predicted and the human score."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

COLUMNS = ["sample_id", "doc_id", "system_id", "dimension", "score", "human"]
LEVELS = ("sample", "system", "dataset")
# The papers' other names for the levels: summary-level is sample-level (G-Eval), turn-level is
# the pooled dataset level (Topical-Chat tables).
LEVEL_ALIASES = {"summary": "sample", "turn": "dataset", "sample": "sample", "system": "system",
                 "dataset": "dataset"}


def normalise_level(level: str) -> str:
    """The canonical level name for ``level`` or one of its aliases (summary, turn)."""
    try:
        return LEVEL_ALIASES[level.lower()]
    except KeyError:
        raise ValueError(f"unknown level {level!r}; choose sample (summary), system or dataset (turn)") from None


@dataclass
class ScoreTable:
    """Predicted and human scores of one run or scores file, plus what is known about where they came from.

    Attributes:
        frame: Columns ``sample_id, doc_id, system_id, dimension, score, human``; ``score`` is NaN
            where the method gave none (a parse failure, counted by coverage), ``human`` NaN where
            the item has no human rating.
        name: A short label (run directory or file name).
        method: The method that produced the scores, if known.
        judge: The judge label (``backend:model``), if known.
        dataset: The dataset name, if known (gives the conventional level and the scales).
        source: Where the table was read from.
        annotators: ``{sample_id: {dimension: [rating per annotator]}}`` where the data keeps them.
        scales: ``{dimension: (low, high, integer)}`` of the human scale, where known.
        errors: ``{(sample_id, dimension): error}`` for unscored items, where known.
        level: The correlation level the run's dataset declares (a user's dataset spec's ``level:``),
            recorded in the run manifest; it takes precedence over the catalog's convention.
        order: The dimensions in the order the run asked for them (its manifest), so that its tables list
            them the same way whichever unit the judge answered first.
    """

    frame: pd.DataFrame
    name: str
    method: str | None = None
    judge: str | None = None
    dataset: str | None = None
    source: str = ""
    annotators: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    scales: dict[str, tuple[float, float, bool]] = field(default_factory=dict)
    errors: dict[tuple[str, str], str] = field(default_factory=dict)
    level: str | None = None
    order: list[str] = field(default_factory=list)

    def dimensions(self) -> list[str]:
        """The dimensions in :attr:`order`, then any others in first-seen order."""
        seen = dict.fromkeys(self.frame["dimension"])
        return [d for d in self.order if d in seen] + [d for d in seen if d not in self.order]

    def dim(self, dimension: str) -> pd.DataFrame:
        """The rows of one dimension."""
        return self.frame[self.frame["dimension"] == dimension]

    def conventional_level(self) -> str | None:
        """The level the run's dataset declared, else its conventional one if it is a known benchmark."""
        if self.level:
            return self.level
        if not self.dataset:
            return None
        from assay.datasets import CATALOG

        info = CATALOG.get(self.dataset)
        return info.level if info else None

    def describe(self) -> dict[str, Any]:
        """Identity of the table for result files."""
        return {"name": self.name, "method": self.method, "judge": self.judge, "dataset": self.dataset,
                "source": self.source, "items": int(self.frame["sample_id"].nunique())}


def make_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """A frame with the table's columns and types from row dicts (missing scores become NaN)."""
    frame = pd.DataFrame(rows, columns=COLUMNS)
    for col in ("sample_id", "doc_id", "system_id", "dimension"):
        frame[col] = frame[col].astype(str)
    for col in ("score", "human"):
        frame[col] = pd.to_numeric(frame[col], errors="coerce").astype(float)
    return frame


def jsonable(obj: Any) -> Any:
    """A result made safe for strict JSON: NaN and infinities become None, numpy scalars plain numbers."""
    import math

    import numpy as np

    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj
