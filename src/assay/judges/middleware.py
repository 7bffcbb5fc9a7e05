"""What wraps every judge: call cache, bounded concurrency, retries with backoff, timeouts, accounting."""

from __future__ import annotations

import asyncio
import copy
import datetime
import hashlib
import json
import random
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeFloat,
    SerializerFunctionWrapHandler,
    model_serializer,
)

from assay.common.files import load_model
from assay.errors import (
    ConfigError,
    FatalJudgeError,
    JudgeError,
    RefusedJudgeError,
    RequestJudgeError,
    TransientJudgeError,
)
from assay.judges.ask import charge, usage_of
from assay.judges.base import Judge, JudgeIdentity, Request, Response
from assay.types import Usage


class CallCache(Protocol):
    """Where answered calls are kept: a run's :class:`assay.run.cache.CallCache` (``store.calls``), or a Ray
    worker's relay."""

    def get_call(self, key: str) -> Response | None: ...

    def put_call(self, key: str, identity: JudgeIdentity, request: Request, response: Response) -> object: ...


def call_key(identity: JudgeIdentity, request: Request) -> str:
    """The cache key of a call: the judge's identity plus the request's full content."""
    blob = _KEY_TEXT.encode({"judge": _identity_digest(identity), "request": request.key_payload()})
    return hashlib.sha256(blob.encode()).hexdigest()


#: ``json.dumps(..., sort_keys=True)``'s encoder, built once (json.dumps builds one per call for non-default
#: arguments): the same text, so the keys of stored runs stay theirs (tests/test_store_cache.py).
_KEY_TEXT = json.JSONEncoder(sort_keys=True)


_last_digest: tuple[JudgeIdentity | None, str] = (None, "")


def _identity_digest(identity: JudgeIdentity) -> str:
    """``identity.digest()``, hashed once per identity object rather than once per call (a run keys every call
    with the same, frozen, identity); one tuple read and written whole, so that threads never mix two."""
    global _last_digest
    known, digest = _last_digest
    if known is not identity:
        digest = identity.digest()
        _last_digest = (identity, digest)
    return digest


