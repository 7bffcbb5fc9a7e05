"""One score table's meta-evaluation: the papers' correlation table with coverage, intervals and the human ceiling."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from assay.meta.bootstrap import bootstrap_intervals
from assay.meta.correlation import MEASURES, KendallVariant, Measure
from assay.meta.coverage import error_kinds
from assay.meta.human import human_agreement
from assay.meta.inputs import FieldMap, load_scores
from assay.meta.levels import choose_level, correlation_rows
from assay.meta.quality_split import quality_split
from assay.meta.table import ScoreTable

__all__ = ["meta_evaluate"]


def _dims(table: ScoreTable, dimensions: Sequence[str] | None) -> list[str]:
    have = table.dimensions()
    if not dimensions:
        return have
    missing = [d for d in dimensions if d not in have]
    if missing:
        from assay.errors import ConfigError

        raise ConfigError(f"{table.name}: no scores for dimension(s) {missing}; it has {have}")
    return list(dimensions)


def meta_evaluate(source: str | Path | ScoreTable, *, level: str | None = None,
                  dimensions: Sequence[str] | None = None, measures: Sequence[Measure] = MEASURES,
                  variant: KendallVariant = "b", bootstrap: int = 0, seed: int = 0, ci: float = 0.95,
                  split: bool = False, thresholds: Mapping[str, float] | None = None,
                  mapping: FieldMap | None = None, dataset: str | None = None) -> dict[str, Any]:
    """The meta-evaluation of one run or scores file, as a JSON-ready dict.

    Args:
        source: A run directory, a scores file, or a :class:`ScoreTable`.
        level: sample (summary), system or dataset (turn); default the dataset's convention.
        dimensions: Which dimensions (default all scored).
        measures: Correlations to compute.
        variant: Kendall variant (a, b, c).
        bootstrap: Resamples for intervals (0: none).
        seed: Bootstrap seed.
        ci: Interval coverage.
        split: Add the high/low quality split.
        thresholds: Quality-split thresholds per dimension.
        mapping / dataset: For scores files (see :func:`assay.meta.inputs.load_scores`).

    Returns:
        ``{"table", "level", "level_reason", "measures", "kendall_variant", "rows", "bootstrap",
        "human_agreement", "quality_split", "unscored_reasons"}``; each row holds the coverage
        fields, one value per measure and, with bootstrap, ``<measure>_ci``.
    """
    table = source if isinstance(source, ScoreTable) else load_scores(source, mapping, dataset=dataset)
    lvl, reason = choose_level(table, level)
    dims = _dims(table, dimensions)
    rows = correlation_rows(table, lvl, measures, dims, variant)
    boot = None
    if bootstrap > 0:
        boot = bootstrap_intervals({d: table.dim(d) for d in dims}, lvl, measures, variant=variant,
                                   n_boot=bootstrap, seed=seed, ci=ci)
        for row in rows:
            for m in measures:
                row[f"{m}_ci"] = boot["intervals"][row["dimension"]][m]
        boot = {k: v for k, v in boot.items() if k != "intervals"}
    judged = list(dict.fromkeys(table.frame["sample_id"]))
    return {
        "table": table.describe(), "level": lvl, "level_reason": reason, "measures": list(measures),
        "kendall_variant": variant, "rows": rows, "bootstrap": boot,
        "human_agreement": human_agreement(table.annotators, dims, scales=table.scales, items=judged)
        if table.annotators else [],
        "quality_split": quality_split(table, lvl, measures, dimensions=dims, thresholds=thresholds,
                                       variant=variant) if split else None,
        "unscored_reasons": {d: kinds for d in dims if (kinds := error_kinds(table.errors, d))},
    }
