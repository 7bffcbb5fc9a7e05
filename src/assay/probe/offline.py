"""The probe's checks computed from a run's stored judgments alone: length bias, scale use, human preference gap.

Each check takes the run's units (:class:`Unit`) and returns a result dict (see :func:`result`); none of them
calls a judge.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from assay.meta.bootstrap import bootstrap_ci
from assay.probe import stats
from assay.probe.stats import clean

#: Length bias is flagged when the partial correlation of score with length given the human rating is at least
#: this large and its bootstrap interval lies above 0.
LENGTH_FLAG_R = 0.1
LENGTH_RULE = (f"flagged when the partial Spearman rho of score with length controlling for the human rating is "
               f">= {LENGTH_FLAG_R} and its 95% bootstrap interval lies above 0: the judge rewards length beyond "
               "what the human ratings explain")
#: Fewest source documents for a bootstrap over documents; with fewer, items are resampled (and the row says so).
MIN_DOCS = 10
#: Fewest items for a flag: below it a row is computed but neither flagged nor cleared.
MIN_FLAG_N = 20
#: Why the preference gap has no human side on a dataset whose references nobody rated (SummEval).
UNRATED_REFERENCES = "the dataset's human-written references carry no human ratings"
#: Outputs written by people in the bundled datasets (Topical-Chat, USR Persona-Chat); rated like the others.
HUMAN_WRITTEN_SYSTEMS = ("Original Ground Truth", "New Human Generated")


@dataclass(frozen=True)
class Unit:
    """One stored (sample, dimension) judgment with what the offline checks need.

    Attributes:
        human: The sample's mean human rating on the dimension, or None.
        length: Output length in tokens (:func:`assay.probe.stats.token_count`).
        doc_id: The source document: bootstrap intervals resample whole documents.
    """

    sample_id: str
    dimension: str
    system_id: str
    score: float | None
    status: str
    human: float | None
    length: int
    doc_id: str = ""


def result(check: str, method: str, rows: list[dict[str, Any]] | None = None, *, reason: str | None = None,
           rule: str | None = None, **extra: Any) -> dict[str, Any]:
    """A check's result: computed with rows, or not computed with the reason.

    ``flagged`` is True when any row is flagged, False when every computed row was tested and none was,
    None when nothing could be tested.
    """
    rows = rows or []
    flags = [r["flagged"] for r in rows if r.get("flagged") is not None]
    computed = reason is None and bool(rows)
    return {"check": check, "computed": computed, "reason": reason if not computed else None, "method": method,
            "rule": rule, "rows": rows, "flagged": (any(flags) if flags else None) if computed else None, **extra}


def doc_groups(units: list[Unit]) -> tuple[list[str] | None, str]:
    """The bootstrap's groups (source documents, when there are at least :data:`MIN_DOCS`) and the unit's name."""
    docs = [u.doc_id for u in units]
    return (docs, "documents") if len(set(docs)) >= MIN_DOCS else (None, "items")


def flag_or_none(flagged: bool, n: int) -> tuple[bool | None, str | None]:
    """The flag, or None with a note when ``n`` is below :data:`MIN_FLAG_N`."""
    if n < MIN_FLAG_N:
        return None, f"too few items to flag or clear (n < {MIN_FLAG_N})"
    return flagged, None


def by_dimension(units: Iterable[Unit]) -> dict[str, list[Unit]]:
    """Units grouped by dimension, in first-seen order."""
    out: dict[str, list[Unit]] = {}
    for u in units:
        out.setdefault(u.dimension, []).append(u)
    return out


def length_bias(units: list[Unit], *, n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Score vs output length per dimension, raw and given the human rating (flag rule: :data:`LENGTH_RULE`)."""
    method = (f"Spearman rho of score with output length ({stats.TOKENIZER}); partial rho controlling for the "
              f"mean human rating (pingouin.partial_corr, spearman); 95% percentile bootstrap over source "
              f"documents (over items with fewer than {MIN_DOCS} documents; {n_boot} resamples, seed {seed}); "
              f"no flag below {MIN_FLAG_N} items")
    rows = [_length_row(dim, us, n_boot, seed) for dim, us in by_dimension(units).items()]
    if not rows:
        return result("length_bias", method, reason="the run has no judgments")
    if all(r["n"] < stats.MIN_PAIRS for r in rows):
        return result("length_bias", method, reason=f"fewer than {stats.MIN_PAIRS} scored outputs per dimension")
    return result("length_bias", method, rows, rule=LENGTH_RULE)


