"""Trust on a user's own data: a few human labels turned into valid intervals, label plans, calibration, juries.

From Python::

    from assay.meta import load_scores, simulate_labels, trust
    table = load_scores("runs/summeval-geval")
    report = trust(table, simulate_labels(table, 100, seed=0))   # what 100 labels would buy on a benchmark
    report["coherence"]["ppi"]                                     # {"estimate", "low", "high"}
    assess("runs/mine", human="sheet.csv", calibrate_kind="isotonic")  # what `assay meta --human` computes

Modules: :mod:`~assay.meta.trust.ppi` (the three estimates of a mean, with ``ppi_py``),
:mod:`~assay.meta.trust.small` (the interval around an estimate: normal, Student-t, bootstrap-t, Hall),
:mod:`~assay.meta.trust.assess` (a score table and labels -> per dimension and system),
:mod:`~assay.meta.trust.plan` (labels needed, which samples to label), :mod:`~assay.meta.trust.calibrate`
(cross-fitted calibration), :mod:`~assay.meta.trust.jury` (several judges combined),
:mod:`~assay.meta.trust.human` (reading a human labels file against a run).
"""

from __future__ import annotations

from assay.meta.trust.assess import Labels, simulate_labels, to_human_scale, trust
from assay.meta.trust.calibrate import calibrate, fit_map, held_out_metrics
from assay.meta.trust.jury import combine
from assay.meta.trust.plan import labels_needed, pick
from assay.meta.trust.ppi import Interval, MeanEstimate, difference, estimate_mean, power_tuning
from assay.meta.trust.session import assess

__all__ = ["Interval", "Labels", "MeanEstimate", "assess", "calibrate", "combine", "difference", "estimate_mean",
           "fit_map", "held_out_metrics", "labels_needed", "pick", "power_tuning", "simulate_labels",
           "to_human_scale", "trust"]
