"""A run as an object: plan, then open -> check -> prepare -> execute -> finish, in small steps that ``evaluate``,
``--estimate``, ``assay import``, ``assay probe`` and the Ray executor share instead of each wiring its own.

:class:`RunPlan` is what is run (the method, the selected dataset, the dimensions), resolved before any judge is
loaded so that a bad name or option costs nothing; its :meth:`RunPlan.fingerprint` is what a resumed run must match.
:class:`RunSession` holds what a live run owns while it runs (the judge, the managed judge, the store, the context)
and releases it in :meth:`RunSession.close`, whatever happened.
"""

from __future__ import annotations

import asyncio
import functools
import platform
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from assay._version import __version__
from assay.common.hashing import content_hash
from assay.datasets import Dataset, load_dataset
from assay.errors import AssayError, ConfigError, did_you_mean
from assay.judges import Judge, JudgeIdentity, ManagedJudge, PriceTable, RetryPolicy, load_judge
from assay.judges.ask import ask
from assay.judges.base import Request, Response
from assay.judges.tokens import judge_counter
from assay.methods import Method, RunContext, make_method
from assay.run.answer_format import AnswerFormat, check_asked, decide
from assay.run.executor import Progress, Unit, default_unit_concurrency, execute, order_units, young_collections
from assay.run.late_calls import take_late_calls
from assay.run.reask import Reasking, parse_failures
from assay.run.store import RunStore, check_run_dir
from assay.types import Dimension, Judgment, Sample, Usage