def _length_row(dim: str, units: list[Unit], n_boot: int, seed: int) -> dict[str, Any]:
    scored = [u for u in units if u.score is not None]
    score = np.array([u.score for u in scored], float)
    length = np.array([u.length for u in scored], float)
    row: dict[str, Any] = {"dimension": dim, "n": len(scored), "label": "partial rho(score, length | human)"}
    if len(scored) < stats.MIN_PAIRS:
        return row | {"estimate": None, "ci": None, "flagged": None,
                      "note": f"not computed: {len(scored)} scored outputs (< {stats.MIN_PAIRS})"}
    row["rho_length"] = clean(stats.spearman(score, length))
    groups, row["resampled"] = doc_groups(scored)
    row["rho_length_ci"] = [clean(v) for v in bootstrap_ci(stats.spearman_boot(score, length), len(score),
                                                                  n_boot=n_boot, seed=seed, groups=groups)]
    rated = [u for u in scored if u.human is not None]
    if len(rated) < stats.MIN_PARTIAL_PAIRS:
        return row | {"estimate": None, "ci": None, "flagged": None,
                      "note": "partial correlation not computed: no human ratings for this dimension"}
    s, ln, h = (np.array(v, float) for v in zip(*[(u.score, u.length, u.human) for u in rated], strict=True))
    partial = stats.partial_spearman(s, ln, h)
    if np.isnan(partial):
        return row | {"n": len(rated), "estimate": None, "ci": None, "flagged": None,
                      "note": "partial correlation undefined (a constant variable, or the score follows the human "
                              "rating exactly)"}
    groups, row["resampled"] = doc_groups(rated)
    low, high = bootstrap_ci(stats.partial_boot(s, ln, h), len(s), n_boot=n_boot, seed=seed, groups=groups)
    flagged, note = flag_or_none(bool(partial >= LENGTH_FLAG_R and low > 0), len(rated))
    return row | {"n": len(rated), "estimate": clean(partial), "ci": [clean(low), clean(high)],
                  "estimate_pingouin": clean(stats.pingouin_partial(s, ln, h)),
                  "rho_human_length": clean(stats.spearman(h, ln)), "flagged": flagged,
                  **({"note": note} if note else {})}


def scale_use(units: list[Unit], scales: dict[str, tuple[float, float, bool]]) -> dict[str, Any]:
    """Histogram, share of the scale used, parse-failure rate and fractional share, per dimension.

    Args:
        scales: The score scale per dimension, ``(low, high, integer)``: the dimension's scale for methods
            that answer on it, ``(0, 1, False)`` for the ratio scores of CheckEval and SEAL.
    """
    method = ("scores binned on the score scale (integer scales: nearest value; continuous: 10 equal bins); "
              "parse-failure rate = parse failures / answered units (failed calls left out)")
    rows = []
    for dim, us in by_dimension(units).items():
        low, high, integer = scales[dim]
        use = stats.scale_use([u.score for u in us if u.score is not None], low, high, integer)
        answered = sum(u.status in ("scored", "parse_failed") for u in us)
        failures = sum(u.status == "parse_failed" for u in us)
        rows.append({"dimension": dim, "n": answered, "label": "share of the scale used",
                     "estimate": clean(use["share_used"]), "ci": None, "flagged": None,
                     "scale": [low, high], "integer": integer, "histogram": use["histogram"],
                     "parse_failure_rate": clean(failures / answered) if answered else None,
                     "failed_calls": sum(u.status == "failed" for u in us),
                     "fractional": clean(use["fractional"])})
    if not rows:
        return result("scale_use", method, reason="the run has no judgments")
    return result("scale_use", method, rows)


