"""Provider batch APIs (``--batch``): a run's judge calls gathered per stage into OpenAI-format batch files.

In batch mode every unit of a run is started at once. Each judge call parks on a future instead of being sent;
when every live unit is parked (or, as a backstop, when no call was added for ``idle_s``), the parked requests are
written as one JSONL file (``{"custom_id", "method", "url", "body"}`` per line), uploaded to ``/v1/files``
(purpose ``batch``) and submitted to ``/v1/batches``. A watcher polls each batch, downloads its output and error
files, fills the call cache (:meth:`assay.run.cache.CallCache.put_call`) and resolves the futures: the units
then go on to their next stage, which parks again and makes the next batch. A multi-stage method thus runs
stage by stage.

Every batch is recorded in the run store before it is created (its input file and the call keys it carries) and
again once created (its id), so that a killed process resumes by polling the same batches: a request whose key is
in a live batch is awaited, never submitted again. Failed lines are retried through the middleware's retry policy
(in a later batch, or live with ``retry="live"``); the unfinished requests of an expired batch are resubmitted.
Both are recorded in the run's notes.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from assay.errors import ConfigError, FatalJudgeError, JudgeError, TransientJudgeError
from assay.judges.base import Judge, Request, Response
from assay.judges.middleware import CallCache, PriceTable, call_key
from assay.judges.openai import OpenAIJudge, to_response


class BatchLedger(Protocol):
    """Where a run's batches are recorded (:class:`assay.run.batches.BatchRecords`, ``store.batches``)."""

    def add(self, input_file: str, calls: Iterable[tuple[str, Request]]) -> None: ...

    def update(self, input_file: str, *, status: str, batch_id: str | None = None,
               detail: dict[str, Any] | None = None) -> None: ...

    def listed(self, *, live: bool = False) -> list[dict[str, Any]]: ...

    def calls(self, input_file: str) -> list[tuple[str, Request]]: ...


class BatchStore(Protocol):
    """What a batch judge needs of the run store (:class:`assay.run.store.RunStore`): its batch records and its
    call cache. A protocol, so that the judges never import the run package that runs them."""

    @property
    def batches(self) -> BatchLedger: ...

    @property
    def calls(self) -> CallCache: ...

#: The endpoint every line of a batch file asks for.
ENDPOINT = "/v1/chat/completions"
#: The provider's limits on one batch input file (OpenAI's; vLLM's run-batch has none).
MAX_REQUESTS = 50_000
MAX_BYTES = 200 * 1024 * 1024
#: Batch statuses after which nothing more will happen to it.
TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})
#: Loop turns the gatherer lets pass before it checks for quiescence (siblings of a gather() park in them).
SETTLE_TURNS = 5
#: How long the middleware lets one batch call wait (a batch may take its whole completion window, and
#: resubmission after expiry another).
WAIT_S = 7 * 24 * 3600.0


#: The middleware's call slots in batch mode: a parked call holds none of the provider's capacity.
BATCH_CONCURRENCY = 1_000_000


def check_batch_judge(judge: Judge) -> None:
    """Refuse a judge other than ``openai:`` for batch mode, before any call.

    Raises:
        ConfigError: The judge does not speak the OpenAI batch API format.
    """
    if not isinstance(judge, OpenAIJudge):
        raise ConfigError(f"--batch needs an openai: judge (OpenAI batch API format: OpenAI, or a server "
                          f"such as vLLM's run-batch), not {judge.identity.label}")


def batch_record(judge: BatchJudge) -> dict[str, Any]:
    """What a session's record keeps about batch mode: its options, the batches it created and those it took up."""
    return {"options": judge.options.model_dump(), "created": list(judge.created), "resumed": list(judge.resumed)}


class BatchOptions(BaseModel):
    """How a run uses the batch API (``evaluate(batch=...)``, ``assay run --batch``).

    Attributes:
        poll_s: Seconds between two polls of a batch's status.
        idle_s: Backstop: submit the parked requests when none was added for this long, even if not every
            unit is parked (calls made outside units, such as G-Eval's steps, are submitted this way).
        retry: Where a request that failed in a batch is retried: ``batch`` (a later batch) or ``live``
            (a plain chat-completions call, priced in full).
        window: The completion window asked for.
        max_requests / max_bytes: Split a stage's requests into batches beyond these (the provider's limits).
    """

    model_config = ConfigDict(extra="forbid")

    poll_s: float = Field(default=30.0, gt=0)
    idle_s: float = Field(default=2.0, gt=0)
    retry: Literal["batch", "live"] = "batch"
    window: str = "24h"
    max_requests: int = Field(default=MAX_REQUESTS, ge=1)
    max_bytes: int = Field(default=MAX_BYTES, ge=1)


