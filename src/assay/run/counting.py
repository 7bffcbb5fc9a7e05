"""The method's own requests counted without a call: the counting judge behind ``--estimate`` and a real run's
context check (units whose prompts exceed the judge's context, named before judging).

The method runs unchanged: its requests go through the one call path into a judge that counts each request's prompt
tokens (:mod:`assay.judges.tokens`) and answers with a structural stand-in (:mod:`assay.run.standin`), so later
stages' requests are built by the method itself and counted. A request built before any stand-in answer was read
(in its unit, or during preparation) is *exact*; one built after is *estimated*. Calls the run's cache holds (a
resumed run, or a live run's preparation) are answered from it, as real answers: prompts known only after
preparation (G-Eval's steps, CheckEval's checklist) are then the real ones.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from assay.answers.fence import fenced_text
from assay.errors import JudgeError, RequestJudgeError
from assay.judges import Judge, JudgeIdentity, ManagedJudge, Request, Response
from assay.judges.ask import attributed
from assay.judges.base import Choice
from assay.judges.middleware import call_key
from assay.judges.tokens import TokenCounter
from assay.methods import Method, RunContext
from assay.run.cache import CallCache
from assay.run.standin import answer as standin_answer
from assay.run.standin import listed
from assay.types import Dimension, Judgment, Sample

#: Yields before a stand-in answer: requests that a method sends together (``asyncio.gather``) are all
#: recorded before any of them is answered, so none is taken for one built from a sibling's answer.
_YIELDS = 3

Unit = tuple[Sample, Dimension]


@dataclass
class StageEstimate:
    """One method stage's share of the bill.

    Attributes:
        stage: The stage (``score``, ``steps``, ``decompose``, ``verify``, ...).
        calls: Calls the judge would be paid for.
        cached_calls: Calls answered from the run's cache or repeated identically (free in a real run too).
        prompt_tokens: Prompt tokens of the paid calls.
        completion_tokens: Completion tokens: the stand-in answers' length (an estimate, see ``completion_basis``).
        completion_tokens_max: The bound the requests set (``max_tokens`` x completions asked).
        exact_calls: Paid calls whose request was built before any stand-in answer (their prompt is the real one).
        why: Why the row is exact or estimated, in words.
        cost_usd: The price of the row (None without a price table).
    """

    stage: str
    calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    completion_tokens_max: int = 0
    exact_calls: int = 0
    why: str = ""
    cost_usd: float | None = None

    @property
    def exact(self) -> bool:
        """Whether every paid call's prompt is the real one (completions are always estimated)."""
        return self.exact_calls == self.calls


@dataclass(frozen=True)
class OverContext:
    """One request of a unit whose prompt, with its ``max_tokens``, exceeds the judge's context.

    Attributes:
        sample_id / dimension: The unit.
        stage: The request's stage.
        prompt_tokens: Its prompt tokens, as the counter counts them.
        max_tokens: What it asks to generate.
        n_ctx: The judge's context size.
        exact: Whether the request was built before any stand-in answer (its prompt is the real one).
    """

    sample_id: str
    dimension: str
    stage: str
    prompt_tokens: int
    max_tokens: int
    n_ctx: int
    exact: bool

    def label(self) -> str:
        """``sample / dimension (N prompt tokens + M to generate > n_ctx)``, as the console and notes name it."""
        return (f"{self.sample_id} / {self.dimension} ({self.prompt_tokens} prompt tokens + {self.max_tokens} to "
                f"generate > {self.n_ctx})")

    def record(self, counter: TokenCounter, refused: bool) -> dict[str, Any]:
        """What the unit's trace says of it (``over_context``)."""
        return {"n_ctx": self.n_ctx, "prompt_tokens": self.prompt_tokens, "max_tokens": self.max_tokens,
                "stage": self.stage, "counted_by": counter.name, "exact": self.exact and counter.own,
                "refused_without_call": refused}


