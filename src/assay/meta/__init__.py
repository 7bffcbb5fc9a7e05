"""Meta-evaluation: how far a judge can be trusted, as the papers measure it (pure functions over score tables).

From Python::

    from assay.meta import meta_evaluate, compare, load_scores
    result = meta_evaluate("runs/summeval-geval", bootstrap=1000)      # the papers' table
    result = meta_evaluate("unieval.json", level="turn")               # a scores file
    both = compare([load_scores(d) for d in ("runs/a", "runs/b")], groups={"small": ["llamacpp:smollm2"]})
    report = trust(load_scores("runs/mine"), labels)                   # a few human labels -> valid intervals

The same functions serve ``assay meta`` and ``assay compare``; :mod:`assay.meta.trust` serves
``assay meta --human/--labels``, ``assay labels`` and ``assay jury``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from assay.meta.agreement import (
        agreement_row,
        categorize,
        fleiss_kappa,
        group_agreement,
        icc,
        krippendorff_alpha,
        ratings_matrix,
    )
    from assay.meta.bootstrap import bootstrap_intervals, paired_bootstrap
    from assay.meta.compare import compare, load_groups
    from assay.meta.correlation import (
        MEASURES,
        correlate,
        dataset_level,
        kendall_tau,
        level_correlation,
        per_document,
        sample_level,
        system_level,
    )
    from assay.meta.coverage import coverage
    from assay.meta.evaluate import meta_evaluate
    from assay.meta.human import human_agreement
    from assay.meta.inputs import FieldMap, load_scores, parse_mapping, read_run, table_from_records
    from assay.meta.levels import correlation_rows
    from assay.meta.quality_split import quality_split
    from assay.meta.significance import adjust_family, benjamini_hochberg, rank_sum, signed_rank
    from assay.meta.stability import density, stability
    from assay.meta.table import ScoreTable
    from assay.meta.trust import (
        Labels,
        assess,
        calibrate,
        combine,
        estimate_mean,
        labels_needed,
        pick,
        simulate_labels,
        trust,
    )

_WHERE = {  # public name -> the submodule that defines it, imported on first use (PEP 562)
    "FieldMap": "inputs",
    "Labels": "trust",
    "MEASURES": "correlation",
    "ScoreTable": "table",
    "adjust_family": "significance",
    "agreement_row": "agreement",
    "assess": "trust",
    "benjamini_hochberg": "significance",
    "bootstrap_intervals": "bootstrap",
    "calibrate": "trust",
    "categorize": "agreement",
    "combine": "trust",
    "compare": "compare",
    "correlate": "correlation",
    "correlation_rows": "levels",
    "coverage": "coverage",
    "dataset_level": "correlation",
    "density": "stability",
    "estimate_mean": "trust",
    "fleiss_kappa": "agreement",
    "group_agreement": "agreement",
    "human_agreement": "human",
    "icc": "agreement",
    "kendall_tau": "correlation",
    "krippendorff_alpha": "agreement",
    "labels_needed": "trust",
    "level_correlation": "correlation",
    "load_groups": "compare",
    "load_scores": "inputs",
    "meta_evaluate": "evaluate",
    "paired_bootstrap": "bootstrap",
    "parse_mapping": "inputs",
    "per_document": "correlation",
    "pick": "trust",
    "quality_split": "quality_split",
    "rank_sum": "significance",
    "ratings_matrix": "agreement",
    "read_run": "inputs",
    "sample_level": "correlation",
    "signed_rank": "significance",
    "simulate_labels": "trust",
    "stability": "stability",
    "system_level": "correlation",
    "table_from_records": "inputs",
    "trust": "trust",
}


def __getattr__(name: str) -> Any:
    """A public name, its submodule imported on first use: ``import assay.meta.evaluate`` (the run summary) then
    loads what it needs, not every statistics library the package uses (krippendorff, pingouin, statsmodels)."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'assay.meta' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"assay.meta.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE])


__all__ = [
    "MEASURES",
    "FieldMap",
    "Labels",
    "ScoreTable",
    "adjust_family",
    "agreement_row",
    "assess",
    "benjamini_hochberg",
    "bootstrap_intervals",
    "calibrate",
    "categorize",
    "combine",
    "compare",
    "correlate",
    "correlation_rows",
    "coverage",
    "dataset_level",
    "density",
    "estimate_mean",
    "fleiss_kappa",
    "group_agreement",
    "human_agreement",
    "icc",
    "kendall_tau",
    "krippendorff_alpha",
    "labels_needed",
    "level_correlation",
    "load_groups",
    "load_scores",
    "meta_evaluate",
    "paired_bootstrap",
    "parse_mapping",
    "per_document",
    "pick",
    "quality_split",
    "rank_sum",
    "ratings_matrix",
    "read_run",
    "sample_level",
    "signed_rank",
    "simulate_labels",
    "stability",
    "system_level",
    "table_from_records",
    "trust",
]
