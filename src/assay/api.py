"""The Python API: ``evaluate`` runs a method over samples with a judge into a resumable run directory."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.datasets import Dataset
from assay.errors import ConfigError
from assay.judges import DEFAULT_JUDGE, Judge, ManagedJudge, PriceTable, RetryPolicy
from assay.methods import DEFAULT_METHOD, Method
from assay.run.executor import Progress
from assay.run.ray_settings import import_ray, parse_executor, ray_settings_for
from assay.run.session import RunPlan, RunResult, RunSession, RunSettings, blocking
from assay.types import Dimension, Sample

if TYPE_CHECKING:  # imported where used: a plain live run needs no batch, no estimate and no Ray executor
    from assay.judges.batch import BatchOptions
    from assay.run.estimate import Estimate

__all__ = ["RunResult", "evaluate", "evaluate_async"]


async def evaluate_async(
    data: Dataset | str | list[Sample],
    *,
    method: str | Method = DEFAULT_METHOD,
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
    on_plan: Callable[[int], None] | None = None,
    on_start: Callable[[int, int], None] | None = None,
    on_update: Callable[[Progress, ManagedJudge], None] | None = None,
    on_status: Callable[[str], None] | None = None,
    on_warning: Callable[[str], None] | None = None,
    batch: bool | BatchOptions = False,
    executor: str = "local",
    workers: int | None = None,
    worker_cpus: float | None = None,
    worker_gpus: float | None = None,
    estimate: bool = False,
    retry_parse_failures: bool = False,
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
        on_plan: Called with the number of units the run covers (samples x dimensions, done ones included) once the
            plan is resolved, before the judge is loaded (the CLI starts its summary's helper process there).
        on_start: Called with (units to do, units already done) before work starts.
        on_update: Called after each unit (the CLI's progress bar).
        on_status: Called with a line saying what the run is doing before judging starts (loading the
            judge, probing it, building artifacts such as G-Eval's steps, with the judge calls so far), so
            that a long preparation never looks like a hang; in batch mode also each change of a batch's state.
        on_warning: Called with a line to keep in view before judging starts: the units whose prompts exceed the
            judge's context, where it is known (docs/judges.md, "Context size"); default ``on_status``. The line
            also goes into the run's notes.
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
        retry_parse_failures: On resume, ask the parse-failed units again as a new attempt (their own cache
            keys; the earlier answers kept in the trace, :class:`assay.run.reask.Reasking`). Off by default:
            a deterministic judge answers the same.
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
    plan = RunPlan.resolve(data, method=method, dimensions=dimensions, options=options, limit=limit, docs=docs,
                           answer_format=answer_format)
    if estimate:
        from assay.run.estimate import estimate_run

        return await estimate_run(plan, judge, judge_options=judge_options, run_dir=run_dir, prices=prices,
                                  batch=bool(batch))
    if on_plan:
        on_plan(len(plan.dataset.samples) * len(plan.dimensions))
    settings = RunSettings(judge_options=dict(judge_options or {}), concurrency=concurrency, retry=retry,
                           prices=prices, batch=batch, ray=ray_settings, executor=executor,
                           retry_parse_failures=retry_parse_failures)
    async with RunSession(plan, judge, run_dir, settings, status=on_status, warn=on_warning) as session:
        return await session.run(on_start, on_update)


#: :func:`evaluate_async` run to completion: the same keywords, written once.
evaluate = blocking(evaluate_async)