def worst_by_unit(over: list[OverContext]) -> dict[tuple[str, str], OverContext]:
    """Each unit's longest request over the context (an exact one first), units in the order found."""
    out: dict[tuple[str, str], OverContext] = {}
    for o in over:
        key = (o.sample_id, o.dimension)
        old = out.get(key)
        if old is None or (o.exact, o.prompt_tokens) > (old.exact, old.prompt_tokens):
            out[key] = o
    return out


# -- the counting judge -------------------------------------------------------------------------------------------


@dataclass
class _Scope:
    """One unit's (or the preparation's) state: its sample's texts, the stage of the first stand-in answer its code
    read (None while it has read none), and the unit (None: the preparation)."""

    texts: tuple[str, ...] = ()
    after: str | None = None
    unit: tuple[str, str] | None = None


_scope: ContextVar[_Scope | None] = ContextVar("assay_counting_scope", default=None)


@contextmanager
def scoped(texts: tuple[str, ...], after: str | None, unit: tuple[str, str] | None = None) -> Iterator[_Scope]:
    """Count what runs inside as one unit's requests (or, with ``unit`` None, the preparation's)."""
    scope = _Scope(texts, after, unit)
    token = _scope.set(scope)
    try:
        yield scope
    finally:
        _scope.reset(token)


class _NoCall(Judge):
    """The judge inside the counting judge: it is never called (the counting judge answers before it)."""

    paid = False

    def __init__(self, identity: JudgeIdentity, logprobs: bool) -> None:
        self.identity, self.supports_logprobs = identity, logprobs

    async def generate(self, request: Request) -> Response:  # pragma: no cover - never reached
        raise AssertionError("the counting judge never calls the judge")


class CountingJudge(ManagedJudge):
    """The one call path with the judge replaced: counts each request, answers with a stand-in.

    The run's cache still answers what it holds, as real answers; a request identical to one already counted is
    counted as cached, since a real run's cache or single flight would serve it. A request is estimated when its
    unit's code had read a stand-in answer before building it, when it continues a conversation (a re-ask), or when
    it lists items a stand-in wrote (units of a decomposition shared across dimensions, which later dimensions read
    without a call). With ``n_ctx`` set, each unit's request whose prompt and ``max_tokens`` exceed it is kept in
    ``over``.
    """

    def __init__(self, identity: JudgeIdentity, logprobs: bool, counter: TokenCounter,
                 cache: CallCache | None, standin: Callable[[Request, str], str | None] = lambda r, s: None) -> None:
        super().__init__(_NoCall(identity, logprobs), cache=cache)
        self.counter = counter
        self.standin = standin  # the method's own stand-in answers first (Method.standin)
        self.n_ctx: int | None = None
        self.over: list[OverContext] = []
        self.rows: dict[str, StageEstimate] = {}
        self._answered: dict[str, Response] = {}
        self._items: dict[str, dict[str, str]] = {}  # decomposed text -> {item a stand-in listed: its stage}

    async def generate(self, request: Request, *, stage: str = "score") -> Response:
        key = call_key(self.identity, request)
        row = self.rows.setdefault(stage, StageEstimate(stage))
        scope = _scope.get() or _Scope()
        hit = self._cached(key)
        if hit is not None:
            row.cached_calls += 1
            return hit
        if key in self._answered:
            row.cached_calls += 1
            scope.after = scope.after or stage
            return self._answered[key]
        after = scope.after or self._depends(request, scope.texts)
        text = self.standin(request, stage) or standin_answer(request)
        row.calls += 1
        row.exact_calls += after is None
        prompt_tokens = self.counter.prompt(request)
        row.prompt_tokens += prompt_tokens
        if self.n_ctx is not None and scope.unit is not None and prompt_tokens + request.max_tokens > self.n_ctx:
            self.over.append(OverContext(*scope.unit, stage, prompt_tokens, request.max_tokens, self.n_ctx,
                                         after is None))
        row.completion_tokens += self.counter.text(text) * request.n
        row.completion_tokens_max += request.max_tokens * request.n
        row.why = _why(row.why, after)
        self._remember(request, text, stage)
        for _ in range(_YIELDS):  # let requests sent together be counted before any of them is answered
            await asyncio.sleep(0)
        scope.after = scope.after or stage
        response = Response(choices=[Choice(text=text, finish_reason="stop") for _ in range(request.n)],
                            model=self.identity.model)
        self._answered[key] = response
        return response

    def _remember(self, request: Request, answer: str, stage: str) -> None:
        """Keep the items a stand-in listed for the text it decomposed (to recognise prompts that list them)."""
        items = listed(answer)
        source = fenced_text(request.messages[-1].content)
        if items and source is not None:
            self._items.setdefault(_norm(source), {}).update({item: stage for item in items})

    def _depends(self, request: Request, texts: tuple[str, ...]) -> str | None:
        """Why a request depends on a stand-in's answer without its unit having read one, or None."""
        if any(m.role == "assistant" for m in request.messages):
            return "a follow-up turn"
        prompt = "\n".join(m.content for m in request.messages)
        for text in texts:  # the judged texts themselves hold the items too: only a listed item counts
            prompt = prompt.replace(text.strip(), "")
        for text in texts:
            for item, stage in self._items.get(_norm(text), {}).items():
                if item in prompt:
                    return stage
        return None