def preference_gap(units: list[Unit], *, human_written: tuple[str, ...] = HUMAN_WRITTEN_SYSTEMS,
                   references: bool = False, n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """G-Eval's analysis: the judge's preference for human-written outputs against the humans' own, per dimension.

    Args:
        human_written: The system ids whose outputs people wrote.
        references: Whether the dataset has human-written references (rated by no one): named in the reason
            when no human-written output carries ratings.
    """
    method = ("(mean z(score) of human-written outputs - the others') - (the same with the mean human ratings), "
              f"z over the dimension's items; 95% percentile bootstrap over source documents (items with fewer than "
              f"{MIN_DOCS}; {n_boot} resamples, seed {seed}); no flag below {MIN_FLAG_N} items; "
              f"human-written systems: {', '.join(human_written)}")
    rule = "flagged when the 95% interval excludes 0 (sign: + the judge favours human-written text more than humans)"
    units = [u for u in units if u.score is not None and u.human is not None]
    hw_units = [u for u in units if u.system_id in human_written]
    if not hw_units:
        why = (f"{UNRATED_REFERENCES} (only system outputs were rated)"
               if references else "no human-written outputs with human ratings in the run")
        return result("preference_gap", method, reason=why)
    rows = []
    for dim, us in by_dimension(units).items():
        s, h = np.array([u.score for u in us], float), np.array([u.human for u in us], float)
        hw = np.array([u.system_id in human_written for u in us])
        gap = stats.preference_gap(s, h, hw)
        row = {"dimension": dim, "n": len(us), "n_human_written": int(hw.sum()), "label": "preference gap (sd)"}
        if np.isnan(gap):
            rows.append(row | {"estimate": None, "ci": None, "flagged": None,
                               "note": "undefined: only one group, or constant scores"})
            continue
        groups, row["resampled"] = doc_groups(us)
        low, high = bootstrap_ci(stats.preference_boot(s, h, hw), len(s), n_boot=n_boot, seed=seed,
                                       groups=groups)
        flagged, note = flag_or_none(bool(low > 0 or high < 0), len(us)) if not np.isnan(low) else (None, None)
        rows.append(row | {"estimate": clean(gap), "ci": [clean(low), clean(high)],
                           "judge_gap": clean(s[hw].mean() - s[~hw].mean()),
                           "human_gap": clean(h[hw].mean() - h[~hw].mean()), "flagged": flagged,
                           **({"note": note} if note else {})})
    return result("preference_gap", method, rows, rule=rule)


def pairwise_order(frame: Any, *, n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Order sensitivity of a pairwise run from the run itself: every pair was judged in both orders, so the
    stored verdicts show how often the order changed the verdict (no judge call)."""
    from assay.meta.pairwise import first_position_interval, order_stats, outcomes

    rows = []
    for dim, group in frame.groupby("dimension", sort=False):
        stats = order_stats(outcomes(group))
        lo, hi = first_position_interval(group, n_boot=n_boot, seed=seed)
        flagged, note = flag_or_none(lo is not None and hi is not None and not lo <= 0.5 <= hi, stats["n_pairs"])
        rows.append({"dimension": str(dim), "n": stats["n_pairs"], "label": "first-position win rate",
                     "estimate": stats["first_position_win_rate"], "ci": [lo, hi], "flagged": flagged,
                     "consistency": stats["consistency"], "position_bias": stats["position_bias"],
                     "n_inconsistent": stats["n_inconsistent"], **({"note": note} if note else {})})
    return result("order_sensitivity", f"from the run: each pair's verdicts in the (A, B) and (B, A) orders; "
                  f"share of verdicts won by the first position (ties half); 95% bootstrap over inputs "
                  f"({n_boot}, seed {seed})", rows,
                  rule="flagged when the 95% interval of the first-position win rate excludes 0.5")
