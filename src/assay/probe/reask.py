"""The probe's checks that re-ask the run's judge on a bounded sample: self-consistency, order, injection.

Every call goes through the run's managed judge with the run store as its cache, so the calls are kept in
the run and a second probe is answered from the cache. Variants of the run's method are built from its
recorded settings: repeats with other sample indices (:meth:`ManagedJudge.offset`), the order hook ``shuffle_seed``
(CheckEval, SEAL) and injected outputs (:mod:`assay.probe.injections`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from assay.errors import JudgeError
from assay.judges.ask import attributed
from assay.meta.agreement import krippendorff_alpha
from assay.meta.bootstrap import bootstrap_ci
from assay.methods import Method, RunContext, get_method
from assay.probe import stats
from assay.probe.injections import Injection, inject
from assay.probe.offline import result
from assay.probe.stats import clean
from assay.types import Dimension, Judgment, Sample

#: Sample indices of repeat k start at k * REPEAT_STRIDE, clear of the indices a method uses itself (G-Eval's n).
REPEAT_STRIDE = 1000


@dataclass
class Reasker:
    """What re-asking needs: the run's context and a factory of its method with changed options.

    Attributes:
        ctx: The run's context (dataset, dimensions, the managed judge on the run's cache).
        make: Builds the run's method with the given extra options (and prepares it).
        units: The (sample, dimension) units chosen for re-asking, with their stored scores.
    """

    ctx: RunContext
    make: Callable[[dict[str, Any]], Awaitable[Method]]
    units: list[tuple[Sample, Dimension, float | None]]

    async def judge(self, options: dict[str, Any], *, repeat: int = 0,
                    samples: list[Sample] | None = None) -> list[Judgment | None]:
        """Judge the chosen units (or ``samples``, one per unit) with a variant; None where the calls failed."""
        meth = await self.make(options)
        judge = self.ctx.judge.offset(repeat * REPEAT_STRIDE) if repeat else self.ctx.judge
        ctx = RunContext(dataset=self.ctx.dataset, dimensions=self.ctx.dimensions, judge=judge,
                         note=self.ctx.note, artifacts=self.ctx.artifacts, answer_format=self.ctx.answer_format)
        todo = samples if samples is not None else [s for s, _, _ in self.units]

        async def one(sample: Sample, dim: Dimension) -> Judgment | None:
            try:
                with attributed():  # as the executor does: the variant's usage is its own
                    return await meth.score(sample, dim, ctx)
            except JudgeError as exc:
                self.ctx.note("probe", f"a probe call failed after its retries: {exc}")
                return None
        return list(await asyncio.gather(*(one(s, d) for s, (_, d, _) in zip(todo, self.units, strict=True))))


def _scores(judgments: list[Judgment | None]) -> np.ndarray:
    return np.array([j.score if j is not None and j.score is not None else np.nan for j in judgments], float)


def _unit_rows(units: list[tuple[Sample, Dimension, float | None]], **columns: np.ndarray) -> list[dict[str, Any]]:
    """Per-unit results for the JSON (and a viewer): ids, the stored score and each variant's."""
    return [{"sample_id": s.id, "dimension": d.name, "stored": clean(score),
             **{k: clean(v[i]) for k, v in columns.items()}} for i, (s, d, score) in enumerate(units)]


