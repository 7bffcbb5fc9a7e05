"""The bill before the run: calls and tokens per method stage, counted by running the method against a stand-in.

The method's own code runs unchanged: its requests go through the one call path into a judge that counts
each request's prompt tokens with the model's tokenizer (:mod:`assay.judges.tokens`) and answers with a structural
stand-in (:mod:`assay.run.standin`), so later stages' requests are built by the method itself and counted. A request
built before any stand-in answer was read (in its unit, or during preparation) is *exact*; one built after is
*estimated*. Calls the run's cache already holds (a resumed run) are answered from it and counted as cached.
Nothing is written: a run directory is only read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.answers.fence import fenced_text
from assay.common.hashing import content_hash
from assay.errors import ConfigError
from assay.judges import Judge, JudgeIdentity, ManagedJudge, PriceTable, Request, Response, load_judge, parse_spec
from assay.judges.ask import ECHO_CHARS, attributed, reask_text
from assay.judges.base import Choice
from assay.judges.middleware import call_key
from assay.judges.tokens import (
    CHARS_PER_TOKEN,
    OPENAI_PER_MESSAGE,
    TokenCounter,
    approximate,
    judge_counter,
    tiktoken_counter,
)
from assay.methods import RunContext
from assay.run.answer_format import choose
from assay.run.cache import CallCache
from assay.run.executor import order_units
from assay.run.session import RunPlan
from assay.run.standin import answer as standin_answer
from assay.run.standin import listed
from assay.run.store import DB_NAME, RunStore
from assay.types import Sample

#: Yields before a stand-in answer: requests that a method sends together (``asyncio.gather``) are all
#: recorded before any of them is answered, so none is taken for one built from a sibling's answer.
_YIELDS = 3


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


@dataclass
class Estimate:
    """What a run would cost, per stage, with how every figure was reached.

    Attributes:
        method / judge / dataset: What the run is.
        units: Units still to judge (done units of a resumed run are left out); ``units_done`` those done.
        stages: One row per stage, in the order first used.
        tokenizer: How tokens were counted (``tokenizer_exact``: the model's own tokenizer).
        completion_basis: How completion tokens were estimated.
        reask_rate: The stated rate of re-asks added to each stage (0: the stand-ins' answers are all readable).
        assumptions: What the estimate assumed (capabilities not probed, stand-ins used).
        notes: The method's notes during the estimate (fallbacks it would take).
        priced: Whether a price table priced the rows.
        n_ctx: The judge's context size where it is known (the embedded judge's ``n_ctx``, an ``openai:`` judge's
            ``--judge-opt n_ctx=N``), else None.
        over_context: Units with a prompt that, with its ``max_tokens``, exceeds ``n_ctx`` (``sample / dimension
            (N prompt tokens)``): a run would fail them (issue 23), so they are named before any call.
    """

    method: str
    judge: str
    dataset: str
    units: int
    units_done: int
    stages: list[StageEstimate]
    tokenizer: str
    tokenizer_exact: bool
    completion_basis: str
    reask_rate: float = 0.0
    assumptions: list[str] = field(default_factory=list)
    notes: list[tuple[str, str]] = field(default_factory=list)
    priced: bool = False
    n_ctx: int | None = None
    over_context: list[str] = field(default_factory=list)

    def total(self) -> StageEstimate:
        """All stages summed."""
        out = StageEstimate("total")
        for s in self.stages:
            for name in ("calls", "cached_calls", "prompt_tokens", "completion_tokens", "completion_tokens_max",
                         "exact_calls"):
                setattr(out, name, getattr(out, name) + getattr(s, name))
        out.cost_usd = sum(s.cost_usd or 0.0 for s in self.stages) if self.priced else None
        return out

    @property
    def cost_usd(self) -> float | None:
        return self.total().cost_usd

    def to_dict(self) -> dict[str, Any]:
        """A plain dict (JSON-ready), rows with their ``exact`` flag."""
        rows = [s.__dict__ | {"exact": s.exact} for s in self.stages]
        return {k: v for k, v in self.__dict__.items() if k != "stages"} | {"stages": rows,
                                                                             "total": self.total().__dict__}


def call_cost(prices: PriceTable, model: str, prompt_tokens: int, completion_tokens: int, *,
              batch: bool = False) -> float:
    """The price of tokens; ``batch``: at the table's ``batch_discount``, which must then be given (a batch estimate
    priced in full would overstate the bill without saying so)."""
    if batch and prices.batch_discount is None:
        raise ConfigError("the price table has no batch discount (batch_discount: 0.5 for OpenAI's): "
                          "give it to estimate --batch")
    return prices.cost(model, prompt_tokens, completion_tokens, batch=batch)


# -- the counting judge -------------------------------------------------------------------------------------------


@dataclass
class _Scope:
    """One unit's (or the preparation's) state: its sample's texts, and the stage of the first stand-in answer
    its code read (None while it has read none)."""

    texts: tuple[str, ...] = ()
    after: str | None = None


_scope: ContextVar[_Scope | None] = ContextVar("assay_estimate_scope", default=None)


@contextmanager
def _scoped(texts: tuple[str, ...], after: str | None) -> Iterator[_Scope]:
    scope = _Scope(texts, after)
    token = _scope.set(scope)
    try:
        yield scope
    finally:
        _scope.reset(token)


class _NoCall(Judge):
    """The judge inside the counting judge: it is never called (the estimate answers before it)."""

    paid = False

    def __init__(self, identity: JudgeIdentity, logprobs: bool) -> None:
        self.identity, self.supports_logprobs = identity, logprobs

    async def generate(self, request: Request) -> Response:  # pragma: no cover - never reached
        raise AssertionError("an estimate never calls the judge")


class CountingJudge(ManagedJudge):
    """The one call path with the judge replaced: counts each request, answers with a stand-in.

    The run's cache (a resumed run) still answers what it holds, as real answers; a request identical to one
    already counted is counted as cached, since a real run's cache or single flight would serve it.
    A request is estimated when its unit's code had read a stand-in answer before building it, when it
    continues a conversation (a re-ask), or when it lists items a stand-in wrote (units of a decomposition
    shared across dimensions, which later dimensions read without a call).
    """

    def __init__(self, identity: JudgeIdentity, logprobs: bool, counter: TokenCounter,
                 cache: CallCache | None, standin: Callable[[Request, str], str | None] = lambda r, s: None) -> None:
        super().__init__(_NoCall(identity, logprobs), cache=cache)
        self.counter = counter
        self.standin = standin  # the method's own stand-in answers first (Method.standin)
        self.n_ctx: int | None = None
        self.over: list[int] = []  # prompt tokens of each call over n_ctx
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
        if self.n_ctx is not None and prompt_tokens + request.max_tokens > self.n_ctx:
            self.over.append(prompt_tokens)
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


# -- the judge's identity, capability and tokenizer, without a call ------------------------------------------------


async def judge_for_estimate(judge: str | Judge, options: dict[str, Any],
                       manifest: dict[str, Any] | None) -> tuple[JudgeIdentity, bool, TokenCounter, list[str]]:
    """The judge's identity (for cache keys), whether it gives log-probabilities, a token counter, assumptions.

    Nothing is loaded that would call a model: a ``llamacpp:`` model's vocabulary only (no weights), an
    OpenAI-compatible client that is never used.
    """
    assumptions: list[str] = []
    if isinstance(judge, Judge):
        return judge.identity, judge.supports_logprobs, judge_counter(judge), assumptions
    backend, model, _ = parse_spec(judge)
    if backend == "llamacpp":
        from assay.judges.llamacpp import gguf_counter, identity_of, resolve_model

        identity = identity_of(model, int(options.get("n_ctx", 4096)))
        return identity, True, gguf_counter(resolve_model(model)), assumptions
    bare = load_judge(judge, **options)
    try:
        identity, logprobs = bare.identity, bare.supports_logprobs
        if getattr(bare, "detect_logprobs", None) is not None and getattr(bare, "logprobs_reason", None) is None:
            recorded = manifest.get("judge_logprobs") if manifest and manifest.get("judge") == identity.model_dump(
                mode="json") else None
            logprobs = bool(recorded) if recorded is not None else True
            assumptions.append(
                f"log-probabilities {'as recorded by the run' if recorded is not None else 'assumed'}: "
                f"{str(logprobs).lower()} (not probed: an estimate makes no call; set --judge-opt logprobs=...)")
        counter = tiktoken_counter(identity.model) if backend == "openai" else approximate(
            f"no offline tokenizer known for {identity.label}")
    finally:
        await bare.aclose()  # it never opened a connection
    return identity, logprobs, counter, assumptions


def schema_for_estimate(judge: str | Judge, options: dict[str, Any], manifest: dict[str, Any] | None,
                        assumptions: list[str]) -> tuple[bool, str]:
    """Whether the judge would enforce JSON schemas, without a call: the embedded judge does, a Judge object says,
    an endpoint's answer is the judge option ``schema``, the resumed run's record, or assumed (said so)."""
    if isinstance(judge, Judge):
        return judge.supports_schema, judge.schema_reason or "the judge object says so"
    backend = parse_spec(judge)[0]
    if backend == "llamacpp":
        return True, "the embedded judge decodes under a grammar"
    if "schema" in options:
        return str(options["schema"]).lower() in ("1", "true", "yes", "on"), "set by the judge option schema"
    recorded = (manifest or {}).get("answer_format") or {}
    if recorded.get("judge_schema") is not None:
        return bool(recorded["judge_schema"]), "as recorded by the run"
    if backend != "openai":
        return False, f"the {backend} backend enforces no schema"
    assumptions.append("JSON-schema support assumed (not probed: an estimate makes no call; set --judge-opt "
                       "schema=... or --answer-format free)")
    return True, "assumed"


# -- the estimate --------------------------------------------------------------------------------------------------


async def estimate_run(plan: RunPlan, judge: str | Judge, *, judge_options: dict[str, Any] | None = None,
                       run_dir: str | Path | None = None, prices: PriceTable | None = None, reask_rate: float = 0.0,
                       batch: bool = False) -> Estimate:
    """Count what a run of ``plan`` (its method over its dataset x dimensions) with ``judge`` would send, without
    sending it.

    The method runs as a fresh instance with the same options, so that nothing built from stand-in answers
    (G-Eval's steps, SEAL's shared units) is left in ``meth`` for a real run to reuse.

    Args:
        run_dir: An existing run directory is read (never written): its done units are left out and its cached
            calls count as cached, as a resumed run would have them.
        prices: Price table (must price the judge's model).
        reask_rate: Re-asks per paid call to add to each stage (the stand-ins' answers are all readable, so the
            method itself re-asks nothing).
        batch: Price at the batch discount (see :func:`call_cost`).
        A run directory holding another run (another fingerprint) is refused, as the run itself would refuse it.
        The requests counted are those of the answer format the run would use (``plan.answer_format``; an
        endpoint's schema support is assumed, or taken from the run being resumed, not probed).
    """
    if not 0.0 <= reask_rate <= 10.0:
        raise ConfigError(f"the re-ask rate must be between 0 and 10 per call, not {reask_rate}")
    dataset, dims = plan.dataset, plan.dimensions
    # a fresh instance: nothing a stand-in wrote (steps, units) stays in the caller's
    meth = type(plan.method)(plan.method.options)
    store = _open_readonly(run_dir)
    try:
        manifest = store.manifest() if store is not None else None
        identity, logprobs, counter, assumptions = await judge_for_estimate(judge, judge_options or {}, manifest)
        if prices is not None:
            prices.check_covers(identity.model)
        if store is not None:
            plan.resume_as(manifest)
            store.check(plan.fingerprint(identity), before_prepare=True)
        counting = CountingJudge(identity, logprobs, counter, store.calls if store is not None else None,
                                 standin=meth.standin)
        counting.n_ctx = (identity.settings.get("n_ctx") if identity.backend == "llamacpp"
                          else (judge_options or {}).get("n_ctx", getattr(judge, "n_ctx", None)))
        over_context: list[str] = []
        notes: list[tuple[str, str]] = []
        fmt = choose(plan.answer_format, meth,
                     *schema_for_estimate(judge, judge_options or {}, manifest, assumptions))
        notes.append(("answer-format", f"{fmt.used}: {fmt.reason}"))
        ctx = RunContext(dataset=dataset, dimensions=dims, judge=counting, note=lambda k, m: notes.append((k, m)),
                         artifacts=lambda name, text: content_hash(text), answer_format=fmt.used)
        with _scoped((), None) as prep:
            await meth.prepare(ctx)
        done = store.done_units() if store is not None else set()
        units = order_units(dataset.samples, dims, done, by=meth.unit_order)
        for sample, dim in units:
            before = len(counting.over)
            with _scoped(_texts(sample), prep.after), attributed():
                await meth.score(sample, dim, ctx)
            if len(counting.over) > before:
                over_context.append(f"{sample.id} / {dim.name} ({max(counting.over[before:])} prompt tokens)")
    finally:
        if store is not None:
            store.close()
    rows = list(counting.rows.values()) + _reask_rows(counting.rows.values(), reask_rate, counter)
    if prices is not None:
        for row in rows:
            row.cost_usd = call_cost(prices, identity.model, row.prompt_tokens, row.completion_tokens, batch=batch)
    return Estimate(method=meth.name, judge=identity.label, dataset=dataset.name, units=len(units),
                    units_done=len(dataset.samples) * len(dims) - len(units), stages=rows,
                    tokenizer=counter.name, tokenizer_exact=counter.exact,
                    completion_basis="the stand-in answers' length (completion_tokens_max: the max_tokens bound)",
                    reask_rate=reask_rate, assumptions=assumptions, notes=notes, priced=prices is not None,
                    n_ctx=counting.n_ctx, over_context=over_context)


def _reask_rows(rows: Any, rate: float, counter: TokenCounter) -> list[StageEstimate]:
    """Re-asks at a stated rate per paid call, one row per stage. A re-ask repeats its call's prompt (the stage's
    mean) with the unusable answer quoted back (at most the call's ``max_tokens``, cut at :data:`ECHO_CHARS`) and
    the follow-up turn; its answer is the stage's mean."""
    follow_up = counter.text(reask_text("the answer is not in the format asked for")) + OPENAI_PER_MESSAGE
    out = []
    for row in list(rows):
        calls = round(row.calls * rate)
        if calls and row.calls:
            quoted = min(row.completion_tokens_max / row.calls, ECHO_CHARS / CHARS_PER_TOKEN)
            out.append(StageEstimate(
                f"{row.stage} (re-asks)", calls=calls,
                prompt_tokens=round((row.prompt_tokens / row.calls + quoted + follow_up) * calls),
                completion_tokens=round(row.completion_tokens / row.calls * calls),
                completion_tokens_max=round(row.completion_tokens_max / row.calls * calls),
                why=f"estimated: {rate:g} re-asks per call (stated rate), each quoting an answer of up to "
                    f"{quoted:.0f} tokens"))
    return out


def _texts(sample: Sample) -> tuple[str, ...]:
    """A sample's judged texts: what a stand-in decomposes, and where its units appear without being listed."""
    return tuple(t for t in (sample.source, sample.context, sample.reference, sample.output) if t)


def _open_readonly(run_dir: str | Path | None) -> RunStore | None:
    """The run directory's store for reading, if it holds one (an estimate creates nothing)."""
    if run_dir is None or not (Path(run_dir) / DB_NAME).exists():
        return None
    return RunStore(run_dir, readonly=True)
