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
from assay.meta.evaluate import correlation_rows, meta_evaluate
from assay.meta.human import human_agreement
from assay.meta.inputs import FieldMap, load_scores, parse_mapping, read_run, table_from_records
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
