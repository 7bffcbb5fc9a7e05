"""``probe``: read a run, compute the offline checks, re-ask its judge on a bounded sample, keep the result."""

from __future__ import annotations

import asyncio
import random
from dataclasses import replace
from pathlib import Path
from typing import Any

from assay._version import __version__
from assay.datasets import Dataset, load_dataset
from assay.errors import AssayError, ConfigError, did_you_mean
from assay.judges import Judge, ManagedJudge, RetryPolicy, load_judge
from assay.meta.pairwise_run import compares_pairs
from assay.methods import Method, RunContext, get_method, make_method
from assay.probe import CHECKS
from assay.probe.injections import load_injections
from assay.probe.offline import (
    HUMAN_WRITTEN_SYSTEMS,
    UNRATED_REFERENCES,
    Unit,
    length_bias,
    preference_gap,
    result,
    scale_use,
)
from assay.probe.reask import Reasker, injection, order_sensitivity, reference_gap, self_consistency
from assay.probe.stats import TOKENIZER, token_count
from assay.run.session import detect_capabilities
from assay.run.store import RunStore
from assay.types import Dimension, Sample

#: Units re-judged per re-asking check when no budget is given.
DEFAULT_BUDGET = 8
#: Where a probe's result is kept in the run (the ``meta`` table), for ``assay view`` and reports.
META_KEY = "probe"
REASK_CHECKS = ("self_consistency", "order_sensitivity", "injection")


def probe(run_dir: str | Path, **kwargs: Any) -> dict[str, Any]:
    """Probe a run directory; see :func:`probe_async` for the arguments."""
    return asyncio.run(probe_async(run_dir, **kwargs))


async def probe_async(run_dir: str | Path, *, checks: list[str] | None = None, budget: int = DEFAULT_BUDGET,
                      judge: str | Judge | None = None, judge_options: dict[str, Any] | None = None,
                      dataset: str | Dataset | None = None, seed: int = 0, n_boot: int = 1000, repeats: int = 2,
                      human_systems: tuple[str, ...] = HUMAN_WRITTEN_SYSTEMS, save: bool = True) -> dict[str, Any]:
    """How far a run's judge can be trusted: the checks of :data:`assay.probe.CHECKS` as one JSON-ready dict.

    Args:
        run_dir: A run directory (judged by ``assay run`` or made by ``assay import``).
        checks: The checks to run (default: all).
        budget: Units (sample x dimension) re-judged by each re-asking check; 0 asks nothing.
        judge: The run's judge, when its spec cannot be rebuilt from the manifest (a GGUF path, a URL with
            other settings); its identity must equal the recorded one, so that calls hit the run's cache.
        judge_options: Backend options for the judge.
        dataset: The run's dataset, when it is not a bundled one loadable by its recorded name.
        seed: Seed of the unit sample and of every bootstrap.
        n_boot: Bootstrap resamples.
        repeats: Re-judgments of self-consistency (the stored run plus ``repeats``: 3 runs by default).
        human_systems: System ids of human-written outputs (preference gap).
        save: Keep the result in the run (meta key ``probe``); the re-asked calls are kept in its cache anyway.

    Returns:
        ``{"run", "method", "judge", "dataset", "units", "budget", "seed", "tokenizer", "checks": [...],
        "calls": {"new", "cached"}}``; each check is ``{"check", "computed", "reason", "method", "rule", "rows",
        "flagged", ...}`` (see :func:`assay.probe.offline.result`); ``notes`` lists the fallbacks the methods
        recorded while re-asking (kept here, not in the run's own notes).
    """
    wanted = _checks(checks)
    if budget < 0:
        raise ConfigError(f"budget (--budget) must be 0 or more, got {budget}")
    with RunStore(run_dir, readonly=True) as store:
        manifest = store.manifest()
        if manifest is None:
            raise AssayError(f"{run_dir}: the run has no manifest (it never started)")
        samples, judgments = store.samples(), store.judgments()
    dims = [Dimension.model_validate(d) for d in manifest.get("dimensions") or []]
    texts, text_reason = _texts(manifest, samples, dataset)
    units = _units(samples, judgments, texts)
    out: dict[str, Any] = {
        "run": str(run_dir), "method": manifest["method"], "judge": _judge_label(manifest),
        "dataset": manifest["dataset"]["name"], "imported": "imported" in manifest, "units": len(judgments),
        "budget": budget, "seed": seed, "tokenizer": TOKENIZER, "assay_version": __version__, "checks": []}
    spans = {d.name: _scale(manifest["method"], d)[1] - _scale(manifest["method"], d)[0] for d in dims}
    for name in wanted:
        if name == "length_bias":
            out["checks"].append(length_bias(units, n_boot=n_boot, seed=seed) if texts is not None
                                 else result(name, "-", reason=text_reason))
        elif name == "scale_use":
            out["checks"].append(scale_use(units, {d.name: _scale(manifest["method"], d) for d in dims}))
        elif name == "preference_gap":
            refs = texts is not None and any(s.reference for s in texts.values())
            out["checks"].append(preference_gap(units, human_written=human_systems, references=refs, n_boot=n_boot,
                                                seed=seed))
    reask = [c for c in wanted if c in REASK_CHECKS]
    if compares_pairs(manifest):  # both orders are in the run: order sensitivity needs no call
        out["checks"] += _pairwise_checks(Path(run_dir), reask, n_boot, seed)
        reask = []
    gap = next((c for c in out["checks"] if c["check"] == "preference_gap"), None)
    if gap is not None and not gap["computed"] and gap["reason"].startswith(UNRATED_REFERENCES):
        reask.append("preference_gap")  # the judge's side, from the references
    calls: dict[str, Any] = {"new": 0, "cached": 0}
    if reask:
        why = _no_reask(manifest, budget, texts, text_reason, judgments)
        if why:
            out["checks"] += [result(c, "-", reason=why) for c in reask if c != "preference_gap"]
        else:
            assert texts is not None
            checks_out, calls = await _reask(Path(run_dir), manifest, dims, texts, judgments, reask, spans,
                                             judge=judge, judge_options=judge_options, dataset=dataset, budget=budget,
                                             seed=seed, n_boot=n_boot, repeats=repeats)
            if "preference_gap" in reask:  # the offline reason is replaced by the judge's side
                out["checks"].remove(gap)
            out["checks"] += checks_out
    out["checks"].sort(key=lambda c: CHECKS.index(c["check"]))
    out["notes"] = calls.pop("notes", [])
    out["calls"] = calls
    if save:
        with RunStore(run_dir) as store:
            store.set_meta(META_KEY, out)
    return out