if TYPE_CHECKING:  # imported where used: a live run without --batch or a known context size needs neither
    from assay.judges.batch import BatchJudge, BatchOptions
    from assay.run.counting import ContextChecked

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
        judgments: Every judgment of the run, read from its store when first asked for (a large run's result
            costs nothing until then: the CLI's summary reads only the score columns).
        units: The whole run's units (this session's and earlier ones'): ``asked`` (samples x
            dimensions), ``scored``, ``parse_failed``, ``failed`` (judge calls failed after all
            retries) and ``undone`` (never finished); see :meth:`RunStore.unit_counts`.
    """

    run_dir: Path
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

    @functools.cached_property
    def judgments(self) -> list[Judgment]:
        with RunStore(self.run_dir, readonly=True) as store:
            return store.judgments()

    def to_pandas(self) -> Any:
        with RunStore(self.run_dir, readonly=True) as store:
            return store.to_pandas()

    def scores(self) -> dict[tuple[str, str], float | None]:
        return {(j.sample_id, j.dimension): j.score for j in self.judgments}


def fingerprint(method: str, settings: dict[str, Any], judge: JudgeIdentity, dataset: Dataset,
                dims: list[Dimension]) -> dict[str, Any]:
    """The manifest fields a resumed (or added-to) run must match (``store.FINGERPRINT``), written once for a live
    run, its estimate and an import."""
    return {
        "method": method,
        "method_settings": settings,
        "judge": judge.model_dump(mode="json"),
        "dataset": {"name": dataset.name, "sha256": dataset.sha256},
        "dimensions": [d.model_dump(mode="json") for d in dims],
    }


@dataclass
class RunPlan:
    """What a run judges: the method, the selected dataset and the dimensions; resolved with no judge loaded.

    Attributes:
        method: The method instance (its options validated).
        dataset: The dataset after ``limit`` / ``docs`` selection.
        dimensions: The dimensions judged (the method's own, e.g. rubric criteria, or the dataset's).
        answer_format: ``--answer-format`` as asked (``free``, ``json``, ``auto``); what is used is decided once
            the judge is known (:mod:`assay.run.answer_format`).
    """

    method: Method
    dataset: Dataset
    dimensions: list[Dimension]
    answer_format: str = "free"

    @classmethod
    def resolve(cls, data: Dataset | str | list[Sample], *, method: str | Method,
                dimensions: list[str] | list[Dimension] | None = None, options: dict[str, Any] | None = None,
                limit: int | None = None, docs: int | None = None, answer_format: str = "free") -> RunPlan:
        """The plan of ``evaluate``'s arguments.

        Raises:
            ConfigError / InputError: An unknown dataset, method, option or dimension; a dimension given twice.
        """
        check_asked(answer_format)
        dataset, names = _as_dataset(data, dimensions)
        dataset = dataset.select(limit=limit, docs=docs)
        meth = make_method(method, options) if isinstance(method, str) else method
        dataset = meth.work_items(dataset)  # e.g. pairwise: one item per pair of outputs
        return cls(meth, dataset, _dimensions(meth, dataset, names), answer_format)

    def resume_as(self, stored: dict[str, Any] | None) -> bool:
        """Take a stored run's free text when ``auto`` was asked: ``auto`` decides the format of a new run only, so
        that a run stored in free text (before ``--answer-format``, or with it free) resumes as it was and never
        pays for its answers again in another format. Returns whether it did."""
        if stored is not None and self.answer_format == "auto" and "answer_format_asked" not in stored:
            self.answer_format = "free"
            return True
        return False

    def fingerprint(self, judge: JudgeIdentity) -> dict[str, Any]:
        """The run's fingerprint with this judge (the method's settings as they stand now). The answer format asked
        is part of it only when not ``free``: a run stored before the option existed (free text) resumes with
        ``--answer-format free``."""
        out = fingerprint(self.method.name, self.method.settings(), judge, self.dataset, self.dimensions)
        return out | ({"answer_format_asked": self.answer_format} if self.answer_format != "free" else {})


@dataclass
class RunSettings:
    """How a live run calls its judge: backend options, concurrency, retries, prices, batch mode, executor.

    Attributes:
        judge_options: Backend options (``n_threads``, ``timeout``, ...).
        concurrency: Judge calls in flight (None: the backend's default).
        retry: Retry and timeout policy.
        prices: Price table for cost accounting.
        batch: Send calls through the provider's batch API (True for the defaults, or the options).
        ray: Ray settings (:func:`assay.run.ray_settings.ray_settings_for`), or None for the local executor.
        executor: The executor as named (recorded in the usage sessions).
        retry_parse_failures: On resume, ask the parse-failed units again as a new attempt.
    """

    judge_options: dict[str, Any] = field(default_factory=dict)
    concurrency: int | None = None
    retry: RetryPolicy | None = None
    prices: PriceTable | None = None
    batch: bool | BatchOptions = False
    ray: Any = None
    executor: str = "local"
    retry_parse_failures: bool = False


class RunSession:
    """One live run of a plan with a judge in a run directory, step by step.

    ``async with RunSession(...) as s`` opens it (:meth:`open`: the judge loaded, the store locked) and closes it
    (:meth:`close`); in between :meth:`check`, :meth:`detect`, :meth:`prepare`, :meth:`execute` and :meth:`finish`,
    in that order, with :meth:`check_context` between preparing and executing (:meth:`run` does them all).

    Args:
        plan: What is run.
        judge: A judge spec, loaded here and closed by :meth:`close`, or a Judge object, which stays open for its
            owner to reuse.
        run_dir: The run directory (a temporary one if None).
        settings: How the judge is called.
        status: Hears a line saying what the run is doing before judging starts.
        warn: Hears a line the user must see before judging, kept on the console (units over the judge's context);
            it also goes into the run's notes. Default: ``status``.
    """

    def __init__(self, plan: RunPlan, judge: str | Judge, run_dir: str | Path | None, settings: RunSettings,
                 status: Callable[[str], None] | None = None, warn: Callable[[str], None] | None = None) -> None:
        if run_dir is not None:
            check_run_dir(run_dir)
        self.plan, self.judge_spec, self.settings = plan, judge, settings
        self.run_path = Path(run_dir) if run_dir is not None else Path(tempfile.mkdtemp(prefix="assay-run-"))
        self.status = status or (lambda message: None)
        self.warn = warn or self.status
        self.owns_judge = isinstance(judge, str)  # a Judge object passed in stays open: its owner may use it again
        self.bare: Judge | None = None
        self.store: RunStore | None = None
        self.managed: ManagedJudge | None = None
        self.batcher: BatchJudge | None = None
        self.ctx: RunContext | None = None
        self.logprobs_reason: str | None = None
        self.answer_format: AnswerFormat | None = None
        #: The judge's context size and how it was learnt (:meth:`Judge.context_size`), asked in :meth:`detect`.
        self.context: tuple[int | None, str] = (None, "context size unknown: not asked")
        self._context_checked: ContextChecked | None = None
        self.resumed = False
        self.progress: Progress | None = None
        self._retry = settings.retry

    async def __aenter__(self) -> RunSession:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def open(self) -> None:
        """Load the judge, check what must hold before the directory is made (prices, batch), open the store."""
        if self.owns_judge:
            self.status(f"loading judge {self.judge_spec}")
        s = self.settings
        self.bare = load_judge(self.judge_spec, **s.judge_options) if isinstance(self.judge_spec, str) \
            else self.judge_spec
        try:
            if s.prices is not None:  # before the run directory is made
                s.prices.check_covers(self.bare.identity.model)
            if s.batch:
                from assay.judges.batch import check_batch_judge

                check_batch_judge(self.bare)
            self.store = RunStore(self.run_path)  # locked for this process; an empty or damaged database is refused
        except BaseException:
            if self.owns_judge:
                await self.bare.aclose()
            raise
        if s.batch:  # every unit at once; calls wait for batches, not for a call slot
            from assay.judges.batch import BATCH_CONCURRENCY
            from assay.judges.batch import WAIT_S as BATCH_WAIT_S

            self.batcher = _batcher(self.bare, self.store, s.batch, s.prices, s.concurrency, self.status)
            self._retry = (s.retry or RetryPolicy()).model_copy(update={"timeout_s": BATCH_WAIT_S})
            self.managed = ManagedJudge(self.batcher, cache=self.store.calls, concurrency=BATCH_CONCURRENCY,
                                        retry=self._retry, prices=s.prices)
        else:
            self.managed = ManagedJudge(self.bare, cache=self.store.calls, concurrency=s.concurrency, retry=s.retry,
                                        prices=s.prices, on_retry=self.status)  # retries, a refusal: said

    def check(self) -> None:
        """Refuse a directory holding another run's settings before any judge call (it then costs nothing and
        writes nothing), and say when a live session resumes a run with unfinished batches."""
        store, bare = self._opened()
        if self.plan.resume_as(store.manifest()):
            self.note("answer-format", "resuming a run stored in free text: --answer-format auto keeps free text")
        store.check(self.plan.fingerprint(bare.identity), before_prepare=True,
                    upgrade=self.plan.method.Options.upgrade_settings)
        if self.batcher is None:
            _note_unfinished_batches(store)

    async def detect(self) -> None:
        """Ask the judge, once, what it supports: log-probabilities (only a method that reads them sends that
        probe; an always-failing judge stopped ``direct`` there, the others record that none was sent), whether it
        enforces a JSON schema (a probe only when the method would use one: the answer format), and its context
        size (:meth:`Judge.context_size`: a llama.cpp server's ``/props``; never a failure).

        The three questions are independent, so they are asked side by side: a remote judge's start costs one
        round trip, not three. Their notes are recorded in that order whatever answers first, and the first
        failure (in that order) cancels the others and stops the run as it did when they were asked in turn.
        """
        store, bare = self._opened()
        old = store.manifest() or {}
        recorded = old.get("answer_format") if old.get("judge") == bare.identity.model_dump(mode="json") else None
        capability, self.answer_format, self.context = await side_by_side(
            self._detect_logprobs(store, bare),
            decide(self.plan.answer_format, self.plan.method, bare, retry=self._retry, recorded=recorded),
            bare.context_size())
        if capability:
            self.note("capability", capability)
        if self.answer_format.fallback:
            self.note("answer-format", self.answer_format.reason)

    async def _detect_logprobs(self, store: RunStore, bare: Judge) -> str | None:
        """Decide ``logprobs_reason``; the note to record where the judge gives none (methods fall back)."""
        method = self.plan.method
        if not method.reads_logprobs:
            self.logprobs_reason = f"not probed: {method.name} as configured reads no log-probabilities"
            return None
        self.status(f"checking what {bare.identity.label} supports")
        self.logprobs_reason = await detect_capabilities(bare, store, self._retry, self.status)
        managed = self.managed
        assert managed is not None
        if self.logprobs_reason and self.logprobs_reason.startswith("probe:") and not managed.supports_logprobs:
            return (f"{managed.identity.label} gives no log-probabilities ({self.logprobs_reason}); "
                    "methods that read them use their fallback (G-Eval: sampling)")
        return None

    def note(self, kind: str, message: str) -> None:
        """Record a fallback or warning in the run's notes (and so its manifest and output)."""
        store, _ = self._opened()
        store.add_note(kind, message)

    async def prepare(self) -> None:
        """Build the method's artifacts, then record the manifest (with the settings preparation decided) and the
        samples: from here on the run directory holds this run."""
        store, bare = self._opened()
        plan, managed = self.plan, self.managed
        assert managed is not None

        def put_artifact(name: str, text: str) -> str:
            digest = content_hash(text)
            store.put_artifact(name, digest, text)
            return digest

        said: list[str] = []  # the method's own lines, which the progress ticker keeps

        def method_status(message: str) -> None:
            said.append(message)
            self.status(message)

        fmt = self.answer_format
        assert fmt is not None, "detect() comes before prepare()"
        self.ctx = RunContext(dataset=plan.dataset, dimensions=plan.dimensions, judge=managed, note=self.note,
                              artifacts=put_artifact, status=method_status, answer_format=fmt.used)
        prepared = await preparing(plan.method.prepare(self.ctx), plan.method.name, managed, self.status,
                                   latest=lambda: said[-1] if said else None)
        s = self.settings
        manifest = {
            **plan.fingerprint(bare.identity),  # now with the settings that preparation decided
            "answer_format": fmt.record(),
            "artifacts": prepared,
            "judge_logprobs": bare.supports_logprobs,
            "judge_logprobs_reason": self.logprobs_reason,
            "judge_runtime": bare.runtime(),
            "judge_context": {"n_ctx": self.context[0], "source": self.context[1]},
            "dataset_level": plan.dataset.info.level,
            "prices": s.prices.model_dump() if s.prices is not None else None,
            "assay_version": __version__,
            "python": platform.python_version(),
            "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        self.resumed = store.begin(manifest, upgrade=plan.method.Options.upgrade_settings)
        if late := take_late_calls(store, bare.identity):  # what a killed driver's Ray actors kept
            self.note("executor", f"{late} answer(s) that arrived after the previous run's driver was killed were "
                                  "taken into the call cache (not paid again)")
        store.put_samples(plan.dataset.samples)

    async def check_context(self) -> None:
        """Where the judge's context size is known, name the units whose prompts exceed it before judging.

        A fresh instance of the method runs against the counting judge (:func:`assay.run.counting.find_over_context`:
        the live preparation's answers from the cache, stand-ins for the rest, no call). The units found are said
        once (:attr:`warn`, the run's notes) and traced; those counted by the judge's own tokenizer from a prompt
        built before any stand-in answer are failed without a call (the judge would refuse them), the others are
        sent (an approximate count must never fail a unit the judge would have accepted). Nothing at all is done
        where the size is unknown.
        """
        n_ctx, source = self.context
        if n_ctx is None:
            return
        store, bare = self._opened()
        plan, ctx = self.plan, self.ctx
        assert ctx is not None, "prepare() comes before check_context()"
        units = order_units(plan.dataset.samples, plan.dimensions, store.done_units(), by=plan.method.unit_order)
        if not units:
            return
        from assay.run.counting import ContextChecked, find_over_context, over_context_message

        counter = judge_counter(bare)
        self.status(f"checking {len(units)} unit(s) against the judge's context of {n_ctx} tokens")
        try:
            found = await find_over_context(plan.method, units, ctx, bare, counter, n_ctx, store.calls)
        except AssayError as exc:  # the method refused the counting judge's stand-ins: judge as without the check
            self.note("context", f"the context check could not run ({exc}); units over the judge's context of "
                                 f"{n_ctx} tokens fail when the judge refuses them")
            return
        if not found:
            return
        refused = {unit for unit, o in found.items() if counter.own and o.exact}
        self._context_checked = ContextChecked(found, counter, refused)
        message = over_context_message(list(found.values()), source, counter, refused)
        self.warn(message)
        self.note("context", message)

    async def execute(self, on_start: Callable[[int, int], None] | None = None,
                      on_update: Callable[[Progress, ManagedJudge], None] | None = None) -> Progress:
        """Judge the units not done yet (locally or on Ray), each judgment stored as it completes; this session's
        usage is recorded even when the run is interrupted."""
        store, _ = self._opened()
        plan, managed, ctx, s = self.plan, self.managed, self.ctx, self.settings
        assert managed is not None and ctx is not None, "prepare() comes before execute()"
        done, runner = store.done_units(), plan.method
        if s.retry_parse_failures and (again := parse_failures(store)):  # re-asked as a new attempt (run/reask.py)
            done, runner = done - again.keys(), Reasking(plan.method, again)
            self.note("resume", f"--retry-parse-failures: {len(again)} parse-failed unit(s) asked again (new attempt)")
        if self._context_checked is not None:  # units over the judge's context (check_context): refused or traced
            runner = self._context_checked.around(runner)
        units = order_units(plan.dataset.samples, plan.dimensions, done, by=plan.method.unit_order)
        if on_start:
            on_start(len(units), len(plan.dataset.samples) * len(plan.dimensions) - len(units))
        update = (lambda p: on_update(p, managed)) if on_update else None
        try:
            with young_collections():
                self.progress = await self._judge(runner, units, ctx, update)
        finally:
            self._record_usage()
        return self.progress

    async def _judge(self, runner: Method, units: list[Unit], ctx: RunContext,
                     update: Callable[[Progress], None] | None) -> Progress:
        """The units judged by the run's executor (locally or on Ray)."""
        store, _ = self._opened()
        managed, s = self.managed, self.settings
        assert managed is not None
        if s.ray is not None:
            from assay.run.ray_executor import execute_ray

            return (await execute_ray(runner, units, ctx, store, s.ray, judge=self.judge_spec,
                                      judge_options=s.judge_options, concurrency=s.concurrency, retry=s.retry,
                                      prices=s.prices, on_update=update))[1]
        batcher = self.batcher
        in_flight = len(units) if batcher is not None else default_unit_concurrency(managed, runner)
        return (await execute(runner, units, ctx, store, concurrency=in_flight,
                              on_update=update, unit_scope=batcher.unit if batcher is not None else None))[1]

    def _record_usage(self) -> None:
        """Append this session's usage by stage (with retries, failures, prices, executor, batches) to the run's."""
        store, _ = self._opened()
        managed, s = self.managed, self.settings
        assert managed is not None
        sessions = store.get_meta("usage_sessions") or []
        sessions.append({k: v.model_dump() for k, v in managed.ledger.by_stage.items()}
                        | {"_retries": managed.ledger.retries, "_failures": managed.ledger.failures,
                           "_prices": s.prices.model_dump() if s.prices is not None else None,
                           "_executor": s.executor}
                        | ({"_batch": self._batch_record()} if self.batcher is not None else {}))
        store.set_meta("usage_sessions", sessions)

    def _batch_record(self) -> dict[str, Any]:
        """This session's batch mode as the manifest and the usage sessions record it."""
        from assay.judges.batch import batch_record

        assert self.batcher is not None
        return batch_record(self.batcher)

    def finish(self) -> RunResult:
        """The manifest completed (notes, usage over every session, cost, unit counts) and the run's result."""
        store, _ = self._opened()
        managed, s = self.managed, self.settings
        assert managed is not None and self.progress is not None, "execute() comes before finish()"
        manifest = store.manifest() or {}
        manifest["notes"] = store.notes()
        manifest["usage"], manifest["cost_usd"] = usage_totals(store.get_meta("usage_sessions") or [])
        counts = manifest["units"] = store.unit_counts()
        if s.prices is not None:  # a resumed run records the table it last ran with; sessions keep each one
            manifest["prices"] = s.prices.model_dump()
        if self.batcher is not None:  # this session's batch mode (each session's is in usage_sessions)
            manifest["batch"] = self._batch_record()
        store.set_meta("manifest", manifest)
        return RunResult(run_dir=self.run_path, manifest=manifest,
                         usage=dict(managed.ledger.by_stage), notes=store.notes(), progress=self.progress,
                         resumed=self.resumed, units=counts)

    async def run(self, on_start: Callable[[int, int], None] | None = None,
                  on_update: Callable[[Progress, ManagedJudge], None] | None = None) -> RunResult:
        """Every step after :meth:`open`: check, detect, prepare, check the context, execute, finish.

        The method's calls that need no probe's answer (:meth:`Method.prefetch`: G-Eval's steps) start beside the
        probe; not for a batch judge, which sends what it is given in batches.
        """
        self.check()
        managed, plan = self.managed, self.plan
        assert managed is not None
        early = [] if self.batcher is not None else plan.method.prefetch(managed, plan.dataset, plan.dimensions)
        try:
            await self.detect()
            await self.prepare()
        finally:  # a run stopped by its probe: the calls started ahead end with it
            for task in early:
                task.cancel()
            await asyncio.gather(*early, return_exceptions=True)
        await self.check_context()
        await self.execute(on_start, on_update)
        return self.finish()

    async def close(self) -> None:
        """Close the judge (when this session loaded it) or only the batch judge's tasks, and the store."""
        try:
            if self.owns_judge and self.managed is not None:
                await self.managed.aclose()
            elif self.batcher is not None:  # its tasks only: the judge object stays open for its owner
                await self.batcher.stop()
        finally:
            if self.store is not None:
                self.store.close()

    def _opened(self) -> tuple[RunStore, Judge]:
        assert self.store is not None and self.bare is not None, "open() comes first"
        return self.store, self.bare


def _note_unfinished_batches(store: RunStore) -> None:
    """Say so when a live session resumes a run whose batches were never taken in: it pays for them again."""
    unfinished = store.batches.listed(live=True)
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
    from assay.judges.batch import BatchJudge, BatchOptions

    options = batch if isinstance(batch, BatchOptions) else BatchOptions()
    if prices is not None and prices.batch_discount is None:
        store.add_note("batch", "the price table gives no batch_discount: batch calls are priced in full")
    return BatchJudge(bare, store, options, prices=prices, note=store.add_note, live_concurrency=concurrency,
                      on_state=status)


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
                    status: Callable[[str], None], every_s: float = 0.5,
                    latest: Callable[[], str | None] = lambda: None) -> R:
    """Await a method's preparation (a run's, or :func:`assay.prepare`'s build), saying every ``every_s``
    seconds how many judge calls it has made, so that a long build never looks like a hang; after the method's
    own latest line (``latest``: "the judge writes the evaluation steps for coherence") where it said one."""
    task = asyncio.ensure_future(prepare)
    started = time.monotonic()
    status(f"preparing {method} (artifacts: steps, checklists, rubrics, ...)")
    try:
        while not task.done():
            await asyncio.wait({task}, timeout=every_s)
            if not task.done():
                u = judge.ledger.total()
                status(f"{latest() or f'preparing {method}'}: {u.calls} judge call(s) so far "
                       f"({u.cached_calls} from cache), {time.monotonic() - started:.0f} s")
    except asyncio.CancelledError:  # an interrupted run: the build stops with it, before the judge is closed
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        raise
    return task.result()


async def detect_capabilities(judge: Judge, store: RunStore, retry: RetryPolicy | None,
                              status: Callable[[str], None] | None = None) -> str | None:
    """Ask the judge once whether it gives log-probabilities; a resumed run reuses the recorded answer.

    The probe goes through the run's retry policy (a 503 at start is retried, never read as "no"); it is
    not cached nor accounted as a judgment's call. ``assay probe`` asks the same way for its re-asks.

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
    prober = ManagedJudge(judge, retry=retry, on_retry=status)  # no cache, its own ledger: no judgment's call

    async def send(request: Request) -> Response:
        return (await ask(prober, request, stage="capability")).response

    await detect(known, send=send)
    return getattr(judge, "logprobs_reason", None)


async def side_by_side(*steps: Awaitable[Any]) -> list[Any]:
    """Run ``steps`` concurrently; their results in order.

    A failure is raised once every step before it has finished: the error is always the first in argument
    order, as when the steps ran in turn (a step that fails early waits for those before it). The steps after it
    are then cancelled and awaited.
    """
    tasks = [asyncio.ensure_future(step) for step in steps]
    try:
        return [await task for task in tasks]
    finally:
        for task in tasks:
            task.cancel()  # a no-op on a finished one
        await asyncio.gather(*tasks, return_exceptions=True)


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
