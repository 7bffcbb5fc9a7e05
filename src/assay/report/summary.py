"""The small result table printed after a run: coverage, mean score and agreement with humans per dimension."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay.store import RunStore


def run_summary(run_dir: str | Path) -> dict[str, Any]:
    """Per dimension: units judged, share scored, mean score, and Spearman/Pearson with the human ratings.

    Correlations here pool all judged items (dataset level) as a first look; ``assay meta``
    computes them at the dataset's conventional level with intervals.
    """
    from scipy import stats

    with RunStore(run_dir, readonly=True) as store:
        df = store.to_pandas()
    rows = []
    for dim, g in df.groupby("dimension", sort=False):
        scored = g.dropna(subset=["score"])
        both = scored.dropna(subset=["human"])
        rho = r = None
        if len(both) >= 3 and both["score"].nunique() > 1 and both["human"].nunique() > 1:
            rho = float(stats.spearmanr(both["score"], both["human"]).statistic)
            r = float(stats.pearsonr(both["score"], both["human"]).statistic)
        rows.append([dim, len(g), len(scored) / len(g) if len(g) else None,
                     float(scored["score"].mean()) if len(scored) else None, rho, r])
    return {"columns": ["dimension", "judged", "coverage", "mean score", "spearman", "pearson"], "rows": rows,
            "level_note": "correlations pool all judged items; `assay meta RUN_DIR` gives the papers' levels"}
