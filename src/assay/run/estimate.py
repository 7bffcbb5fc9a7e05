"""The bill before the run: calls and tokens per method stage, counted by running the method against a stand-in.

The method's own code runs unchanged against the counting judge (:mod:`assay.run.counting`, which a live run's
context check shares): its requests are counted with the model's tokenizer (:mod:`assay.judges.tokens`) and answered
with structural stand-ins, so later stages' requests are built by the method itself and counted. A request built
before any stand-in answer was read (in its unit, or during preparation) is *exact*; one built after is *estimated*.
Calls the run's cache already holds (a resumed run) are answered from it and counted as cached. Nothing is written:
a run directory is only read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.common.hashing import content_hash
from assay.errors import ConfigError
from assay.judges import Judge, JudgeIdentity, PriceTable, load_judge, parse_spec
from assay.judges.ask import ECHO_CHARS, reask_text
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
from assay.run.counting import CountingJudge, StageEstimate, count_units, worst_by_unit
from assay.run.executor import order_units
from assay.run.session import RunPlan
from assay.run.store import DB_NAME, RunStore

__all__ = ["CountingJudge", "Estimate", "StageEstimate", "call_cost", "estimate_run"]


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
        n_ctx: The judge's context size where it is known without a call (the embedded judge's ``n_ctx``, an
            ``openai:`` judge's ``--judge-opt n_ctx=N``, or the size a resumed run recorded, e.g. from a llama.cpp
            server's ``/props``), else None.
        over_context: Units with a prompt that, with its ``max_tokens``, exceeds ``n_ctx`` (``sample / dimension
            (N prompt tokens + M to generate > n_ctx)``), named before any call, as a live run names them before
            judging (:func:`assay.run.counting.find_over_context`).
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


def recorded_context(manifest: dict[str, Any] | None, identity: JudgeIdentity, assumptions: list[str]) -> int | None:
    """The context size a run of the same judge recorded (``judge_context``), said in the assumptions; else None."""
    if not manifest or manifest.get("judge") != identity.model_dump(mode="json"):
        return None
    recorded = manifest.get("judge_context") or {}
    if not recorded.get("n_ctx"):
        return None
    assumptions.append(f"context size {recorded['n_ctx']} tokens as recorded by the run ({recorded.get('source')})")
    return int(recorded["n_ctx"])


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
        if counting.n_ctx is None:  # a resumed run's, as its detection found it (a llama.cpp server's /props)
            counting.n_ctx = recorded_context(manifest, identity, assumptions)
        notes: list[tuple[str, str]] = []
        fmt = choose(plan.answer_format, meth,
                     *schema_for_estimate(judge, judge_options or {}, manifest, assumptions))
        notes.append(("answer-format", f"{fmt.used}: {fmt.reason}"))
        ctx = RunContext(dataset=dataset, dimensions=dims, judge=counting, note=lambda k, m: notes.append((k, m)),
                         artifacts=lambda name, text: content_hash(text), answer_format=fmt.used)
        done = store.done_units() if store is not None else set()
        units = order_units(dataset.samples, dims, done, by=meth.unit_order)
        await count_units(meth, units, ctx, counting)  # the same counting as a live run's context check
        over_context = [o.label() for o in worst_by_unit(counting.over).values()]
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


def _open_readonly(run_dir: str | Path | None) -> RunStore | None:
    """The run directory's store for reading, if it holds one (an estimate creates nothing)."""
    if run_dir is None or not (Path(run_dir) / DB_NAME).exists():
        return None
    return RunStore(run_dir, readonly=True)
