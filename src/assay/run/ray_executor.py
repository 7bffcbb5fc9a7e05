"""The Ray executor: the run's units judged by Ray actors, the driver alone writing the run store.

Design (docs/scale.md has the operator's view):

- The method is prepared once on the driver (``prepare()`` builds its artifacts); the prepared method, the dataset
  and a judge *source* (a spec string with its options, or a picklable Judge object) are shipped to each actor with
  cloudpickle. Each actor builds its own judge once (an embedded GGUF model loaded once per actor with its thread
  count, or one HTTP client per actor) inside its own :class:`~assay.judges.middleware.ManagedJudge`.
- Units are handed out in prefix-friendly groups: every unit of one source document goes to one actor
  (:func:`unit_groups`), in the order :func:`assay.run.executor.order_units` chose.
- Actors never write the store. Each group is a streaming call: the actor yields, as they happen, every answered
  call (key, request, response: the driver writes it to the call cache at once, so a killed driver never pays a
  completed call again), every call's usage (the driver's run ledger, per stage), notes, and each unit's judgment
  (with its ``attributed()`` usage). The driver writes them in the order received.
- Actors read the cache through one :class:`CacheReader` actor pinned to the driver's node, which opens the run
  store read-only (SQLite in WAL mode: it sees each call the driver commits). A worker asks it once per call key.
- A concurrency bound on an HTTP judge is cluster-wide: it is divided among the actors (:func:`split_concurrency`),
  so N actors never multiply the load a provider sees. An embedded judge's bound is per model instance.
- A dead actor (killed, out of memory, node lost) is replaced by the driver, up to :data:`MAX_REPLACEMENTS` times per
  worker; the units it had not returned are re-queued and a note records it. Units whose judgment the driver
  already stored are never re-queued; calls it already stored are answered from the cache.
- A dead driver (SIGKILL, a lost node) is noticed by its actors before each call they would start
  (:class:`DriverLife`: on the driver's node its process, elsewhere Ray's job table): they start none, since Ray
  takes about 1.5 s to end them and nobody would store the answers. An answer that arrives after the driver died
  is written, on the driver's node, to a side file in the run directory (:data:`LATE_CALLS`, one file per actor,
  each actor its file's only writer), which the next run's driver takes into the call cache
  (:func:`assay.run.late_calls.take_late_calls`): the store keeps its one writer.
- So are the answers the driver had not yet confirmed when it died (sent, but still in Ray's stream or in the
  driver's uncommitted turn): each answer an actor sends carries a number, the driver confirms to each actor, every
  :data:`CONFIRM_EVERY_S`, the last one it has committed, and an actor keeps the answers sent since. When it finds
  its driver gone (at its next answer, or by looking every :data:`WATCH_EVERY_S` while it keeps any) it writes
  them to its side file: a killed driver pays again only for the calls still in flight when its actors ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import time
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any

from assay.errors import ConfigError, FatalJudgeError, JudgeError
from assay.judges import Judge, ManagedJudge, PriceTable, RetryPolicy, load_judge
from assay.judges.ask import attributed
from assay.judges.base import JudgeIdentity, Request, Response
from assay.judges.middleware import Ledger, call_key
from assay.methods.base import Method, RunContext
from assay.run.executor import Progress, Unit, default_unit_concurrency, failed_judgment
from assay.run.late_calls import LATE_CALLS, late_call_line
from assay.run.ray_settings import RaySettings, import_ray
from assay.run.store import LOCK_NAME, RunStore
from assay.types import Judgment, Usage

#: Times the driver replaces one worker's dead actor before it gives that worker up.
MAX_REPLACEMENTS = 3
#: Unit groups in flight per actor, so that an actor never idles while the driver hands it the next group.
GROUPS_PER_WORKER = 2
#: Cache answers an actor keeps in memory (most recent first); older keys are asked of the reader again.
LOCAL_CACHE_SIZE = 4096
#: Seconds between two confirmations the driver sends each actor (the last answer it has committed).
CONFIRM_EVERY_S = 0.5
#: Seconds between two looks an actor takes at its driver's life while it keeps answers not yet confirmed.
WATCH_EVERY_S = 0.05


# -- settings (pure) ----------------------------------------------------------------------------------------------


def unit_groups(units: list[Unit]) -> list[list[Unit]]:
    """The units cut into runs of one source document each (the order kept), so that one actor judges all
    prompts sharing that document's prefix."""
    groups: list[list[Unit]] = []
    for unit in units:
        if groups and groups[-1][-1][0].doc_id == unit[0].doc_id:
            groups[-1].append(unit)
        else:
            groups.append([unit])
    return groups


