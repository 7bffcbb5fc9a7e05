"""The report's figures as PNG bytes: score vs human scatter per dimension, stability density across judges."""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from assay.meta.table import ScoreTable

__all__ = ["scatter_png", "stability_png"]


def _figure(n_panels: int, width: float = 3.2, height: float = 3.0) -> tuple[Any, list[Any]]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = min(n_panels, 4)
    rows = math.ceil(n_panels / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False)
    flat = list(axes.ravel())
    for ax in flat[n_panels:]:
        ax.set_visible(False)
    return fig, flat[:n_panels]


def _png(fig: Any) -> bytes:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    return buf.getvalue()


def scatter_png(table: ScoreTable, dimensions: Sequence[str], jitter: float = 0.06, seed: int = 0) -> bytes:
    """Predicted score against human rating, one panel per dimension, with a small stated jitter.

    Likert scores pile onto a few points, so both axes get uniform jitter of ``jitter`` times each
    axis' range (seeded); the panel title carries the pooled Spearman and the item count.
    """
    from assay.meta.correlation import correlate

    fig, axes = _figure(len(dimensions))
    rng = np.random.default_rng(seed)
    for ax, dim in zip(axes, dimensions, strict=True):
        pairs = table.dim(dim).dropna(subset=["score", "human"])
        x, y = pairs["human"].to_numpy(float), pairs["score"].to_numpy(float)
        if len(x):
            jx = jitter * (np.ptp(x) or 1.0)
            jy = jitter * (np.ptp(y) or 1.0)
            ax.scatter(x + rng.uniform(-jx, jx, len(x)), y + rng.uniform(-jy, jy, len(y)), s=9, alpha=0.45)
        rho = correlate(y, x, "spearman")
        ax.set_title(f"{dim}  (rho {rho:.2f}, n {len(x)})" if rho == rho else f"{dim}  (n {len(x)})", fontsize=9)
        ax.set_xlabel("human rating", fontsize=8)
        ax.set_ylabel("predicted score", fontsize=8)
        ax.tick_params(labelsize=7)
    fig.suptitle(f"{table.name}: predicted score vs human rating (jittered; rho pooled over all items)",
                 fontsize=9)
    return _png(fig)


def stability_png(stability_rows: list[dict[str, Any]], measure: str) -> bytes:
    """Density of the per-judge (or per-run) average correlation, one curve per method, values as a rug.

    The rug of each method sits in its own band below zero; with no density at all (one value per
    method) the y axis has no scale to show, so it is hidden and the values stand alone.
    """
    rows = [r for r in stability_rows if r["dimension"] == "average" and r["measure"] == measure]
    fig, axes = _figure(1, width=6.0, height=3.2)
    ax = axes[0]
    peaks = [max(r["density"]["y"]) for r in rows if (r.get("density") or {}).get("y") is not None]
    top = max(peaks) if peaks else 1.0
    band = 0.08 * top
    for i, r in enumerate(rows):
        dens = r.get("density") or {}
        color = f"C{i % 10}"
        if dens.get("y") is not None:
            ax.plot(dens["x"], dens["y"], color=color, label=f"{r['method']}: {r['n']} values, mean {r['mean']:.3f}, "
                                                             f"var {r['variance']:.4f}")
        else:
            ax.plot([], [], color=color, label=f"{r['method']}: {r['n']} value(s), mean {r['mean']:.3f} "
                                               "(no density)")
        vals = list(r["values"].values())
        ax.plot(vals, np.full(len(vals), -band * (i + 1)), "|", color=color, markersize=12)
    ax.set_xlim(-1, 1)
    ax.set_ylim(-band * (len(rows) + 1), top * 1.15)
    if peaks:
        ax.set_yticks([t for t in ax.get_yticks() if 0 <= t <= top * 1.15])
        ax.set_ylabel("density", fontsize=8)
    else:
        ax.set_yticks([])
    ax.axhline(0, color="0.8", linewidth=0.6)
    ax.set_xlabel(f"average {measure} with humans (one tick per judge or run)", fontsize=8)
    ax.set_title(f"stability of the average {measure} across judges / runs", fontsize=9)
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=7, loc="best")
    return _png(fig)