def _pairwise_checks(run_dir: Path, wanted: list[str], n_boot: int, seed: int) -> list[dict[str, Any]]:
    """A pairwise run's re-asking checks: order sensitivity from its own verdicts, the others not computed."""
    from assay.meta.pairwise_run import read_pairwise
    from assay.probe.offline import pairwise_order

    out = []
    for name in wanted:
        if name == "order_sensitivity":
            out.append(pairwise_order(read_pairwise(run_dir)[0], n_boot=n_boot, seed=seed))
        else:
            out.append(result(name, "-", reason="not available for a pairwise run (its items are pairs; order "
                                                "sensitivity is read from the run itself)"))
    return out


def _checks(checks: list[str] | None) -> list[str]:
    names = [c.strip() for item in (checks or list(CHECKS)) for c in item.split(",") if c.strip()]
    for c in names:
        if c not in CHECKS:
            raise ConfigError(f"unknown check {c!r} (checks: {', '.join(CHECKS)})." + did_you_mean(c, list(CHECKS)))
    return list(dict.fromkeys(names))


def _judge_label(manifest: dict[str, Any]) -> str:
    j = manifest.get("judge") or {}
    return f"{j.get('backend')}:{j.get('model')}"


def _scale(method: str, dim: Dimension) -> tuple[float, float, bool]:
    """The scale the method's scores are on (its :meth:`~assay.methods.base.Method.score_range`)."""
    return get_method(method).score_range(dim)


def _texts(manifest: dict[str, Any], samples: list[dict[str, Any]],
           dataset: str | Dataset | None) -> tuple[dict[str, Sample] | None, str | None]:
    """The run's samples with their texts, from the dataset it recorded (checked by hash), or why not."""
    rec = manifest["dataset"]
    try:
        data = dataset if isinstance(dataset, Dataset) else load_dataset(dataset or rec["name"])
    except AssayError as exc:
        return None, f"the run's texts are not available ({exc}); pass the dataset (--dataset)"
    if data.sha256 != rec["sha256"]:
        return None, (f"dataset {data.name!r} ({data.path}) is not the file the run judged (its hash differs); "
                      "pass the run's dataset (--dataset)")
    by_id = {s.id: s for s in data.all_samples}
    missing = [s["id"] for s in samples if s["id"] not in by_id]
    if missing:
        return None, f"the dataset has no sample {missing[0]!r} of the run; pass the run's dataset (--dataset)"
    return {s["id"]: by_id[s["id"]] for s in samples}, None


def _units(samples: list[dict[str, Any]], judgments: list[Any], texts: dict[str, Sample] | None) -> list[Unit]:
    info = {s["id"]: s for s in samples}
    return [Unit(sample_id=j.sample_id, dimension=j.dimension, system_id=info.get(j.sample_id, {}).get("system_id", ""),
                 score=j.score, status=j.status or "scored",
                 human=(info.get(j.sample_id, {}).get("human") or {}).get(j.dimension),
                 length=token_count(texts[j.sample_id].output) if texts and j.sample_id in texts else 0,
                 doc_id=info.get(j.sample_id, {}).get("doc_id", ""))
            for j in judgments]


