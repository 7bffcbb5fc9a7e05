"""The one path every judge call takes: send, read the judge's own answer, re-ask (bounded), record the call.

Methods, build steps and the probe never call a judge directly. They build a :class:`~assay.judges.base.Request`
and a reader (a pure function from the response to a value or an error) and call :func:`ask`. It sends the
request through the :class:`~assay.judges.middleware.ManagedJudge` (cache, single flight, retries, accounting),
reads the answer, and while the reader refuses it and re-asks remain, sends a follow-up turn that quotes the
answer back with the reason it could not be used (a greedy judge then sees a new request, not a cache hit).
Every call leaves one :class:`CallRecord` (the trace keys are the same for every method), and its usage is
added to the judgment being scored (:func:`attributed`) under the call's stage, without the method's help.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict

from assay.common.hashing import content_hash
from assay.judges.base import Message, Request, Response
from assay.types import Usage

T = TypeVar("T")

#: Characters of an unusable answer quoted back in a re-ask; the full answer stays in the call record.
ECHO_CHARS = 1500
#: Stage suffix of re-asks in the usage accounting (``score`` -> ``score-reask``).
REASK_SUFFIX = "-reask"


@dataclass(frozen=True)
class Read(Generic[T]):
    """What a reader made of one answer: a value, or the reason there is none (sent back in a re-ask).

    Attributes:
        value: The value read. A reader may keep a partial reading here beside an error (``Asked.last`` then
            holds it); :attr:`Asked.value` is set only from a reading without error.
        error: Why the answer could not be used, in words the judge can act on.
        detail: Anything the reader wants kept in the call record (flags, candidates, dropped items).
    """

    value: T | None
    error: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None


#: A reader: the judge's response and the request it answered -> what was read. Readers are pure functions
#: of their arguments (most read ``response.text`` through :func:`assay.answers.echo.own_answer` with the prompt).
Reader = Callable[[Response, Request], Read[Any]]


class Sender(Protocol):
    """What :func:`ask` sends through: the run's :class:`~assay.judges.middleware.ManagedJudge` (a protocol, so
    that this module does not import the middleware, which imports it to charge usage)."""

    async def generate(self, request: Request, *, stage: str = "score") -> Response: ...


def usage_of(response: Response) -> Usage:
    """The usage one response stands for; a cached answer counts as a free, cached call."""
    if response.from_cache:
        return Usage(cached_calls=1)
    return Usage(calls=1, prompt_tokens=response.prompt_tokens, completion_tokens=response.completion_tokens,
                 cached_prompt_tokens=response.cached_prompt_tokens, latency_s=response.latency_s,
                 cost_usd=response.cost_usd)


def keep_text(response: Response, request: Request) -> Read[str]:
    """The default reader: the first completion's text, whatever it says (empty when the judge gave none; a method
    that reads the whole response, e.g. G-Eval's sampled answers, reads it from :attr:`Asked.response`)."""
    return Read(response.choices[0].text if response.choices else "")


class CallRecord(BaseModel):
    """One call as the trace keeps it; the same keys for every method, build step and probe.

    Attributes:
        stage: The usage stage (``score``, ``steps``, ``decompose``, ``score-reask``, ...).
        prompt_sha256: :func:`~assay.common.hashing.content_hash` of the request's last user message (the question).
        answer: The first completion's text, as the judge wrote it.
        error: Why the answer could not be used (None when it was).
        finish: The first completion's finish reason (``stop``, ``length``, ...).
        cached: Whether the answer came from the call cache (or an identical call in flight).
        detail: What the reader kept beside the value (see :attr:`Read.detail`).
        usage: What the call cost (:func:`usage_of`); charged to the judgment already, kept for a result shared
            by several judgments (SEAL's stage 1) whose trace says what it cost.
    """

    model_config = ConfigDict(extra="forbid")

    stage: str
    prompt_sha256: str
    answer: str
    error: str | None = None
    finish: str | None = None
    cached: bool = False
    detail: dict[str, Any] = {}
    usage: Usage = Usage()

    def to_trace(self) -> dict[str, Any]:
        """The record as a trace entry: empty fields left out but ``error`` (None: the answer was used); the
        usage is the judgment's, by stage."""
        return self.model_dump(exclude_defaults=True, exclude={"stage", "usage"}) | {
            "stage": self.stage, "prompt_sha256": self.prompt_sha256, "answer": self.answer, "error": self.error}


@dataclass
class Asked(Generic[T]):
    """The outcome of :func:`ask`: the value read (None when every attempt failed), every call, the last response.

    Attributes:
        value: What the reader made of the usable answer (None when no answer was usable).
        calls: One record per call, the first and every re-ask, in order.
        response: The last response (for readers that need more than the value, e.g. log-probabilities).
        last: The reader's outcome for the last response (its partial value and error when none was usable).
    """

    value: T | None
    calls: list[CallRecord]
    response: Response
    last: Read[T]

    @property
    def ok(self) -> bool:
        return self.calls[-1].error is None

    @property
    def error(self) -> str | None:
        return self.calls[-1].error

    @property
    def reasks(self) -> int:
        """How many follow-up turns were sent after an unusable answer."""
        return len(self.calls) - 1

    def trace(self) -> list[dict[str, Any]]:
        return [c.to_trace() for c in self.calls]