# -- the batch file format (pure) ---------------------------------------------------------------


def batch_line(key: str, body: dict[str, Any]) -> bytes:
    """One line of a batch input file: the call key as ``custom_id``, the chat-completions body."""
    line = {"custom_id": key, "method": "POST", "url": ENDPOINT, "body": body}
    return json.dumps(line, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def split_lines(lines: list[bytes], max_requests: int = MAX_REQUESTS, max_bytes: int = MAX_BYTES) -> list[list[int]]:
    """The indexes of ``lines`` in consecutive files, each within ``max_requests`` lines and ``max_bytes`` bytes.

    Raises:
        ConfigError: A single request is larger than a whole file may be.
    """
    files: list[list[int]] = []
    size = 0
    for i, line in enumerate(lines):
        if len(line) > max_bytes:
            raise ConfigError(f"a batch request of {len(line)} bytes exceeds the batch file limit of {max_bytes}")
        if not files or len(files[-1]) >= max_requests or size + len(line) > max_bytes:
            files.append([])
            size = 0
        files[-1].append(i)
        size += len(line)
    return files


@dataclass(frozen=True)
class LineFailure:
    """A request a batch did not answer: the HTTP status (None when the provider gave none) and why."""

    status: int | None
    code: str | None
    message: str

    @property
    def expired(self) -> bool:
        """The batch ran out of time before this request: resubmitted, not a failure of the request."""
        return self.code == "batch_expired"

    def error(self, batch_id: str) -> JudgeError:
        """The error the middleware sees: rate limits, server errors and unknown causes are retried."""
        text = f"batch {batch_id}: request failed ({self.status or self.code}): {self.message}"
        if self.status is None or self.status >= 500 or self.status in (408, 409, 429):
            return TransientJudgeError(text)
        return FatalJudgeError(text)


def read_results(text: str, latency_s: float = 0.0) -> dict[str, Response | LineFailure]:
    """The lines of a batch output or error file, by ``custom_id``: a response, or why there is none.

    A line that is not JSON or names no ``custom_id`` cannot be matched to a request and is skipped (its
    request then counts as unfinished and is resubmitted).
    """
    out: dict[str, Response | LineFailure] = {}
    for raw in text.splitlines():
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(line, dict) or not isinstance(line.get("custom_id"), str):
            continue
        out[line["custom_id"]] = _line_result(line, latency_s)
    return out


def _line_result(line: dict[str, Any], latency_s: float) -> Response | LineFailure:
    error = line.get("error") or {}
    response = line.get("response") or {}
    status = response.get("status_code")
    body = response.get("body")
    if error or status != 200:
        detail = body.get("error") if isinstance(body, dict) else None
        message = error.get("message") or (detail.get("message") if isinstance(detail, dict) else None)
        return LineFailure(status, error.get("code"), str(message or f"HTTP {status}"))
    try:
        return to_response(body, latency_s)
    except TransientJudgeError as exc:
        return LineFailure(None, "malformed", str(exc))


# -- the batching judge -------------------------------------------------------------------------------

_UNIT: ContextVar[object | None] = ContextVar("assay_batch_unit", default=None)


@dataclass
class _Entry:
    """One request waiting for a batch: parked (not submitted yet) or carried by a live batch."""

    key: str
    request: Request
    future: asyncio.Future[Response]
    asked: bool = True  # False: loaded from a resumed batch, no caller has asked for it in this session


@dataclass
class _Tally:
    """What became of one batch's requests (recorded with the batch)."""

    answered: int = 0
    failed: int = 0
    resubmitted: int = 0
    errors: list[str] = field(default_factory=list)


class BatchJudge(Judge):
    """An ``openai:`` judge whose calls go through the provider's batch API; see the module docstring.

    Args:
        live: The run's OpenAI judge (its client, request payload and identity are used).
        store: The run store: batches are recorded there, results fill its call cache.
        options: Poll interval, gathering backstop, retry mode, limits.
        prices: The run's price table: batch answers cost :meth:`PriceTable.cost` with ``batch=True``.
        note: Records what was done instead of the plain path (failed lines retried, expired batches).
        live_concurrency: Live calls in flight at most (``retry="live"``); default the live judge's.
        on_state: Hears a line on each change of a batch's state (submitted, in progress, taken in).
    """

    prices_own_calls = True

    def __init__(self, live: Judge, store: BatchStore, options: BatchOptions | None = None, *,
                 prices: PriceTable | None = None, note: Callable[[str, str], None] | None = None,
                 live_concurrency: int | None = None, on_state: Callable[[str], None] | None = None) -> None:
        check_batch_judge(live)
        assert isinstance(live, OpenAIJudge)
        self.live = live
        self.identity = live.identity
        self.store = store
        self.options = options or BatchOptions()
        self.prices = prices
        self._note = note or (lambda kind, message: None)
        self._on_state = on_state or (lambda line: None)
        self._entries: dict[str, _Entry] = {}
        self._pending: list[str] = []
        self._live_keys: set[str] = set()
        self._live_units = 0
        self._waiting: Counter[object] = Counter()
        self._wake: asyncio.Event | None = None
        self._live_concurrency = live_concurrency or live.default_concurrency
        self._live_slots: asyncio.Semaphore | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        #: Batches created by this session (provider ids), in order.
        self.created: list[str] = []
        #: Batches of an earlier session that this one took up (polled instead of submitting again).
        self.resumed: list[str] = []

    @property
    def supports_logprobs(self) -> bool:  # type: ignore[override]
        return self.live.supports_logprobs

    @property
    def default_concurrency(self) -> int:  # type: ignore[override]
        return self.live.default_concurrency

    # -- units and parking (what quiescence means) --

    @contextmanager
    def unit(self) -> Iterator[None]:
        """One unit being scored (the executor opens one per unit): its calls park under its name."""
        token = _UNIT.set(object())
        self._live_units += 1
        try:
            yield
        finally:
            self._live_units -= 1
            _UNIT.reset(token)
            self._poke()

    @contextmanager
    def parked(self) -> Iterator[None]:
        """The current unit waits for a judge answer (the middleware opens this around every wait)."""
        unit = _UNIT.get()
        if unit is None:
            yield
            return
        self._waiting[unit] += 1
        self._poke()
        try:
            yield
        finally:
            self._waiting[unit] -= 1
            if not self._waiting[unit]:
                del self._waiting[unit]

    def quiescent(self) -> bool:
        """Whether every live unit waits for an answer: nothing more will be asked until a batch answers."""
        return self._live_units > 0 and len(self._waiting) >= self._live_units

    def _poke(self) -> None:
        if self._wake is not None:
            self._wake.set()

    # -- the Judge interface --

    async def generate(self, request: Request) -> Response:
        """Park the request until a batch answers it (a request already in a live batch is awaited)."""
        self._start()
        key = call_key(self.identity, request)
        if key in self._live_keys:  # failed in a batch, retried live (retry="live"), as many at once as live
            assert self._live_slots is not None
            async with self._live_slots:
                response = await self.live.generate(request)
            response.cost_usd = self._cost(response, batch=False)
            return response
        entry = self._entries.get(key)
        if entry is None or entry.future.done():
            entry = _Entry(key, request, asyncio.get_running_loop().create_future())
            self._entries[key] = entry
            self._pending.append(key)
        entry.asked = True
        self._poke()
        return await asyncio.shield(entry.future)

    async def stop(self) -> None:
        """Stop gathering and polling (live batches stay recorded: a re-run takes them up)."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def aclose(self) -> None:
        await self.stop()
        await self.live.aclose()  # closes its pooled connections, before the event loop closes

    def _start(self) -> None:
        """On the first call: start the gatherer, and take up the live batches a killed session left."""
        if self._wake is not None:
            return
        self._wake = asyncio.Event()
        self._live_slots = asyncio.Semaphore(self._live_concurrency)
        self._spawn(self._gather())
        for batch in self.store.batches.listed(live=True):
            keys = self.store.batches.calls(batch["input_file"])
            loop = asyncio.get_running_loop()
            for key, request in keys:
                self._entries.setdefault(key, _Entry(key, request, loop.create_future(), asked=False))
            self._spawn(self._resume(batch, keys))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _cost(self, response: Response, *, batch: bool) -> float:
        if self.prices is None:
            return 0.0
        return self.prices.cost(self.identity.model, response.prompt_tokens, response.completion_tokens, batch=batch)

    # -- gathering and submitting --

    async def _gather(self) -> None:
        """Submit the parked requests when every live unit is parked, or when none was added for ``idle_s``."""
        assert self._wake is not None
        while True:
            try:
                async with asyncio.timeout(self.options.idle_s):
                    await self._wake.wait()
            except TimeoutError:
                if self._pending:
                    await self._submit()
                continue
            self._wake.clear()
            for _ in range(SETTLE_TURNS):
                await asyncio.sleep(0)
            if self._pending and self.quiescent():
                await self._submit()

    async def _submit(self) -> None:
        """Write the parked requests into batch files (split at the limits), upload and create each batch."""
        keys, self._pending = self._pending, []
        entries = [self._entries[k] for k in dict.fromkeys(keys)
                   if k in self._entries and not self._entries[k].future.done()]
        lines = [batch_line(e.key, self.live.payload(e.request)) for e in entries]
        try:
            parts = split_lines(lines, self.options.max_requests, self.options.max_bytes)
        except ConfigError as exc:
            self._fail(entries, FatalJudgeError(str(exc)))
            return
        for part in parts:
            chosen = [entries[i] for i in part]
            try:
                await self._create(chosen, b"".join(lines[i] for i in part))
            except Exception as exc:  # the callers get the error: a dead gatherer must not leave them waiting
                self._fail(chosen, exc)

    async def _create(self, entries: list[_Entry], data: bytes) -> None:
        client = self.live.client
        upload = await self._api("upload the batch file", lambda: client.files.create(
            file=("assay-batch.jsonl", data, "application/jsonl"), purpose="batch"))
        self.store.batches.add(upload.id, [(e.key, e.request) for e in entries])  # before the batch exists
        batch = await self._api("create the batch", lambda: client.batches.create(
            input_file_id=upload.id, endpoint=ENDPOINT, completion_window=self.options.window))
        self.store.batches.update(upload.id, status=batch.status, batch_id=batch.id)
        self.created.append(batch.id)
        self._spawn(self._watch(upload.id, batch.id, [(e.key, e.request) for e in entries], time.time()))

    async def _resume(self, batch: dict[str, Any], keys: list[tuple[str, Request]]) -> None:
        """Poll a batch a killed session left; one recorded without an id is looked up, created only if absent."""
        input_file, batch_id = batch["input_file"], batch["batch_id"]
        try:
            if batch_id is None:
                found = await self._api("list batches", lambda: self._find(input_file))
                if found is None:
                    found = await self._api("create the batch", lambda: self.live.client.batches.create(
                        input_file_id=input_file, endpoint=ENDPOINT, completion_window=self.options.window))
                    self.created.append(found.id)
                batch_id = found.id
                self.store.batches.update(input_file, status=found.status, batch_id=batch_id)
            self.resumed.append(batch_id)
            await self._watch(input_file, batch_id, keys, batch["created"])
        except Exception as exc:
            self._fail([self._entries[k] for k, _ in keys if k in self._entries], exc)

    async def _find(self, input_file: str) -> Any:
        async for found in self.live.client.batches.list(limit=100):
            if found.input_file_id == input_file:
                return found
        return None

    # -- polling and taking in results --

    async def _watch(self, input_file: str, batch_id: str, keys: list[tuple[str, Request]], created: float) -> None:
        """Poll a batch until it ends, then take in its output and error files."""
        client = self.live.client
        status = None
        try:
            while True:
                batch = await self._api("poll the batch", lambda: client.batches.retrieve(batch_id))
                if batch.status != status:
                    status = batch.status
                    self.store.batches.update(input_file, status=status)
                    self._on_state(f"batch {batch_id} ({len(keys)} requests): {status}")
                if status in TERMINAL:
                    break
                await asyncio.sleep(self.options.poll_s)
            results: dict[str, Response | LineFailure] = {}
            for file_id in (batch.error_file_id, batch.output_file_id):  # an answer wins over an error line
                if file_id:
                    content = await self._api("download results", lambda f=file_id: client.files.content(f))
                    results.update(read_results(content.text, time.time() - created))
        except Exception as exc:
            self._fail([self._entries[k] for k, _ in keys if k in self._entries], exc)
            return
        self._settle(input_file, batch, keys, results)

    def _settle(self, input_file: str, batch: Any, keys: list[tuple[str, Request]],
                results: dict[str, Response | LineFailure]) -> None:
        """Cache and hand out the answers; fail the failed lines (the middleware retries); resubmit the rest."""
        tally = _Tally()
        for key, request in keys:
            got = results.get(key)
            entry = self._entries.get(key)
            if isinstance(got, Response):
                got.cost_usd = self._cost(got, batch=True)
                self.store.calls.put_call(key, self.identity, request, got)  # first: a kill now loses nothing
                tally.answered += 1
                self._resolve(entry, got)
            elif got is not None and not got.expired:
                tally.failed += 1
                tally.errors.append(got.error(batch.id).args[0])
                if self.options.retry == "live":
                    self._live_keys.add(key)
                self._resolve(entry, got.error(batch.id))
            elif batch.status in ("failed", "cancelled"):
                self._resolve(entry, FatalJudgeError(f"batch {batch.id} ended {batch.status}: {_errors(batch)}"))
            elif entry is not None and entry.asked:  # expired (or left out): into the next batch
                tally.resubmitted += 1
                self._pending.append(key)
            else:
                self._entries.pop(key, None)
        self.store.batches.update(input_file, status="done", detail={
            "provider_status": batch.status, "answered": tally.answered, "failed": tally.failed,
            "resubmitted": tally.resubmitted})
        self._record(batch, tally)
        self._poke()

    def _resolve(self, entry: _Entry | None, outcome: Response | Exception) -> None:
        if entry is None:
            return
        self._entries.pop(entry.key, None)
        if entry.future.done() or not entry.asked:  # nobody waits for it (its answer, if any, is cached)
            return
        if isinstance(outcome, Response):
            entry.future.set_result(outcome)
        else:
            entry.future.set_exception(outcome)

    def _fail(self, entries: list[_Entry], exc: Exception) -> None:
        for entry in entries:
            self._resolve(entry, exc)

    def _record(self, batch: Any, tally: _Tally) -> None:
        """Notes for what was not a plain answer: failed lines (and how they are retried), expiry."""
        if tally.failed:
            where = "live" if self.options.retry == "live" else "in a later batch"
            self._note("batch", f"batch {batch.id}: {tally.failed} request(s) failed, retried {where} "
                                f"(first: {tally.errors[0]})")
        if tally.resubmitted:
            self._note("batch", f"batch {batch.id} ended {batch.status} with {tally.resubmitted} request(s) "
                                "unfinished; resubmitted in a new batch")

    async def _api(self, what: str, call: Callable[[], Any], attempts: int = 6) -> Any:
        """A files/batches API call; connection trouble, 429 and 5xx are retried with backoff."""
        oa = self.live._openai
        for attempt in range(1, attempts + 1):
            try:
                return await call()
            except (oa.APIConnectionError, oa.RateLimitError, oa.InternalServerError) as exc:
                if attempt == attempts:
                    raise TransientJudgeError(self.live.redacted(f"batch API: cannot {what}: {exc}")) from None
                await asyncio.sleep(min(60.0, self.options.poll_s * 2 ** (attempt - 1)))
            except oa.APIStatusError as exc:
                raise FatalJudgeError(self.live.redacted(
                    f"batch API: cannot {what} at {self.identity.base_url or 'OpenAI'} "
                    f"(HTTP {exc.status_code}): {str(exc)[:300]}")) from None
        raise AssertionError("unreachable")


def _errors(batch: Any) -> str:
    """A failed batch's validation errors, in brief."""
    errors = getattr(getattr(batch, "errors", None), "data", None) or []
    return "; ".join(f"{getattr(e, 'code', '')}: {getattr(e, 'message', '')}" for e in errors[:3]) or "no reason given"