def split_concurrency(total: int, workers: int, *, per_instance: bool) -> list[int]:
    """Each actor's calls in flight.

    Args:
        total: The run's bound (``--concurrency``, or the backend's default).
        workers: Actors.
        per_instance: The judge holds its own model (embedded): the bound applies to each instance as it would
            locally. Otherwise the actors share one endpoint and the bound is divided among them.

    Raises:
        ConfigError: A shared bound smaller than the number of actors (each needs one call slot).
    """
    if per_instance:
        return [total] * workers
    if total < workers:
        raise ConfigError(f"--concurrency {total} is below --workers {workers}: the bound on calls in flight is "
                          "shared by all workers (a provider sees at most that many at once), and each worker "
                          "needs one; raise --concurrency or lower --workers")
    return [total // workers + (i < total % workers) for i in range(workers)]


def resolve_workers(settings: RaySettings, cluster: dict[str, float], bound: int, *, per_instance: bool) -> int:
    """The number of actors: the one asked for, else what the cluster fits (capped by a shared endpoint's bound)."""
    if settings.workers is not None:
        return settings.workers
    fits = [cluster.get(key, 0.0) // want for key, want in (("CPU", settings.cpus), ("GPU", settings.gpus)) if want]
    n = max(1, int(min(fits))) if fits else 1
    return n if per_instance else max(1, min(n, bound))


def check_fits(cluster: dict[str, float], settings: RaySettings) -> None:
    """Refuse worker resources the whole cluster cannot give one actor (it would wait forever to start).

    Args:
        cluster: ``ray.cluster_resources()``.
    """
    for key, flag, want in (("CPU", "--worker-cpus", settings.cpus), ("GPU", "--worker-gpus", settings.gpus)):
        if want > cluster.get(key, 0.0):
            raise ConfigError(f"{flag} {want:g}: the Ray cluster has {cluster.get(key, 0.0):g} {key}(s) in all, "
                              "so no worker could start")


def judge_source(judge: str | Judge, options: dict[str, Any] | None) -> Callable[[], Judge]:
    """What an actor calls to build its own judge: the spec loaded there, or a copy of a picklable Judge object.

    Raises:
        ConfigError: A Judge object that cannot be pickled (an embedded model, an open client): pass its spec.
    """
    if isinstance(judge, str):
        return functools.partial(load_judge, judge, **(options or {}))
    from ray import cloudpickle  # Ray's own copy: what it pickles actor arguments with

    try:
        blob = cloudpickle.dumps(judge)
    except Exception as exc:
        raise ConfigError(f"the ray executor ships the judge to its workers, and {judge.identity.label} cannot be "
                          f"pickled ({type(exc).__name__}: {exc}); pass the judge as a spec string "
                          "(e.g. 'llamacpp:smollm2') so that each worker builds its own") from None
    return functools.partial(cloudpickle.loads, blob)


# -- the worker side ----------------------------------------------------------------------------------------------


def _start_time(pid: int) -> str | None:
    """A process's start time (``/proc/PID/stat`` field 22), which tells a live driver from a reused pid; None
    when there is no such process (or no /proc)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] in ("Z", "X") else fields[19]  # a zombie is dead, only not reaped yet


@dataclass(frozen=True)
class DriverLife:
    """Who the driver is, so that its actors can tell when it is gone (before each call they would start).

    Attributes:
        node_id: The Ray node the driver runs on.
        pid: The driver's process id.
        started: Its start time (:func:`_start_time`), or None where /proc is missing (then ``os.kill(pid, 0)``).
        job_id: The driver's Ray job, looked up in Ray's job table by actors on other nodes.
        run_dir: The run directory where answers that arrive too late are kept (on the driver's node, and on a
            shared filesystem on the others).
        lock: The text of the run's lock file (``run.lock``: pid, host and start time of the driver holding it), read
            by the driver when judging starts. A killed driver leaves it as it was, so an actor on another node that
            finds the same text in ``RUN_DIR/run.lock`` has proof that the directory it sees is this run's (shared),
            not another one at the same path; None: not known (kept on the driver's node only).
    """

    node_id: str
    pid: int
    started: str | None
    job_id: str
    run_dir: str
    lock: str | None = None

    @classmethod
    def here(cls, ray: Any, run_dir: str) -> DriverLife:
        ctx = ray.get_runtime_context()
        return cls(ctx.get_node_id(), os.getpid(), _start_time(os.getpid()), ctx.get_job_id(), run_dir,
                   _lock_text(run_dir))


def _lock_text(run_dir: str) -> str | None:
    """The run lock's text (names its holder), or None where it cannot be read or is empty."""
    try:
        with open(os.path.join(run_dir, LOCK_NAME), encoding="utf-8") as fh:
            return fh.read() or None
    except OSError:
        return None


class DriverWatch:
    """An actor's view of its driver's life: cheap on the driver's node (a /proc read), throttled elsewhere."""

    #: Seconds between two looks at Ray's job table from another node.
    JOB_TABLE_EVERY_S = 0.25

    def __init__(self, life: DriverLife | None, node_id: str | None) -> None:
        self.life = life
        self.local = life is not None and node_id == life.node_id
        self._dead = False
        self._looked = 0.0

    def gone(self) -> bool:
        if self.life is None or self._dead:
            return self._dead
        if self.local:
            if self.life.started is not None:
                self._dead = _start_time(self.life.pid) != self.life.started
            else:
                try:
                    os.kill(self.life.pid, 0)
                except ProcessLookupError:
                    self._dead = True
                except OSError:
                    pass
        elif time.monotonic() - self._looked >= self.JOB_TABLE_EVERY_S:
            self._looked = time.monotonic()
            self._dead = _job_dead(self.life.job_id)
        return self._dead

    def keep_late(self, name: str, calls: list[tuple[str, Request, Response]]) -> bool:
        """Append answers (key, request, response) the dead driver cannot store to this actor's side file; False
        where none can be written.

        On the driver's node the run directory is the driver's own. On another node it is written only where it is
        provably this run's (a shared filesystem): it exists and its lock file still names this driver
        (:attr:`DriverLife.lock`); nothing is created elsewhere, so an unrelated folder at the same path, another
        run's directory or a missing one is left alone (the answer is then paid again by the re-run).
        """
        if self.life is None:
            return False
        if not self.local and (self.life.lock is None or _lock_text(self.life.run_dir) != self.life.lock):
            return False
        folder = os.path.join(self.life.run_dir, LATE_CALLS)
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, f"{name}.jsonl"), "a", encoding="utf-8") as fh:
            fh.writelines(late_call_line(key, request, response) for key, request, response in calls)
        return True


def _job_dead(job_id: str) -> bool:
    """Whether Ray's job table says the job ended (its driver died); False when it cannot be read."""
    try:
        from ray._private.state import state  # no public call gives one job's state without the dashboard

        return any(j.get("JobID") == job_id and j.get("IsDead") for j in state.job_table())
    except Exception:
        return False

#: Where the calls, usage and notes of the unit group being judged are sent (set per group, inherited by tasks).
_sink: ContextVar[Callable[[tuple[Any, ...]], None] | None] = ContextVar("assay_ray_sink", default=None)


def _emit(event: tuple[Any, ...]) -> None:
    send = _sink.get()
    if send is not None:
        send(event)


class StreamingLedger(Ledger):
    """A worker's ledger: each call's usage also goes to the driver's run ledger (as a ``usage`` event)."""

    def record(self, stage: str, usage: Usage) -> None:
        super().record(stage, usage)
        _emit(("usage", stage, usage))


class RelayCache:
    """A worker's call cache: answers it already has, else the reader's; new answers go to the driver.

    It writes nothing itself: :meth:`put_call` sends the call to the driver, which writes the run store; once the
    driver is gone, to the actor's side file instead (:meth:`DriverWatch.keep_late`). Each call sent is numbered and
    kept (:attr:`unconfirmed`) until the driver confirms it committed it (:meth:`confirm`); those it never confirms
    go to the side file when the driver is found gone (:meth:`keep_unconfirmed`).
    """

    def __init__(self, watch: DriverWatch | None = None, name: str = "worker") -> None:
        self.known: OrderedDict[str, Response | None] = OrderedDict()
        self.watch = watch
        self.name = name
        self.sent = 0
        self.unconfirmed: OrderedDict[int, tuple[str, Request, Response]] = OrderedDict()

    def remember(self, key: str, response: Response | None) -> None:
        self.known[key] = response
        self.known.move_to_end(key)
        while len(self.known) > LOCAL_CACHE_SIZE:
            self.known.popitem(last=False)

    def get_call(self, key: str) -> Response | None:
        return self.known.get(key)

    def put_call(self, key: str, identity: JudgeIdentity, request: Request, response: Response) -> None:
        self.remember(key, response)
        if self.watch is None:  # never checked (a test's worker): nothing to keep for a dead driver
            _emit(("call", 0, key, request, response))
            return
        if self.keep_unconfirmed():  # nobody reads the stream any more
            self.watch.keep_late(self.name, [(key, request, response)])
            return
        self.sent += 1
        self.unconfirmed[self.sent] = (key, request, response)
        _emit(("call", self.sent, key, request, response))

    def confirm(self, upto: int) -> None:
        """The driver has committed every call this actor sent up to number ``upto``: forget them."""
        while self.unconfirmed and next(iter(self.unconfirmed)) <= upto:
            self.unconfirmed.popitem(last=False)

    def keep_unconfirmed(self) -> bool:
        """Whether the driver is gone; if so, the calls it never confirmed are written to the side file first."""
        if self.watch is None or not self.watch.gone():
            return False
        if self.unconfirmed:
            self.watch.keep_late(self.name, list(self.unconfirmed.values()))
            self.unconfirmed.clear()
        return True


class WorkerJudge(ManagedJudge):
    """The managed judge of one actor: before a call, the reader is asked once whether the run already has it."""

    def __init__(self, judge: Judge, reader: Any, cache: RelayCache, **kwargs: Any) -> None:
        super().__init__(judge, cache=cache, **kwargs)
        self._reader = reader
        self._relay = cache

    async def generate(self, request: Request, *, stage: str = "score") -> Response:
        key = call_key(self.identity, request)
        if key not in self._relay.known and key not in self._in_flight:
            stored = await self._reader.get.remote(key)
            # an identical call of this actor may have been answered while the reader was asked: keep its answer
            if self._relay.known.get(key) is None:
                self._relay.remember(key, stored)
        return await super().generate(request, stage=stage)

    async def _with_retries(self, key: str, request: Request) -> Response:
        """Start no call once the driver is gone: nobody would store its answer, and Ray ends the actor late."""
        if self._relay.keep_unconfirmed():
            raise FatalJudgeError("ray worker: the driver is gone; no new call is started")
        return await super()._with_retries(key, request)


class JudgeWorker:
    """One actor: its own judge (built once), the prepared method, and the group it is judging.

    Args:
        build_judge: Builds this actor's judge (see :func:`judge_source`).
        method: The method, prepared on the driver.
        ctx_parts: The run context's dataset, dimensions and answer format.
        reader: The :class:`CacheReader` actor.
        concurrency: This actor's calls in flight.
        retry / prices: As in the local run.
        driver: Who the driver is (None: never checked), so that the actor stops when it is gone.
        name: The actor's name (its side file's name).
    """

    def __init__(self, build_judge: Callable[[], Judge], method: Method, ctx_parts: dict[str, Any], reader: Any,
                 concurrency: int, retry: RetryPolicy | None, prices: PriceTable | None,
                 driver: DriverLife | None = None, name: str = "worker") -> None:
        import ray

        watch = DriverWatch(driver, ray.get_runtime_context().get_node_id() if driver is not None else None)
        self.judge = WorkerJudge(build_judge(), reader, RelayCache(watch, name), concurrency=concurrency,
                                 retry=retry, prices=prices, ledger=StreamingLedger())
        self.method = method
        self.ctx = RunContext(judge=self.judge, note=lambda kind, message: _emit(("note", kind, message)),
                              artifacts=self._artifact, **ctx_parts)
        self._slots: asyncio.Semaphore | None = None
        self._reported = (0, 0)
        self._watching: asyncio.Task[None] | None = None

    @staticmethod
    def _artifact(name: str, text: str) -> str:
        from assay.common.hashing import content_hash

        _emit(("artifact", name, text))
        return content_hash(text)

    def ready(self) -> int:
        """The actor's process id, once its judge is built (the driver waits for it before handing out work)."""
        return os.getpid()

    def confirm(self, upto: int) -> None:
        """The driver committed this actor's calls up to number ``upto`` (:meth:`RelayCache.confirm`)."""
        self.judge._relay.confirm(upto)

    async def _watch_driver(self) -> None:
        """Look at the driver's life while answers it has not confirmed are kept, so that they reach the side file
        even when no call of this actor ends after the driver died (an idle actor, answers still in Ray's stream)."""
        relay = self.judge._relay
        while True:
            await asyncio.sleep(WATCH_EVERY_S)
            if relay.unconfirmed and relay.keep_unconfirmed():
                return

    async def run_group(self, units: list[Unit]) -> AsyncIterator[tuple[Any, ...]]:
        """Judge a group's units (concurrently, bounded), yielding events as they happen, each unit's judgment last.

        Events: ``("call", number, key, request, response)`` (numbered per actor, for the driver's confirmations),
        ``("usage", stage, usage)``, ``("note", kind, message)``, ``("artifact", name, text)``,
        ``("judgment", judgment)``, ``("fatal", message)``, ``("error", exception)`` (anything else a unit raised),
        and at the end ``("counts", retries, failures)`` (this actor's new retries and failures since the last
        report).
        """
        if self._slots is None:
            self._slots = asyncio.Semaphore(default_unit_concurrency(self.judge, self.method))
        if self._watching is None and self.judge._relay.watch is not None:
            self._watching = asyncio.ensure_future(self._watch_driver())
        events: asyncio.Queue[tuple[Any, ...]] = asyncio.Queue()
        token = _sink.set(events.put_nowait)
        try:
            tasks = [asyncio.ensure_future(self._unit(sample, dim)) for sample, dim in units]
        finally:
            _sink.reset(token)
        try:
            left = len(tasks)
            while left:
                event = await events.get()
                left -= event[0] in ("judgment", "fatal", "error")
                yield event
                if event[0] in ("fatal", "error"):
                    return
        finally:
            # a stream closed because its driver died: the calls in flight may still end, their answers kept in
            # the side file (paid once); otherwise (a fatal answer, the run stopped) the group's tasks end here
            if not self.judge._relay.keep_unconfirmed():
                for task in tasks:
                    task.cancel()
        retries, failures = self.judge.ledger.retries, self.judge.ledger.failures
        yield ("counts", retries - self._reported[0], failures - self._reported[1])
        self._reported = (retries, failures)

    async def _unit(self, sample: Any, dim: Any) -> None:
        assert self._slots is not None
        async with self._slots:
            try:
                with attributed():
                    j = await self.method.score(sample, dim, self.ctx)
            except FatalJudgeError as exc:
                _emit(("fatal", f"{type(exc).__name__}: {exc}"))
                return
            except JudgeError as exc:
                j = failed_judgment(self.method, sample, dim, self.judge.identity.label, exc)
            except Exception as exc:  # a bug or a lost reader: stop the run with it, as the local executor does
                _emit(("error", exc))
                return
            _emit(("judgment", j))


class CacheReader:
    """The run's call cache, read-only, for the workers: one actor on the driver's node, next to the store."""

    def __init__(self, run_dir: str) -> None:
        self.store = RunStore(run_dir, readonly=True)

    def get(self, key: str) -> Response | None:
        return self.store.calls.get_call(key)


# -- the driver side ----------------------------------------------------------------------------------------------


@dataclass
class _Worker:
    """One worker slot: its current actor and how many times it was replaced."""

    index: int
    actor: Any
    generation: int = 0
    ready: bool = False


@dataclass
class _Received:
    """The calls one actor sent that the driver received: all up to :attr:`upto`, and those beyond that came early
    (an actor's two groups stream side by side, so its numbers can arrive out of order)."""

    actor: Any
    upto: int = 0
    confirmed: int = 0
    early: set[int] = field(default_factory=set)

    def add(self, number: int) -> None:
        self.early.add(number)
        while self.upto + 1 in self.early:
            self.upto += 1
            self.early.remove(self.upto)


class RayRun:
    """The driver of one run on Ray: starts the actors, hands out unit groups, writes what comes back."""

    def __init__(self, ray: Any, method: Method, ctx: RunContext, store: RunStore, settings: RaySettings,
                 make_actor: Callable[[int], Any], on_update: Callable[[Progress], None] | None) -> None:
        self.ray, self.method, self.ctx, self.store = ray, method, ctx, store
        self.settings, self.make_actor, self.on_update = settings, make_actor, on_update
        self.queue: asyncio.Queue[list[Unit]] = asyncio.Queue()
        self.results: list[Judgment] = []
        self.stored: set[tuple[str, str]] = set()
        self.progress = Progress(total=0)
        self.left = 0
        self.active = 0
        self.finished = asyncio.Event()
        #: What each actor (by handle id) sent and what it was told was committed.
        self.received: dict[int, _Received] = {}

    async def run(self, units: list[Unit]) -> tuple[list[Judgment], Progress]:
        self.progress.total = self.left = len(units)
        for group in unit_groups(units):
            self.queue.put_nowait(group)
        if not units:
            return self.results, self.progress
        workers = [_Worker(i, self.make_actor(i)) for i in range(self.settings.workers or 1)]
        # round-robin: with few (large) groups, each worker gets one before any gets a second
        loops = [asyncio.ensure_future(self._feed(w)) for _ in range(GROUPS_PER_WORKER) for w in workers]
        done_waiter = asyncio.ensure_future(self.finished.wait())
        confirming = asyncio.ensure_future(self._confirm())
        try:
            pending = {done_waiter, *loops}
            while not self.finished.is_set():
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for task in done - {done_waiter}:
                    task.result()  # a fatal judge error or a bug stops the run here
                if not (pending - {done_waiter}) and not self.finished.is_set():
                    raise JudgeError(f"every ray worker died ({MAX_REPLACEMENTS} replacements each); "
                                     f"{self.left} unit(s) left undone: re-run the same command to resume")
        finally:
            for task in [*loops, done_waiter, confirming]:
                task.cancel()
            await asyncio.gather(*loops, done_waiter, confirming, return_exceptions=True)
            for w in workers:
                with contextlib.suppress(Exception):
                    self.ray.kill(w.actor)
        return self.results, self.progress

    async def _feed(self, worker: _Worker) -> None:
        """Hand one worker's actor group after group; on its death, re-queue what it left and replace it."""
        while True:
            group = await self.queue.get()
            actor = worker.actor  # the actor this group goes to (a feeder beside this one may replace it)
            self.active += 1
            try:
                if not worker.ready:
                    await actor.ready.remote()
                    worker.ready = worker.actor is actor
                await self._judge_group(actor, group)
            except self.ray.exceptions.RayActorError as exc:
                left = [u for u in group if (u[0].id, u[1].name) not in self.stored]
                if left:
                    self.queue.put_nowait(left)
                self.ctx.note("executor", f"ray worker {worker.index} died ({_reason(exc)}); the units it had not "
                                          "returned were re-queued (its answered calls came from the cache)")
                if worker.actor is actor:  # the first of this actor's feeders to see it dead replaces it
                    if worker.generation >= MAX_REPLACEMENTS:
                        return
                    worker.generation += 1
                    worker.actor, worker.ready = self.make_actor(worker.index), False
            finally:
                self.active -= 1
                if not self.left and not self.active:  # every unit stored, every group's last events read
                    self.finished.set()

    async def _judge_group(self, actor: Any, group: list[Unit]) -> None:
        async for ref in actor.run_group.options(num_returns="streaming").remote(group):
            self._handle(await ref, actor)

    async def _confirm(self) -> None:
        """Every :data:`CONFIRM_EVERY_S`, commit the calls received and confirm them to the actors that sent them."""
        while True:
            await asyncio.sleep(CONFIRM_EVERY_S)
            self.store.writes.commit()
            sent = []
            for got in self.received.values():
                if got.upto > got.confirmed:
                    sent.append(got.actor.confirm.remote(got.upto))
                    got.confirmed = got.upto
            # a dead actor's confirmation fails: nothing to confirm to it any more (its feeder replaces it)
            await asyncio.gather(*sent, return_exceptions=True)

    def _handle(self, event: tuple[Any, ...], actor: Any = None) -> None:
        """Write one event into the run: the driver is the only writer of the store."""
        kind = event[0]
        if kind == "call":
            _, number, key, request, response = event
            self.store.calls.put_call(key, self.ctx.judge.identity, request, response)
            if number and actor is not None:
                got = self.received.get(id(actor))
                if got is None:
                    got = self.received[id(actor)] = _Received(actor)
                got.add(number)
        elif kind == "usage":
            self.ctx.judge.ledger.record(event[1], event[2])
        elif kind == "counts":
            self.ctx.judge.ledger.retries += event[1]
            self.ctx.judge.ledger.failures += event[2]
        elif kind == "note":
            self.ctx.note(event[1], event[2])
        elif kind == "artifact":
            self.ctx.artifacts(event[1], event[2])
        elif kind == "fatal":
            raise FatalJudgeError(event[1])
        elif kind == "error":
            raise event[1]
        elif kind == "judgment":
            self._store_judgment(event[1])

    def _store_judgment(self, j: Judgment) -> None:
        unit = (j.sample_id, j.dimension)
        if unit in self.stored:  # a re-queued unit whose first judgment arrived after all: keep the first
            return
        self.store.add_judgment(j)
        self.stored.add(unit)
        self.results.append(j)
        if j.status == "failed":
            self.progress.failed += 1
            if len(self.progress.errors) < 5:
                self.progress.errors.append(f"{j.sample_id} / {j.dimension}: {j.error}")
        else:
            self.progress.done += 1
            self.progress.unscored += j.score is None
        self.left -= 1
        if self.on_update:
            self.on_update(self.progress)


def _reason(exc: Exception) -> str:
    """The first line of a Ray error, for a note."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def connect(ray: Any, address: str | None) -> bool:
    """Join the cluster at ``address`` or start a local Ray instance, unless Ray is already initialised.

    Returns:
        Whether this call initialised Ray (then the run shuts it down at the end).
    """
    if ray.is_initialized():
        return False
    if address is None:  # "local": a new instance, never a cluster some other process started on this machine
        ray.init(address="local", include_dashboard=False, log_to_driver=False)
    else:
        ray.init(address=address, log_to_driver=False)
    return True


async def execute_ray(method: Method, units: list[Unit], ctx: RunContext, store: RunStore, settings: RaySettings, *,
                      judge: str | Judge, judge_options: dict[str, Any] | None, concurrency: int | None,
                      retry: RetryPolicy | None, prices: PriceTable | None,
                      on_update: Callable[[Progress], None] | None = None) -> tuple[list[Judgment], Progress]:
    """Run the units on Ray (see the module docstring), storing each judgment once, like
    :func:`assay.run.executor.execute`.

    Args:
        judge: The run's judge as given to :func:`assay.evaluate` (a spec string is loaded by each actor).
        concurrency: The run's bound on calls in flight (None: the backend's default).
    """
    ray = import_ray()
    bare = ctx.judge.inner
    bound = concurrency or bare.default_concurrency
    build = judge_source(judge, judge_options)
    started = connect(ray, settings.address)
    try:
        cluster = ray.cluster_resources()
        check_fits(cluster, settings)
        settings = replace(settings, workers=resolve_workers(settings, cluster, bound, per_instance=bare.owns_model))
        per_actor = split_concurrency(bound, settings.workers, per_instance=bare.owns_model)
        here = ray.get_runtime_context().get_node_id()
        pin = ray.util.scheduling_strategies.NodeAffinitySchedulingStrategy(node_id=here, soft=False)
        reader = ray.remote(CacheReader).options(num_cpus=0, scheduling_strategy=pin).remote(str(store.run_dir))
        try:
            life = DriverLife.here(ray, str(store.run_dir))
            make_actor = await _actor_factory(ray, reader, build, method, ctx, settings, per_actor, retry, prices,
                                              life)
            return await RayRun(ray, method, ctx, store, settings, make_actor, on_update).run(units)
        finally:
            ray.kill(reader)
    finally:
        if started:
            ray.shutdown()


async def _actor_factory(ray: Any, reader: Any, build: Callable[[], Judge], method: Method, ctx: RunContext,
                         settings: RaySettings, per_actor: list[int], retry: RetryPolicy | None,
                         prices: PriceTable | None, life: DriverLife) -> Callable[[int], Any]:
    """What starts worker ``i``'s actor, once the reader has opened the store and the shared objects are put.

    Raises:
        ConfigError: The reader cannot open the store (the driver is not on a cluster node), or the method or
            the dataset cannot be pickled.
    """
    try:
        await reader.get.remote("")
    except ray.exceptions.RayError as exc:
        raise ConfigError(f"the ray executor's cache reader cannot open the run store on the driver's node "
                          f"({_reason(exc)}); run the driver on a cluster node (ray:auto)") from None
    # put once, resolved by each actor: what must pickle is the judge source, the prepared method, the dataset
    try:
        shared = [ray.put(build), ray.put(method), ray.put({"dataset": ctx.dataset, "dimensions": ctx.dimensions,
                                                                "answer_format": ctx.answer_format})]
    except Exception as exc:  # what Ray's pickler raises varies (TypeError, PicklingError, ...)
        raise ConfigError(f"the ray executor ships the prepared method {method.name!r} and the dataset to its "
                          f"workers, and they cannot be pickled ({type(exc).__name__}: {exc})") from exc
    remote_worker = ray.remote(JudgeWorker)

    def make_actor(i: int) -> Any:
        name = f"assay-worker-{i}-{uuid.uuid4().hex[:8]}"
        return remote_worker.options(num_cpus=settings.cpus, num_gpus=settings.gpus, max_restarts=0,
                                     name=name).remote(*shared, reader, per_actor[i], retry, prices, life, name)

    return make_actor