def _norm(text: str) -> str:
    return " ".join(text.split())


def _why(old: str, after: str | None) -> str:
    """A row's reason, widened as its calls come in (any call built from a stand-in answer makes it estimated)."""
    if after is None:
        return old or "exact: built before any answer"
    new = f"estimated: {after}" if after == "a follow-up turn" else \
        f"estimated: built from the stand-in answer of stage {after!r}"
    return new if not old or old.startswith("exact") else old


def judged_texts(sample: Sample) -> tuple[str, ...]:
    """A sample's judged texts: what a stand-in decomposes, and where its units appear without being listed."""
    return tuple(t for t in (sample.source, sample.context, sample.reference, sample.output) if t)


async def count_units(method: Method, units: list[Unit], ctx: RunContext, counting: CountingJudge) -> None:
    """Prepare ``method`` and score each unit with ``ctx`` (whose judge is ``counting``), one unit at a time.

    ``method`` must be a fresh instance (``type(m)(m.options)``): what it builds from stand-in answers (G-Eval's
    steps, SEAL's shared units) stays in it and must never reach a real run's method.
    """
    with scoped((), None) as prep:
        await method.prepare(ctx)
    for sample, dim in units:
        with scoped(judged_texts(sample), prep.after, (sample.id, dim.name)), attributed():
            await method.score(sample, dim, ctx)


# -- a live run's context check ------------------------------------------------------------------------------------


async def find_over_context(method: Method, units: list[Unit], ctx: RunContext, judge: Judge, counter: TokenCounter,
                            n_ctx: int, cache: CallCache | None) -> dict[tuple[str, str], OverContext]:
    """The units whose prompts exceed ``n_ctx``, found before judging by running a fresh instance of the run's
    method against the counting judge: its preparation answered from the run's cache (where the live preparation
    put its answers), so prompts known only after preparation are the real ones; nothing is written, no call made.

    Args:
        method: The run's method (left untouched).
        units: The units to judge.
        ctx: The run's context (dataset, dimensions, answer format); its judge, notes and artifacts are not used.
        judge: The run's judge (its identity for cache keys, its log-probability capability as detected).
        counter: How prompt tokens are counted (:func:`assay.judges.tokens.judge_counter`).
        n_ctx: The judge's context size.
        cache: The run's call cache.
    """
    fresh = type(method)(method.options)
    counting = CountingJudge(judge.identity, judge.supports_logprobs, counter, cache, standin=fresh.standin)
    counting.n_ctx = n_ctx
    quiet = RunContext(dataset=ctx.dataset, dimensions=ctx.dimensions, judge=counting,
                       answer_format=ctx.answer_format)
    await count_units(fresh, units, quiet, counting)
    return worst_by_unit(counting.over)