def _no_reask(manifest: dict[str, Any], budget: int, texts: Any, text_reason: str | None, judgments: list[Any]) -> str:
    """Why the re-asking checks cannot run, or '' when they can."""
    if "imported" in manifest:
        return "imported run: its answers came from a file, there is no judge to re-ask"
    if budget == 0:
        return "budget 0: no judge calls allowed"
    if texts is None:
        return text_reason or "the run's texts are not available"
    if not any(j.status == "scored" for j in judgments):
        return "no scored unit to re-judge"
    return ""


def _stochastic(manifest: dict[str, Any]) -> bool:
    """Whether the run's judge sampled (the method's :meth:`~assay.methods.base.Method.sampled`)."""
    return get_method(manifest["method"]).sampled(manifest.get("method_settings") or {})


def _rebuild_judge(manifest: dict[str, Any], judge: str | Judge | None, options: dict[str, Any] | None) -> Judge:
    """The run's judge, rebuilt from its recorded identity (or the one given), refused if the identity differs."""
    rec = manifest["judge"]
    if judge is None:
        spec = f"{rec['backend']}:{rec['model']}" + (f"@{rec['base_url']}" if rec.get("base_url") else "")
        judge = load_judge(spec, **(options or {}))
    elif isinstance(judge, str):
        judge = load_judge(judge, **(options or {}))
    if judge.identity.model_dump(mode="json") != rec:
        raise ConfigError(f"the judge {judge.identity.label} is not the run's judge ({rec['backend']}:{rec['model']}, "
                          f"identity {rec}): its calls would not be the run's; pass the run's judge (--judge, "
                          "--judge-opt)")
    return judge


async def _reask(run_dir: Path, manifest: dict[str, Any], dims: list[Dimension], texts: dict[str, Sample],
                 judgments: list[Any], checks: list[str], spans: dict[str, float], *, judge: str | Judge | None,
                 judge_options: dict[str, Any] | None, dataset: str | Dataset | None, budget: int, seed: int,
                 n_boot: int, repeats: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The re-asking checks, through the run's managed judge with the run store as the cache."""
    owns = not isinstance(judge, Judge)
    notes: dict[str, int] = {}  # the methods' fallbacks while probing: kept in the probe's result, not the run's notes
    bare = _rebuild_judge(manifest, judge, judge_options)
    data = dataset if isinstance(dataset, Dataset) else load_dataset(dataset or manifest["dataset"]["name"])
    data = replace(data, samples=list(texts.values()), pool=data.all_samples)
    try:
        with RunStore(run_dir) as store:
            await detect_capabilities(bare, store, None)  # the run's recorded answer: no call
            managed = ManagedJudge(bare, cache=store.calls, retry=RetryPolicy())
            ctx = RunContext(dataset=data, dimensions=dims, judge=managed,
                             note=lambda kind, msg: notes.setdefault(f"{kind}: {msg}", 0),
                             answer_format=(manifest.get("answer_format") or {}).get("used", "free"))
            reasker = Reasker(ctx, _method_factory(manifest, ctx), _choose(judgments, texts, dims, budget, seed))
            name = manifest["method"]
            out = []
            for check in checks:
                if check == "self_consistency":
                    out.append(await self_consistency(reasker, stochastic=_stochastic(manifest), method_name=name,
                                                      repeats=repeats, n_boot=n_boot, seed=seed))
                elif check == "preference_gap":
                    out.append(await reference_gap(reasker, spans, UNRATED_REFERENCES, n_boot=n_boot, seed=seed))
                elif check == "order_sensitivity":
                    out.append(await order_sensitivity(reasker, spans, method_name=name, n_boot=n_boot, seed=seed))
                else:
                    out.append(await injection(reasker, load_injections(), spans, n_boot=n_boot, seed=seed))
            usage = managed.ledger.by_stage.values()
            return out, {"new": sum(u.calls for u in usage), "cached": sum(u.cached_calls for u in usage),
                         "notes": list(notes)}
    finally:
        if owns:
            await bare.aclose()


def _method_factory(manifest: dict[str, Any], ctx: RunContext) -> Any:
    """Builds (and prepares, once per variant) the run's method from its recorded options plus a variant's."""
    name, settings = manifest["method"], manifest.get("method_settings") or {}
    fields = get_method(name).Options.model_fields
    base = {k: v for k, v in settings.items() if k in fields}
    made: dict[str, Method] = {}

    async def make(extra: dict[str, Any]) -> Method:
        key = repr(sorted(extra.items()))
        if key not in made:
            meth = make_method(name, base | extra)
            await meth.prepare(ctx)  # artifacts as the run prepared them: their calls come from the cache
            made[key] = meth
        return made[key]
    return make


def _choose(judgments: list[Any], texts: dict[str, Sample], dims: list[Dimension], budget: int,
            seed: int) -> list[tuple[Sample, Dimension, float | None]]:
    """``budget`` scored units drawn with ``seed``, in the run's order."""
    by_name = {d.name: d for d in dims}
    scored = [j for j in judgments if j.status == "scored" and j.dimension in by_name]
    picked = sorted(random.Random(seed).sample(range(len(scored)), min(budget, len(scored))))
    return [(texts[scored[i].sample_id], by_name[scored[i].dimension], scored[i].score) for i in picked]