async def self_consistency(r: Reasker, *, stochastic: bool, method_name: str, repeats: int = 2,
                           n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Agreement of the stored scores with ``repeats`` re-judgments (3 runs in all by default).

    A sampled run (temperature > 0) is re-judged with other sample indices; a greedy run of a method with
    reorderable independent parts (CheckEval's questions, SEAL's units) with other ``shuffle_seed`` orders;
    a greedy run of any other method would only repeat itself, so it is not computed.
    """
    if stochastic:
        how = f"{repeats} re-judgments with other sample indices (temperature > 0)"
        variants = [await r.judge({}, repeat=k) for k in range(1, repeats + 1)]
    elif get_method(method_name).reorderable():
        how = f"{repeats} re-judgments with the prompt's independent parts reordered (shuffle_seed 1..{repeats})"
        variants = [await r.judge({"shuffle_seed": k}) for k in range(1, repeats + 1)]
    else:
        return result("self_consistency", "-", reason=f"deterministic judge (temperature 0) and {method_name} has "
                      "no reorderable prompt parts: a repeat would give the identical answer")
    method = (f"stored score + {how}; interval Krippendorff alpha and exact agreement over the runs; mean std "
              f"over runs per unit (ddof 1, SEAL's stability figure); 95% bootstrap over units ({n_boot}, seed {seed})")
    stored = np.array([np.nan if sc is None else sc for _, _, sc in r.units], float)
    runs = np.vstack([stored, *(_scores(v) for v in variants)])
    rows = []
    for dim in dict.fromkeys(d.name for _, d, _ in r.units):
        cols = np.array([d.name == dim for _, d, _ in r.units])
        sub = runs[:, cols]
        alpha = krippendorff_alpha(sub, "interval")
        low, high = bootstrap_ci(stats.alpha_boot(sub), sub.shape[1], n_boot=min(n_boot, 200), seed=seed)
        rows.append({"dimension": dim, "n": int(cols.sum()), "runs": len(runs), "label": "Krippendorff alpha",
                     "estimate": clean(alpha), "ci": [clean(low), clean(high)], "flagged": None,
                     "exact_agreement": clean(stats.exact_agreement(sub)), "mean_std": clean(stats.mean_run_std(sub))})
    return result("self_consistency", method, rows,
                  units=_unit_rows(r.units, **{f"run{k}": runs[k] for k in range(1, len(runs))}))


async def order_sensitivity(r: Reasker, spans: dict[str, float], *, method_name: str, n_boot: int = 1000,
                            seed: int = 0) -> dict[str, Any]:
    """Score change when CheckEval's questions (within prompts) or SEAL's units are shown in another order."""
    if not get_method(method_name).reorderable():
        return result("order_sensitivity", "-", reason=f"{method_name} has no reorderable prompt parts "
                      "(no shuffle_seed option)")
    method = (f"the units re-judged with shuffle_seed 1 (questions shuffled within each prompt / units listed "
              f"shuffled); change = shuffled - stored; 95% bootstrap of the mean change over units "
              f"({n_boot}, seed {seed})")
    shuffled = _scores(await r.judge({"shuffle_seed": 1}))
    stored = np.array([np.nan if sc is None else sc for _, _, sc in r.units], float)
    return _shift_result("order_sensitivity", method, r, stored, shuffled, n_boot, seed, "mean change (shuffled)",
                         rule="flagged when the 95% interval of the mean absolute change lies above 0.05 of the "
                              "score range", spans=spans, span_key="order")


async def injection(r: Reasker, cases: list[Injection], spans: dict[str, float], *, n_boot: int = 1000,
                    seed: int = 0) -> dict[str, Any]:
    """Score shift when the corpus's ``append`` texts are appended to the chosen outputs (one entry per unit)."""
    appended = [c for c in cases if c.mode == "append"]
    if not appended:
        return result("injection", "-", reason="the injection corpus has no 'append' entries")
    chosen = [appended[i % len(appended)] for i in range(len(r.units))]
    method = (f"each unit's output with one corpus entry appended ({len(appended)} entries, taken in turn); shift = "
              f"injected - stored, also as a share of the score range; 95% bootstrap over units "
              f"({n_boot}, seed {seed})")
    judged = await r.judge({}, samples=[inject(s, c) for (s, _, _), c in zip(r.units, chosen, strict=True)])
    injected = _scores(judged)
    stored = np.array([np.nan if sc is None else sc for _, _, sc in r.units], float)
    out = _shift_result("injection", method, r, stored, injected, n_boot, seed, "mean shift (injected)",
                        rule="flagged when the 95% interval of the mean shift excludes 0", spans=spans)
    for row, case in zip(out.get("units", []), chosen, strict=True):
        row.update(injection=case.id, category=case.category)
    for row in out["rows"]:
        dim_units = [(u, j) for u, j in zip(r.units, judged, strict=True) if u[1].name == row["dimension"]]
        failed = sum(j is not None and j.status == "parse_failed" for _, j in dim_units)
        row["injected_parse_failures"] = failed
    return out


def _shift_result(check: str, method: str, r: Reasker, stored: np.ndarray, new: np.ndarray, n_boot: int, seed: int,
                  label: str, *, rule: str | None, spans: dict[str, float] | None = None,
                  span_key: str | None = None) -> dict[str, Any]:
    """Per dimension: the mean change new - stored with its interval, the mean absolute change, share changed."""
    rows = []
    for dim in dict.fromkeys(d.name for _, d, _ in r.units):
        cols = np.array([d.name == dim for _, d, _ in r.units]) & ~np.isnan(stored) & ~np.isnan(new)
        diff = (new - stored)[cols]
        row: dict[str, Any] = {"dimension": dim, "n": int(cols.sum()), "label": label}
        if len(diff) < 2:
            rows.append(row | {"estimate": None, "ci": None, "flagged": None,
                               "note": f"{len(diff)} unit(s) scored both times"})
            continue
        low, high = bootstrap_ci(stats.mean_boot(diff), len(diff), n_boot=n_boot, seed=seed)
        span = (spans or {}).get(dim, 1.0)
        row |= {"estimate": clean(diff.mean()), "ci": [clean(low), clean(high)],
                "mean_abs_change": clean(np.abs(diff).mean()), "share_changed": clean(np.mean(np.abs(diff) > 1e-9)),
                "shift_of_range": clean(diff.mean() / span) if span else None}
        if span_key == "order":
            a_low, _ = bootstrap_ci(stats.mean_boot(np.abs(diff)), len(diff), n_boot=n_boot, seed=seed)
            row["flagged"] = bool(a_low > 0.05 * span) if not np.isnan(a_low) else None
        else:
            row["flagged"] = bool(low > 0 or high < 0) if not np.isnan(low) else None
        rows.append(row)
    return result(check, method, rows, rule=rule, units=_unit_rows(r.units, new=new))


async def reference_gap(r: Reasker, spans: dict[str, float], why_not: str, *, n_boot: int = 1000,
                        seed: int = 0) -> dict[str, Any]:
    """The judge's side of the preference gap where the human-written references are unrated (SummEval).

    Each chosen unit's reference is judged as if it were the output; gap = reference score - the stored score
    of the system output. The humans' side cannot be computed (nobody rated the references), so nothing is
    flagged: the figure says whether the judge rates the human-written text above or below the systems'.
    """
    method = (f"the chosen units' references judged as outputs; gap = reference score - stored output score; "
              f"95% bootstrap over units ({n_boot}, seed {seed}); the human side is not computed: {why_not}")
    units = [(s, d, sc) for s, d, sc in r.units if s.reference and s.reference.strip() != s.output.strip()]
    if not units:
        return result("preference_gap", "-", reason=why_not)
    sub = Reasker(r.ctx, r.make, units)
    refs = [s.model_copy(update={"id": f"{s.id}+reference", "system_id": "reference", "output": s.reference})
            for s, _, _ in units]
    new = _scores(await sub.judge({}, samples=refs))
    stored = np.array([np.nan if sc is None else sc for _, _, sc in units], float)
    out = _shift_result("preference_gap", method, sub, stored, new, n_boot, seed,
                        "judge gap (reference - output)", rule=None, spans=spans)
    for row in out["rows"]:
        row["flagged"] = None
        row["human_gap"] = None
    out["flagged"] = None
    return out