class ContextChecked:
    """A method whose units found over the judge's context are refused without a call (``refused``: the count is
    the judge's own) or sent with the finding in their trace (an approximate count: the judge may accept them);
    every other unit as by the method. Built from the findings, then put around the run's method (:meth:`around`).

    Args:
        found: Each unit's longest request over the context (:func:`find_over_context`).
        counter: How it was counted.
        refused: The units to fail without a call.
        method: The run's method (or its re-asking wrapper).
    """

    def __init__(self, found: dict[tuple[str, str], OverContext], counter: TokenCounter,
                 refused: set[tuple[str, str]], method: Method | None = None) -> None:
        self._method = method
        self.found = {unit: o.record(counter, unit in refused) for unit, o in found.items()}
        self.messages = {unit: _refusal(o, counter) for unit, o in found.items() if unit in refused}

    def around(self, method: Any) -> ContextChecked:
        """These findings around ``method``."""
        out = copy.copy(self)
        out._method = method
        return out

    def __getattr__(self, name: str) -> Any:  # everything else is the method's own
        if name.startswith("__") or name == "_method":  # unpickling (Ray) looks these up before __init__ ran
            raise AttributeError(name)
        return getattr(self._method, name)

    async def score(self, sample: Sample, dimension: Dimension, ctx: RunContext) -> Judgment:
        assert self._method is not None, "around(method) first"
        unit = (sample.id, dimension.name)
        found = self.found.get(unit)
        if found is None:
            return await self._method.score(sample, dimension, ctx)
        if unit in self.messages:
            exc = RequestJudgeError(self.messages[unit])
            exc.attempts, exc.trace = 0, {"over_context": found}
            raise exc
        try:
            j = await self._method.score(sample, dimension, ctx)
        except JudgeError as exc:  # the endpoint refused it after all: the failed unit's trace says what was found
            exc.trace = {**(exc.trace or {}), "over_context": found}
            raise
        return j.model_copy(update={"trace": {**j.trace, "over_context": found}})


def _refusal(o: OverContext, counter: TokenCounter) -> str:
    return (f"prompt of {o.prompt_tokens} tokens + {o.max_tokens} to generate ({o.stage}) exceeds the judge's "
            f"context of {o.n_ctx} tokens: found before any call by {counter.name}, as the judge itself counts, so "
            "no call was made; pass --judge-opt n_ctx=N")


def over_context_message(found: list[OverContext], source: str, counter: TokenCounter,
                         refused: set[tuple[str, str]]) -> str:
    """The one line that names the units over the context before judging (console and notes): how many, the first
    few, how the size was learnt and the tokens counted, and what the run does with them."""
    n_ctx = found[0].n_ctx
    shown = "; ".join(o.label() for o in found[:5]) + (" ..." if len(found) > 5 else "")
    head = (f"{len(found)} unit(s) have a prompt over the judge's context of {n_ctx} tokens ({source}; with "
            f"max_tokens, counted by {counter.name}): {shown}")
    sent = len(found) - len(refused)
    if not sent:
        return f"{head}; they fail without a call (the judge counts so too): raise it with --judge-opt n_ctx=N"
    how = "not the judge's own count" if not counter.own else "counted on prompts built from stand-in answers"
    tail = (f"{'the other ' if refused else ''}{sent} {'is' if sent == 1 else 'are'} sent anyway ({how}: the judge "
            "may accept them; one it refuses fails its unit only)")
    return f"{head}; " + (f"{len(refused)} fail without a call (the judge counts so too); " if refused else "") + tail
