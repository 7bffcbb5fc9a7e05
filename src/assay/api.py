"""The Python API: ``evaluate`` runs a method over samples with a judge into a resumable run directory."""

from __future__ import annotations

import asyncio
import functools
import platform
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from assay._version import __version__
from assay.common.hashing import content_hash
from assay.datasets import Dataset, load_dataset
from assay.errors import ConfigError, did_you_mean
from assay.judges import DEFAULT_JUDGE, Judge, JudgeIdentity, ManagedJudge, PriceTable, RetryPolicy, load_judge
from assay.judges.ask import ask
from assay.judges.base import Request, Response
from assay.judges.batch import (
    BATCH_CONCURRENCY,
    BatchJudge,
    BatchOptions,
    batch_record,
    check_batch_judge,
)
from assay.judges.batch import (
    WAIT_S as BATCH_WAIT_S,
)
from assay.methods import Method, RunContext, make_method
from assay.run.answer_format import check_asked, decide
from assay.run.estimate import Estimate, estimate_run
from assay.run.executor import Progress, default_unit_concurrency, execute, order_units
from assay.run.ray_executor import execute_ray, import_ray, parse_executor, ray_settings_for
from assay.run.store import RunStore, check_run_dir
from assay.types import Dimension, Judgment, Sample, Usage

P = ParamSpec("P")
R = TypeVar("R")


def blocking(coroutine: Callable[P, Awaitable[R]]) -> Callable[P, R]:
    """The blocking form of an API coroutine: same signature and docstring, run with ``asyncio.run``."""
    @functools.wraps(coroutine)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        return asyncio.run(coroutine(*args, **kwargs))  # type: ignore[arg-type]
    run.__name__ = run.__qualname__ = coroutine.__name__.removesuffix("_async")
    return run


@dataclass
class RunResult:
    """What a run produced: all its judgments (old and new), its manifest, usage, notes and unit counts.

    Attributes:
        units: The whole run's units (this session's and earlier ones'): ``asked`` (samples x
            dimensions), ``scored``, ``parse_failed``, ``failed`` (judge calls failed after all
            retries) and ``undone`` (never finished); see :meth:`RunStore.unit_counts`.
    """

    run_dir: Path
    judgments: list[Judgment]
    manifest: dict[str, Any]
    usage: dict[str, Usage]
    notes: list[dict[str, Any]]
    progress: Progress
    resumed: bool
    units: dict[str, int] = field(default_factory=dict)

    @property
    def failed(self) -> int:
        """Units whose judge calls failed after all retries; re-running the run retries them."""
        return self.units.get("failed", 0)

    @property
    def undone(self) -> int:
        """Units asked for but never finished (an interrupted or stopped run)."""
        return self.units.get("undone", 0)

    @property
    def complete(self) -> bool:
        """Whether every unit has an answer (scored or parse-failed): nothing failed, nothing undone."""
        return not self.failed and not self.undone

    def to_pandas(self) -> Any:
        with RunStore(self.run_dir, readonly=True) as store:
            return store.to_pandas()

    def scores(self) -> dict[tuple[str, str], float | None]:
        return {(j.sample_id, j.dimension): j.score for j in self.judgments}