class RetryPolicy(BaseModel):
    """How transient failures are retried: exponential backoff with full jitter.

    Attributes:
        max_attempts: Total attempts per call, the first included.
        base_delay_s: Backoff before the second attempt; doubles after each failure.
        max_delay_s: Ceiling of a single wait (also caps a server's Retry-After).
        timeout_s: Per-attempt timeout.
        refused_s: How long an endpoint that refuses connections is retried, from its first refusal, before the run
            gives up on it (a fatal error): a server that is starting refuses for seconds, an absent one forever,
            so refusals get this short budget instead of ``max_attempts`` backoffs.
    """

    model_config = ConfigDict(extra="forbid")

    max_attempts: int = 6
    base_delay_s: float = 1.0
    max_delay_s: float = 60.0
    timeout_s: float = 180.0
    refused_s: float = Field(3.0, ge=0.0)

    def delay(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        if retry_after is not None:
            return min(self.max_delay_s, max(0.0, retry_after)) + rng.uniform(0, 0.1)
        return rng.uniform(0, min(self.max_delay_s, self.base_delay_s * 2 ** (attempt - 1)))


class PriceTable(BaseModel):
    """US dollars per million tokens, by model name, as the user gives them (assay ships no prices).

    Attributes:
        prompt_per_m: Model name -> USD per million prompt tokens.
        completion_per_m: Model name -> USD per million completion tokens.
        batch_discount: Fraction taken off both prices for calls answered through a provider's batch API
            (``--batch``; OpenAI's is 0.5). None: not given, batch calls are priced in full (and a run says so).
    """

    model_config = ConfigDict(extra="forbid")

    prompt_per_m: dict[str, NonNegativeFloat] = {}
    completion_per_m: dict[str, NonNegativeFloat] = {}
    batch_discount: float | None = Field(default=None, ge=0.0, le=1.0)

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Without a batch discount the table is recorded as before there was one (manifests stay comparable)."""
        data: dict[str, Any] = handler(self)
        if data.get("batch_discount", 0) is None:
            del data["batch_discount"]
        return data

    @classmethod
    def load(cls, path: str | Path) -> PriceTable:
        """A price table from a JSON or YAML file; a bad file is an error naming it and the field."""
        return load_model(path, cls, what="price table", syntax="JSON or YAML",
                          mapping="expected an object with 'prompt_per_m' and 'completion_per_m'")

    def check_covers(self, model: str) -> None:
        """Refuse a table without both prices for the judge's model, instead of counting it as free."""
        missing = [k for k, table in (("prompt_per_m", self.prompt_per_m), ("completion_per_m", self.completion_per_m))
                   if model not in table]
        if missing:
            known = sorted(set(self.prompt_per_m) | set(self.completion_per_m))
            raise ConfigError(f"the price table has no {' or '.join(missing)} price for model {model!r} "
                              f"(it prices: {', '.join(known) or 'nothing'})")

    def cost(self, model: str, prompt_tokens: int, completion_tokens: int, *, batch: bool = False) -> float:
        """The price of one call; ``batch``: answered through a batch API, with :attr:`batch_discount` off."""
        full = (prompt_tokens * self.prompt_per_m.get(model, 0.0)
                + completion_tokens * self.completion_per_m.get(model, 0.0)) / 1e6
        return full * (1.0 - (self.batch_discount or 0.0)) if batch else full


@dataclass
class Ledger:
    """Run-wide usage per method stage, plus counts of retries and failures."""

    by_stage: dict[str, Usage] = field(default_factory=dict)
    retries: int = 0
    failures: int = 0

    def record(self, stage: str, usage: Usage) -> None:
        self.by_stage.setdefault(stage, Usage()).add(usage)

    def total(self) -> Usage:
        total = Usage()
        for u in self.by_stage.values():
            total.add(u)
        return total


#: The re-ask round of the unit being judged (``--retry-parse-failures``, :class:`assay.run.reask.Reasking`): put
#: into each of its requests, so that they are new calls with their own cache keys. 0: a first attempt.
reask_attempt: ContextVar[int] = ContextVar("assay_reask_attempt", default=0)


def empty_answer(response: Response) -> bool:
    """Whether a 200 answer holds nothing at all: choices, every one without text or log-probabilities.

    An empty answer is a server glitch more often than the judge's verdict, so it is retried like a transient
    error; if it stays empty, the method records it as a parse failure ("the answer is empty"). An answer
    with fewer choices than asked (a server capping ``n``) is none: G-Eval's sampling asks for the rest.
    """
    return bool(response.choices) and not any(c.text.strip() or c.logprobs for c in response.choices)


@dataclass
class _Flight:
    """One judge call in flight and how many callers await it.

    Each caller waits through :func:`asyncio.shield`, so cancelling one caller leaves the call
    running for the others; when the last caller is cancelled, the call is cancelled too.
    """

    task: asyncio.Future[Response]
    waiters: int = 0

    async def wait(self) -> Response:
        self.waiters += 1
        try:
            return await asyncio.shield(self.task)
        except asyncio.CancelledError:
            if not self.task.done() and self.waiters == 1:
                self.task.cancel()
            raise
        finally:
            self.waiters -= 1


class ManagedJudge:
    """A judge with the cache, concurrency bound, retries, timeout and accounting around it.

    Only :func:`assay.judges.ask.ask` calls :meth:`generate` (methods, build steps and the probe go through it),
    naming the stage ("score", "steps", "decompose", ...) so that usage is accounted per stage, run-wide in the
    :class:`Ledger` and per judgment in the current :func:`~assay.judges.ask.attributed` tally.
    """

    def __init__(
        self,
        judge: Judge,
        *,
        cache: CallCache | None = None,
        concurrency: int | None = None,
        retry: RetryPolicy | None = None,
        prices: PriceTable | None = None,
        ledger: Ledger | None = None,
        on_retry: Callable[[str], None] | None = None,
        seed: int = 0,
    ) -> None:
        self.inner = judge
        self.cache = cache
        self.concurrency = concurrency or judge.default_concurrency
        judge.plan_concurrency(self.concurrency)
        self._sem = asyncio.Semaphore(self.concurrency)
        self.retry = retry or RetryPolicy()
        if prices is not None:
            prices.check_covers(judge.identity.model)
        self.prices = prices
        self.ledger = ledger or Ledger()
        self._on_retry = on_retry
        self._rng = random.Random(seed)
        self._in_flight: dict[str, _Flight] = {}
        self._refused_since: float | None = None  # when the endpoint's current run of refusals began
        self._parked: Callable[[], AbstractContextManager[object]] = getattr(judge, "parked", nullcontext)
        self.sample_offset = 0

    def offset(self, sample_offset: int) -> ManagedJudge:
        """This judge with every request's ``sample_index`` moved by ``sample_offset`` (``assay probe``'s repeats).

        A view, not a second judge: it shares the cache, ledger, concurrency bound and in-flight calls. A sampled
        request (temperature > 0) then is a new draw with its own cache key; a greedy one keeps its key (greedy
        keys ignore the index) and is answered from the cache, as it would be answered the same anyway.
        """
        view = copy.copy(self)
        view.sample_offset = self.sample_offset + sample_offset
        return view

    @property
    def identity(self) -> JudgeIdentity:
        return self.inner.identity

    @property
    def supports_logprobs(self) -> bool:
        return self.inner.supports_logprobs

    @property
    def supports_schema(self) -> bool:
        return self.inner.supports_schema

    async def generate(self, request: Request, *, stage: str = "score") -> Response:
        """Answer a request from the cache, from an identical call in flight, or from the judge; account for it.

        Identical requests (same :func:`call_key`) in flight at the same time share one call:
        without that, a run at concurrency > 1 pays twice for two outputs with the same text,
        and a nondeterministic judge gives them different scores that a replay cannot reproduce.
        The callers that joined a call get its response accounted as cached calls.
        """
        if self.sample_offset:
            request = request.model_copy(update={"sample_index": request.sample_index + self.sample_offset})
        if (attempt := reask_attempt.get()) and not request.attempt:
            request = request.model_copy(update={"attempt": attempt})
        key = call_key(self.identity, request)
        hit = self._cached(key)
        if hit is not None:
            self._account(stage, hit)
            return hit
        flight = self._in_flight.get(key)
        joined = flight is not None and not flight.task.done()
        if flight is None or flight.task.done():
            flight = _Flight(asyncio.ensure_future(self._call(key, request)))
            self._in_flight[key] = flight
        with self._parked():  # a batch judge knows when every unit waits (assay.judges.batch)
            response = await flight.wait()
        if joined and not response.from_cache:
            response = response.model_copy(update={"from_cache": True})
        self._account(stage, response)
        return response

    def _account(self, stage: str, response: Response) -> None:
        """Count a response run-wide and for the judgment being scored."""
        usage = usage_of(response)
        self.ledger.record(stage, usage)
        charge(stage, usage)

    def _cached(self, key: str) -> Response | None:
        """The cached answer to a call, marked as such, or None."""
        if self.cache is None:
            return None
        hit = self.cache.get_call(key)
        return None if hit is None else hit.model_copy(update={"from_cache": True})

    async def _call(self, key: str, request: Request) -> Response:
        """The one call shared by every caller of ``key``: priced, cached, then removed from the in-flight map."""
        try:
            async with self._sem:
                response = await self._with_retries(key, request)
            if response.from_cache:  # filled by another process or caller while this one was retrying
                return response
            if not self.inner.paid:
                response.cost_usd = 0.0
            elif self.prices is not None and not self.inner.prices_own_calls:
                response.cost_usd = self.prices.cost(
                    self.identity.model, response.prompt_tokens, response.completion_tokens)
            if self.cache is not None:
                self.cache.put_call(key, self.identity, request, response)
            return response
        finally:
            self._in_flight.pop(key, None)

    async def _with_retries(self, key: str, request: Request) -> Response:
        """The call, retried: transient failures up to ``max_attempts``, refusals within ``refused_s`` (no attempt)."""
        last: JudgeError | None = None
        attempt = tries = 0
        while attempt < self.retry.max_attempts:
            tries += 1
            if tries > 1 and (hit := self._cached(key)) is not None:
                return hit
            try:
                async with asyncio.timeout(self.retry.timeout_s):  # unlike wait_for on 3.11, no task per call
                    response = await self.inner.generate(request)
                self._refused_since = None
                if attempt + 1 == self.retry.max_attempts or not empty_answer(response):
                    return response  # an answer empty to the end is the method's to record (a parse failure)
                raise TransientJudgeError("the judge answered with empty content")
            except FatalJudgeError:
                raise
            except RequestJudgeError as exc:  # this request only: its unit fails, the run goes on
                self.ledger.failures += 1
                exc.attempts = attempt + 1
                raise
            except RefusedJudgeError as exc:
                await self._refused(exc, tries)
                continue
            except (TransientJudgeError, TimeoutError) as exc:
                attempt += 1
                last = exc if isinstance(exc, JudgeError) else TransientJudgeError(
                    f"no answer within {self.retry.timeout_s:g} s")
                if attempt == self.retry.max_attempts:
                    break
                retry_after = getattr(exc, "retry_after", None)
                wait = self.retry.delay(attempt, retry_after, self._rng)
                self.ledger.retries += 1
                if self._on_retry:
                    self._on_retry(f"{last} - retry {attempt} in {wait:.1f} s")
                await asyncio.sleep(wait)
        self.ledger.failures += 1
        error = JudgeError(f"{self.identity.label}: gave up after {self.retry.max_attempts} attempts: {last}")
        error.attempts = self.retry.max_attempts
        raise error

    async def _refused(self, exc: RefusedJudgeError, attempt: int) -> None:
        """Wait before retrying a refused connection, within the endpoint's refusal budget; past it, give up.

        The budget runs from the endpoint's first refusal since its last answer, shared by every call: the first
        refusal says on the status line what is happening and until when; once it is spent, every call refused
        stops the run at once with a fatal error (nothing is listening: no unit could be judged).

        Raises:
            FatalJudgeError: The endpoint has refused connections for ``refused_s`` seconds.
        """
        now = time.monotonic()
        if self._refused_since is None:
            self._refused_since = now
            if self._on_retry:
                until = datetime.datetime.now() + datetime.timedelta(seconds=self.retry.refused_s)
                self._on_retry(f"retrying until {until:%H:%M:%S} ({self.retry.refused_s:g} s for refused "
                               f"connections): {exc}")
        left = self._refused_since + self.retry.refused_s - now
        if left <= 0:
            self.ledger.failures += 1
            error = FatalJudgeError(f"{self.identity.label}: {exc}; refused for {self.retry.refused_s:g} s, giving "
                                    "up (start the server, or wait longer with --refused-wait)")
            error.attempts = attempt
            raise error from exc
        self.ledger.retries += 1
        await asyncio.sleep(min(left, self.retry.delay(attempt, None, self._rng)))

    async def aclose(self) -> None:
        await self.inner.aclose()