#: The keys stored runs made before the one call path used for a call record's fields (new key -> old key).
OLD_KEYS = {"prompt_sha256": "prompt_sha", "answer": "text"}


def recorded(entry: dict[str, Any], key: str) -> Any:
    """A call record's field in a stored trace entry, also under the key older runs wrote (readers accept both)."""
    return entry[key] if key in entry else entry.get(OLD_KEYS.get(key, key))


def question_of(request: Request) -> str:
    """The text a call record's hash names: the request's last user message."""
    return next(m.content for m in reversed(request.messages) if m.role == "user")


def reask_text(error: str) -> str:
    """The follow-up turn after an unusable answer (the judge's answer is quoted just before it)."""
    return (f"That answer could not be used: {error}. "
            "Reply again in the format asked for, with nothing else.")


def follow_up(request: Request, answer: str, error: str, message: Callable[[str], str] = reask_text) -> Request:
    """The request that re-asks: the conversation so far, the unusable answer (cut at :data:`ECHO_CHARS`), the error."""
    echoed = answer if len(answer) <= ECHO_CHARS else answer[:ECHO_CHARS].rstrip() + " [...]"
    messages = (*request.messages, Message(role="assistant", content=echoed),
                Message(role="user", content=message(error)))
    return request.model_copy(update={"messages": messages})


async def ask(judge: Sender, request: Request, *, stage: str, read: Reader = keep_text, reasks: int = 0,
              reask_message: Callable[[str], str] = reask_text, reask_stage: str | None = None) -> Asked[Any]:
    """Send ``request``; while ``read`` refuses the answer and re-asks remain, ask again in a follow-up turn.

    Args:
        judge: The run's managed judge (cache, single flight, retries, accounting).
        request: The first request.
        stage: Usage stage of the first call; re-asks are accounted under ``<stage>-reask``.
        read: Reads a response into a value or an error (pure); the default keeps the text.
        reasks: Follow-up turns allowed after the first answer (0: no re-ask).
        reask_message: The follow-up turn's text for an error (a method's own wording, e.g. a format hint).
        reask_stage: Usage stage of the re-asks (default ``<stage>-reask``; SEAL counts them under ``stage``).

    Returns:
        The value of the first usable answer (None if none was), every call's record, the last response.

    Raises:
        JudgeError: The judge gave no answer after the middleware's retries (the unit is then stored as failed).
    """
    calls: list[CallRecord] = []
    current = request
    for attempt in range(reasks + 1):
        call_stage = stage if attempt == 0 else (reask_stage or stage + REASK_SUFFIX)
        response = await judge.generate(current, stage=call_stage)
        got = read(response, current)
        choice = response.choices[0] if response.choices else None
        calls.append(CallRecord(stage=call_stage, prompt_sha256=content_hash(question_of(current)),
                                answer=response.text if choice else "", error=got.error,
                                finish=choice.finish_reason if choice else None, cached=response.from_cache,
                                detail=got.detail, usage=usage_of(response)))
        if got.ok:
            return Asked(got.value, calls, response, got)
        current = follow_up(current, response.text if choice else "", str(got.error), reask_message)
    return Asked(None, calls, response, got)


# -- usage attributed to the judgment being scored ------------------------------------------------------------


class StageUsage:
    """Usage of one judgment, split by stage; :func:`attributed` makes one current and the judge fills it."""

    def __init__(self) -> None:
        self.by_stage: dict[str, Usage] = {}

    def record(self, stage: str, usage: Usage) -> None:
        self.by_stage.setdefault(stage, Usage()).add(usage)


_current: ContextVar[StageUsage | None] = ContextVar("assay_judgment_usage", default=None)


@contextmanager
def attributed() -> Iterator[StageUsage]:
    """Within this block (and the tasks it starts), every call's usage is added to the yielded tally.

    The executor opens one per (sample, dimension) around ``Method.score``; a call shared by several
    judgments (SEAL's stage 1, single-flight joins) is paid by the one whose task made it and counted
    as a cached call by the others.
    """
    tally = StageUsage()
    token = _current.set(tally)
    try:
        yield tally
    finally:
        _current.reset(token)


def charge(stage: str, usage: Usage) -> None:
    """Add one call's usage to the current judgment's tally, if a judgment is being scored."""
    tally = _current.get()
    if tally is not None:
        tally.record(stage, usage)


def current_usage() -> dict[str, Usage]:
    """The current judgment's usage so far, by stage (empty outside :func:`attributed`)."""
    tally = _current.get()
    return {} if tally is None else {k: v.model_copy() for k, v in tally.by_stage.items()}