async def evaluate_async(
    data: Dataset | str | list[Sample],
    *,
    method: str | Method = "direct",
    judge: str | Judge = DEFAULT_JUDGE,
    dimensions: list[str] | list[Dimension] | None = None,
    run_dir: str | Path | None = None,
    options: dict[str, Any] | None = None,
    judge_options: dict[str, Any] | None = None,
    limit: int | None = None,
    docs: int | None = None,
    concurrency: int | None = None,
    retry: RetryPolicy | None = None,
    prices: PriceTable | None = None,
    on_start: Callable[[int, int], None] | None = None,
    on_update: Callable[[Progress, ManagedJudge], None] | None = None,
    on_status: Callable[[str], None] | None = None,
    batch: bool | BatchOptions = False,
    executor: str = "local",
    workers: int | None = None,
    worker_cpus: float | None = None,
    worker_gpus: float | None = None,
    estimate: bool = False,
    answer_format: str = "auto",
) -> RunResult | Estimate:
    """Judge a dataset's samples with a method and a judge; resume if ``run_dir`` holds this run.

    :func:`evaluate` is this coroutine run to completion (``asyncio.run``); await this form from a running loop.

    Args:
        data: A Dataset, a dataset spec for :func:`assay.datasets.load_dataset`, or a list of
            Samples (then ``dimensions`` must be Dimension objects).
        method: A registered method name (:func:`assay.method_names`: the built-ins and plugins) or instance.
        judge: A judge spec string (see :mod:`assay.judges`), loaded and closed by this call, or a Judge
            object, which stays open for its owner to reuse and close.
        dimensions: Dimension names (or Dimension objects); the dataset's default ones if None (or,
            for a method that brings its own dimensions such as GER-Eval's rubric criteria, all of those).
        run_dir: Where the run is stored; a temporary directory if None.
        options: The method's options (validated; unknown keys are an error).
        judge_options: Backend options (``n_threads``, ``timeout``, ...).
        limit / docs: Keep the first ``docs`` source documents, then the first ``limit`` samples.
        concurrency: Judge calls in flight (default: the backend's).
        retry: Retry and timeout policy.
        prices: Price table for cost accounting (see :meth:`PriceTable.load`); it must price the
            judge's model. The cost goes into the manifest (``cost_usd``, ``usage`` per stage).
        on_start: Called with (units to do, units already done) before work starts.
        on_update: Called after each unit (the CLI's progress bar).
        on_status: Called with a line saying what the run is doing before judging starts (loading the
            judge, probing it, building artifacts such as G-Eval's steps, with the judge calls so far), so
            that a long preparation never looks like a hang; in batch mode also each change of a batch's state.
        batch: Send the run's calls through the provider's batch API (an ``openai:`` judge only): all units
            at once, their requests gathered per stage into batches, resumable (docs/judges.md, "Batch
            mode"). True for the defaults, or :class:`~assay.judges.batch.BatchOptions`.
        executor: Where the units run: ``local`` (this process, asyncio), ``ray`` (a local Ray instance),
            ``ray:auto`` (the cluster this machine belongs to) or ``ray:ray://HOST:PORT``; see docs/scale.md.
            Ray needs the ``ray`` extra. The method is prepared here and the store written here either way.
        workers / worker_cpus / worker_gpus: Ray only: judge actors (default: as many as the cluster fits)
            and the CPUs (default 1) and GPUs (default 0) each reserves (an embedded judge: match ``n_threads``).
        estimate: Call no judge: return the :class:`~assay.run.estimate.Estimate` of the run instead (calls and
            prompt / completion tokens per stage, its cost with ``prices``), counted by running the method
            against a stand-in judge. ``run_dir`` is only read (a resumed run's done units and cached calls).
        answer_format: ``json`` (the method's answers decoded under its JSON schema, where the judge enforces one),
            ``free`` (free text, read by the method's free-text reader) or ``auto`` (json where the judge enforces
            schemas and the method's configuration does not prescribe free text, as a paper preset does); decided
            once per run (:mod:`assay.run.answer_format`), recorded in the manifest and each trace.
    """
    # before the judge is loaded: a missing extra or a bad setting costs nothing
    ray_settings = ray_settings_for(parse_executor(executor), workers, worker_cpus, worker_gpus)
    if ray_settings is not None and batch:
        raise ConfigError("--batch and --executor ray do not go together: a batch is submitted by one process "
                          "(run --batch with the local executor; the provider does the scaling)")
    if ray_settings is not None:
        import_ray()
    check_asked(answer_format)
    dataset, dim_names = _as_dataset(data, dimensions)
    dataset = dataset.select(limit=limit, docs=docs)
    meth = make_method(method, options) if isinstance(method, str) else method
    dims = _dimensions(meth, dataset, dim_names)
    if estimate:
        return await estimate_run(meth, dataset, dims, judge, judge_options=judge_options, run_dir=run_dir,
                                  prices=prices, batch=bool(batch), answer_format=answer_format,
                                  fingerprint=lambda who: _fingerprint(meth, who, dataset, dims, answer_format))
    if run_dir is not None:
        check_run_dir(run_dir)
    run_path = Path(run_dir) if run_dir is not None else Path(tempfile.mkdtemp(prefix="assay-run-"))
    owns_judge = isinstance(judge, str)  # a Judge object passed in stays open: its owner may use it again
    status = on_status or (lambda message: None)
    if owns_judge:
        status(f"loading judge {judge}")
    bare = load_judge(judge, **(judge_options or {})) if isinstance(judge, str) else judge
    try:
        if prices is not None:  # before the run directory is made
            prices.check_covers(bare.identity.model)
        if batch:
            check_batch_judge(bare)
        store = RunStore(run_path)  # locked for this process; an empty or damaged database is refused
    except BaseException:
        if owns_judge:
            await bare.aclose()
        raise
    batcher = _batcher(bare, store, batch, prices, concurrency, status) if batch else None
    if batcher is not None:  # every unit at once; calls wait for batches, not for a call slot
        retry = (retry or RetryPolicy()).model_copy(update={"timeout_s": BATCH_WAIT_S})
        managed = ManagedJudge(batcher, cache=store, concurrency=BATCH_CONCURRENCY, retry=retry, prices=prices)
    else:
        managed = ManagedJudge(bare, cache=store, concurrency=concurrency, retry=retry, prices=prices)
    try:
        # before any judge call: another run's settings must cost nothing and write nothing here
        store.check(_fingerprint(meth, bare.identity, dataset, dims, answer_format), before_prepare=True,
                    upgrade=meth.Options.upgrade_settings)
        if batcher is None:
            _note_unfinished_batches(store)
        status(f"checking what {bare.identity.label} supports")
        logprobs_reason = await _detect_capabilities(bare, store, retry)
        notes: list[tuple[str, str]] = []

        def note(kind: str, message: str) -> None:
            store.add_note(kind, message)
            notes.append((kind, message))

        if logprobs_reason and logprobs_reason.startswith("probe:") and not managed.supports_logprobs:
            note("capability", f"{managed.identity.label} gives no log-probabilities ({logprobs_reason}); methods "
                               "that read them use their fallback (G-Eval: sampling)")
        # issue 27: the answer format, decided once (a probe only when the method would use a schema)
        old = store.manifest() or {}
        fmt = await decide(answer_format, meth, bare, retry=retry, recorded=old.get("answer_format")
                           if old.get("judge") == bare.identity.model_dump(mode="json") else None)
        if fmt.fallback:
            note("answer-format", fmt.reason)

        def put_artifact(name: str, text: str) -> str:
            digest = content_hash(text)
            store.put_artifact(name, digest, text)
            return digest

        ctx = RunContext(dataset=dataset, dimensions=dims, judge=managed, note=note, artifacts=put_artifact,
                         status=status, answer_format=fmt.used)
        prepared = await preparing(meth.prepare(ctx), meth.name, managed, status)
        manifest = {
            **_fingerprint(meth, bare.identity, dataset, dims, answer_format),  # with what preparation decided
            "answer_format": fmt.record(),
            "artifacts": prepared,
            "judge_logprobs": bare.supports_logprobs,
            "judge_logprobs_reason": logprobs_reason,
            "judge_runtime": bare.runtime(),
            "dataset_level": dataset.info.level,
            "prices": prices.model_dump() if prices is not None else None,
            "assay_version": __version__,
            "python": platform.python_version(),
            "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        resumed = store.begin(manifest, upgrade=meth.Options.upgrade_settings)
        store.put_samples(dataset.samples)
        units = order_units(dataset.samples, dims, store.done_units(), by=meth.unit_order)
        if on_start:
            on_start(len(units), len(dataset.samples) * len(dims) - len(units))
        try:
            update = (lambda p: on_update(p, managed)) if on_update else None
            if ray_settings is not None:
                _, progress = await execute_ray(meth, units, ctx, store, ray_settings, judge=judge,
                                                judge_options=judge_options, concurrency=concurrency, retry=retry,
                                                prices=prices, on_update=update)
            else:
                _, progress = await execute(
                    meth, units, ctx, store,
                    concurrency=len(units) if batcher is not None else default_unit_concurrency(managed),
                    on_update=update, unit_scope=batcher.unit if batcher is not None else None)
        finally:  # usage is kept even when the run is interrupted
            sessions = store.get_meta("usage_sessions") or []
            sessions.append({k: v.model_dump() for k, v in managed.ledger.by_stage.items()}
                            | {"_retries": managed.ledger.retries, "_failures": managed.ledger.failures,
                               "_prices": prices.model_dump() if prices is not None else None,
                               "_executor": executor}
                            | ({"_batch": batch_record(batcher)} if batcher is not None else {}))
            store.set_meta("usage_sessions", sessions)
        manifest = store.manifest() or manifest
        manifest["notes"] = store.notes()
        manifest["usage"], manifest["cost_usd"] = usage_totals(sessions)
        counts = manifest["units"] = store.unit_counts()
        if prices is not None:  # a resumed run records the table it last ran with; sessions keep each one
            manifest["prices"] = prices.model_dump()
        if batcher is not None:  # this session's batch mode (each session's is in usage_sessions)
            manifest["batch"] = batch_record(batcher)
        store.set_meta("manifest", manifest)
        return RunResult(run_dir=run_path, judgments=store.judgments(), manifest=manifest,
                         usage=dict(managed.ledger.by_stage), notes=store.notes(), progress=progress,
                         resumed=resumed, units=counts)
    finally:
        if owns_judge:
            await managed.aclose()
        elif batcher is not None:  # its tasks only: the judge object stays open for its owner
            await batcher.stop()
        store.close()


def _note_unfinished_batches(store: RunStore) -> None:
    """Say so when a live session resumes a run whose batches were never taken in: it pays for them again."""
    unfinished = store.batches(live=True)
    if unfinished:
        ids = ", ".join(b["batch_id"] or b["input_file"] for b in unfinished)
        store.add_note("batch", f"{len(unfinished)} batch(es) of an earlier --batch session are unfinished ({ids}); "
                                "this session runs live and pays again for the requests they carry; re-run with "
                                "--batch to take them up instead")


def _batcher(bare: Judge, store: RunStore, batch: bool | BatchOptions, prices: PriceTable | None,
             concurrency: int | None, status: Callable[[str], None]) -> BatchJudge:
    """The batch judge of a ``batch=`` run; what it does instead of live calls goes into the run's notes.
    ``concurrency`` bounds its live calls (``retry="live"``), as it bounds a live run's; ``status`` hears of
    each batch's state (a batch may take hours: the run must not look hung)."""
    options = batch if isinstance(batch, BatchOptions) else BatchOptions()
    if prices is not None and prices.batch_discount is None:
        store.add_note("batch", "the price table gives no batch_discount: batch calls are priced in full")
    return BatchJudge(bare, store, options, prices=prices, note=store.add_note, live_concurrency=concurrency,
                      on_state=status)



#: :func:`evaluate_async` run to completion: the same keywords, written once.
evaluate = blocking(evaluate_async)


def usage_totals(sessions: list[dict[str, Any]]) -> tuple[dict[str, dict[str, Any]], float | None]:
    """Usage per stage summed over a run's sessions, and its cost (None when no session had prices)."""
    by_stage: dict[str, Usage] = {}
    for session in sessions:
        for stage, u in session.items():
            if not stage.startswith("_"):
                by_stage.setdefault(stage, Usage()).add(Usage(**u))
    priced = any(s.get("_prices") for s in sessions)
    cost = sum(u.cost_usd for u in by_stage.values()) if priced else None
    return {k: v.model_dump() for k, v in by_stage.items()}, cost


async def preparing(prepare: Awaitable[R], method: str, judge: ManagedJudge,
                    status: Callable[[str], None], every_s: float = 0.5) -> R:
    """Await a method's preparation (a run's, or :func:`assay.prepare`'s build), saying every ``every_s``
    seconds how many judge calls it has made, so that a long build never looks like a hang."""
    task = asyncio.ensure_future(prepare)
    started = time.monotonic()
    status(f"preparing {method} (artifacts: steps, checklists, rubrics, ...)")
    while not task.done():
        await asyncio.wait({task}, timeout=every_s)
        if not task.done():
            u = judge.ledger.total()
            status(f"preparing {method}: {u.calls} judge call(s) so far ({u.cached_calls} from cache), "
                   f"{time.monotonic() - started:.0f} s")
    return task.result()


async def _detect_capabilities(judge: Judge, store: RunStore, retry: RetryPolicy | None) -> str | None:
    """Ask the judge once whether it gives log-probabilities; a resumed run reuses the recorded answer.

    The probe goes through the run's retry policy (a 503 at start is retried, never read as "no"); it is
    not cached nor accounted as a judgment's call.

    Returns:
        How the answer was decided (for the manifest), or None for a judge that needs no probe.
    """
    detect = getattr(judge, "detect_logprobs", None)
    if detect is None:
        return None
    old = store.manifest()
    known = None
    if old is not None and old.get("judge") == judge.identity.model_dump(mode="json") and "judge_logprobs" in old:
        known = bool(old["judge_logprobs"])
    prober = ManagedJudge(judge, retry=retry)  # no cache, its own ledger: the probe is no judgment's call

    async def send(request: Request) -> Response:
        return (await ask(prober, request, stage="capability")).response

    await detect(known, send=send)
    return getattr(judge, "logprobs_reason", None)


def _fingerprint(meth: Method, judge: JudgeIdentity, dataset: Dataset, dims: list[Dimension],
                 answer_format: str = "free") -> dict[str, Any]:
    """The manifest fields a resumed run must match (``store.FINGERPRINT``), in one place for check and record.

    ``answer_format_asked`` is recorded only when not ``free``: a run stored before the option existed (free text)
    resumes with ``--answer-format free``.
    """
    return {
        "method": meth.name,
        "method_settings": meth.settings(),
        "judge": judge.model_dump(mode="json"),
        "dataset": {"name": dataset.name, "sha256": dataset.sha256},
        "dimensions": [d.model_dump(mode="json") for d in dims],
        **({"answer_format_asked": answer_format} if answer_format != "free" else {}),
    }


def _as_dataset(data: Dataset | str | list[Sample],
                dimensions: list[str] | list[Dimension] | None) -> tuple[Dataset, list[str] | None]:
    """The dataset to run and the dimension names to judge, from whatever the caller passed."""
    objects = [d for d in dimensions or [] if isinstance(d, Dimension)]
    names = [d.name if isinstance(d, Dimension) else d for d in dimensions] if dimensions else None
    for i, name in enumerate(names or []):
        if name in (names or [])[:i]:  # each (sample, dimension) unit is judged and stored once
            raise ConfigError(f"dimension {name!r} is listed twice (--dimension {name} given more than once)")
    if isinstance(data, list):
        return Dataset.from_samples(data, objects), names
    dataset = load_dataset(data) if isinstance(data, str) else data
    return dataset, names


def _dimensions(meth: Method, dataset: Dataset, names: list[str] | None) -> list[Dimension]:
    """The run's dimensions: the method's own (e.g. rubric criteria) if it has them, else the dataset's."""
    own = meth.dimensions(dataset)
    if own is None:
        return dataset.dimensions(names)
    if not names:
        return own
    by_name = {d.name: d for d in own}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise ConfigError(f"method {meth.name!r} judges no dimension {unknown[0]!r}."
                          + did_you_mean(unknown[0], list(by_name)))
    return [by_name[n] for n in names]
