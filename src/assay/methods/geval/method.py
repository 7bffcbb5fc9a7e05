"""G-Eval (Liu et al. 2023): auto chain-of-thought evaluation steps, a form to fill, probability-weighted scores.

The method has three parts (paper, section 2), each in pure functions of this package:

1. A prompt with the task introduction and the dimension's evaluation criteria
   (:func:`assay.methods.geval.prompts.task_criteria`, shipped in ``assay/methods/geval/criteria.yaml`` for SummEval,
   Topical-Chat and QAGS, otherwise built from the dataset's dimension definition).
2. Evaluation steps the judge writes itself from that introduction and criteria
   (:mod:`assay.methods.geval.steps`), generated once per (task, dimension,
   judge) in :meth:`GEval.prepare` and kept as an artifact a user can edit and pass back.
3. The scoring prompt (:func:`assay.methods.geval.prompts.build_prompt`: introduction, criteria, steps, input, output,
   "Evaluation Form (scores ONLY)") and the scoring function of
   :mod:`assay.methods.geval.scoring`: ``sum p(s) * s`` from top-k log-probabilities, or from
   n samples where the judge gives no log-probabilities, or the greedy rating (the '- Probs'
   ablation); ``no_cot`` drops the steps (the '- CoT' ablation).

The dimension's criteria and steps come before the source in the prompt (the paper's layout),
so the method asks the executor for dimension-major order: consecutive prompts then share
everything up to the output being judged.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from assay.answers.parsing import Parsed, parse_json_rating, parse_rating
from assay.common.hashing import content_hash
from assay.datasets import Dataset
from assay.errors import ConfigError
from assay.judges.ask import ask
from assay.judges.base import Request, Response
from assay.judges.middleware import ManagedJudge
from assay.methods.base import ArtifactKind, Method, MethodOptions, RunContext
from assay.methods.geval.imported import GEvalReader
from assay.methods.geval.paper import (
    PaperPrompt,
    build_paper_prompt,
    check_samples,
    paper_dimension,
    paper_prompt,
)
from assay.methods.geval.prompts import Criteria, build_prompt, form_label, task_criteria
from assay.methods.geval.scoring import Estimate, greedy_estimate, logprob_estimate, sampling_estimate
from assay.methods.geval.steps import (
    TYPICAL_STEPS,
    StepsOptions,
    generate_steps,
    load_steps_document,
    plan_steps,
    steps_document,
)
from assay.methods.presets import apply_preset
from assay.types import Dimension, Judgment, Sample

MAX_TOP_LOGPROBS = 20  # the most any supported backend returns (OpenAI's limit; Request enforces it)
TOP_UP_ROUNDS = 3  # rounds of requests asking again for sampled answers a server left out (it capped n)

Mode = Literal["logprobs", "sampling", "greedy"]

# Named sets of options: ``paper`` is G-Eval's GPT-4 setting (section 3.1: n=20, temperature 1, top_p 1)
# on the released prompts.
PRESETS: dict[str, dict[str, Any]] = {
    "paper": {"criteria": "paper", "mode": "sampling", "n": 20, "temperature": 1.0, "top_p": 1.0},
}


class GEvalOptions(MethodOptions):
    """Options of G-Eval.

    Attributes:
        mode: ``logprobs`` (equation 1 from the top-k log-probabilities at the rating),
            ``sampling`` (p(s) from n sampled answers, the paper's GPT-4 setting) or ``greedy``
            (one answer at temperature 0: the '- Probs' ablation). Default: ``logprobs`` where
            the judge gives log-probabilities, else ``sampling``. Asking for ``logprobs`` from a
            judge without them falls back to ``sampling``, recorded in the notes and traces.
        n: Answers sampled per judgment in ``sampling`` mode (paper: 20).
        temperature: Sampling temperature in ``sampling`` mode (paper: 1).
        top_p: Nucleus mass in ``sampling`` mode (paper: 1).
        top_logprobs: Alternatives read at the rating position in ``logprobs`` mode; capped at
            the backends' maximum of 20 (the cap is noted).
        no_cot: Score without evaluation steps (the paper's '- CoT' ablation).
        steps: A steps file (from ``assay geval steps``, possibly edited) to use instead of
            generating steps.
        max_tokens: Room for the answer; the form asks for the score only, so a few tokens do.
        steps_max_tokens: Room for the judge to write its evaluation steps.
        strict_ratings: A fractional rating on an integer scale is a parse failure (default: read as
            given and flagged ``fractional`` in the trace).
        criteria: ``assay`` (assay's own wording, generated steps) or ``paper``: the released G-Eval
            prompts as they are, with their steps, scales and texts shown (SummEval, Topical-Chat).
        preset: ``paper``: the released prompts and the paper's sampling (n=20, temperature 1,
            top_p 1); an option given with another value than the preset's is an error.
    """

    mode: Mode | None = None
    n: int = Field(default=20, ge=1)
    temperature: float = Field(default=1.0, ge=0.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    top_logprobs: int = Field(default=20, ge=1)
    no_cot: bool = False
    steps: str | None = None
    max_tokens: int = Field(default=8, ge=1)
    steps_max_tokens: int = Field(default=256, ge=16)
    strict_ratings: bool = False
    criteria: Literal["assay", "paper"] = "assay"
    preset: Literal["paper"] | None = None

    @model_validator(mode="before")
    @classmethod
    def _preset(cls, values: Any) -> Any:
        return apply_preset(values, PRESETS, "geval")

    @model_validator(mode="after")
    def _coherent(self) -> GEvalOptions:
        if self.no_cot and self.steps:
            raise ValueError("no_cot and steps exclude each other: --no-cot scores without any steps")
        if self.criteria == "paper" and (self.no_cot or self.steps):
            raise ValueError("--criteria paper uses the released prompts with their own steps: "
                             "--no-cot and --steps do not apply")
        return self


# -- criteria -----------------------------------------------------------------------------------


# -- scoring ------------------------------------------------------------------------------------


def resolve_mode(requested: Mode | None, judge_logprobs: bool, dimensions: list[Dimension]) -> tuple[Mode, str | None]:
    """The scoring mode a run uses, and a note when it is not the one asked for.

    Raises:
        ConfigError: ``logprobs`` asked for a dimension with a continuous scale (no rating tokens).
    """
    continuous = [d.name for d in dimensions if not d.scale.integer]
    if requested == "logprobs" and judge_logprobs and continuous:
        raise ConfigError(f"geval --mode logprobs needs integer scales; {', '.join(continuous)} is continuous. "
                          "Use --mode sampling.")
    if requested == "logprobs" and not judge_logprobs:
        return "sampling", ("geval: the judge gives no log-probabilities, so --mode logprobs was replaced by "
                            "sampling (p(s) estimated from n sampled answers, the paper's GPT-4 setting)")
    if requested is None and judge_logprobs and continuous:
        return "sampling", (f"geval: {', '.join(continuous)} has a continuous scale without rating tokens, so the "
                            "default logprobs mode was replaced by sampling")
    if requested is None:
        return ("logprobs" if judge_logprobs else "sampling"), None
    return requested, None


def score_schema(dimension: Dimension) -> dict[str, Any]:
    """G-Eval's form as JSON: ``{"score": rating}``, nothing else (the form asks for scores only, and the
    reasoning is the evaluation steps in the prompt); an integer scale's ratings are enumerated, so that under a
    grammar the rating position allows the scale's tokens only."""
    scale = dimension.scale
    score: dict[str, Any] = ({"type": "integer", "enum": scale.values()} if scale.integer
                             else {"type": "number", "minimum": scale.low, "maximum": scale.high})
    return {"type": "object", "properties": {"score": score}, "required": ["score"], "additionalProperties": False}


#: Tokens added to ``max_tokens`` for the JSON around the rating (``{"score": 4}``).
JSON_ROOM = 8


def score_request(prompt: str, mode: Mode, options: GEvalOptions, top_logprobs: int,
                  schema: str | None = None) -> Request:
    """The one scoring call of a judgment, with the decoding settings of its mode (and the form's schema, if any)."""
    room = options.max_tokens + (JSON_ROOM if schema else 0)
    if mode == "logprobs":
        return Request.chat(prompt, temperature=0.0, max_tokens=room, top_logprobs=top_logprobs, json_schema=schema)
    if mode == "sampling":
        return Request.chat(prompt, temperature=options.temperature, top_p=options.top_p, n=options.n,
                            max_tokens=room, json_schema=schema)
    return Request.chat(prompt, temperature=0.0, max_tokens=room, json_schema=schema)


def top_up_requests(request: Request, got: int, per_call: int, next_index: int) -> list[Request]:
    """The requests that ask again for the sampled answers a server did not return.

    A server that caps ``n`` (many return one choice whatever is asked) answered ``per_call``
    choices; the missing ``request.n - got`` are asked for in requests of at most that many, each
    with its own ``sample_index`` (from ``next_index``) so that the call cache keeps them apart.
    """
    missing = request.n - got
    per_call = max(1, min(per_call, missing))
    sizes = [per_call] * (missing // per_call) + ([missing % per_call] if missing % per_call else [])
    return [request.model_copy(update={"n": k, "sample_index": next_index + i}) for i, k in enumerate(sizes)]


def read_answer(response: Response, mode: Mode, dimension: Dimension, *, prompt: str | None = None,
                strict: bool = False, json: bool = False) -> tuple[Estimate, dict[str, Any]]:
    """Turn the judge's answer into G-Eval's estimate and the trace of how it was read.

    Only the judge's own answer counts: with ``prompt``, whatever echoes the prompt or the judged
    texts is not read (text answers and the rating token's position alike). With ``json`` (the answer was
    decoded under :func:`score_schema`), text answers are read by the JSON reader; the rating token's
    position is found as in a free answer (the first rating piece: ``4`` in ``{"score": 4}``).
    """
    scale, label = dimension.scale, dimension.name.replace("_", " ")

    def rate(text: str) -> Parsed:
        if json:
            return parse_json_rating(text, scale, prompt=prompt, strict=strict)
        return parse_rating(text, scale, label, prompt=prompt, strict=strict)

    if mode == "logprobs":
        choice = response.choices[0]
        est = logprob_estimate(choice.logprobs, scale, form_label(dimension), prompt=prompt)
        return est, {"answer": choice.text, **est.details}
    if mode == "sampling":
        samples = [rate(c.text) for c in response.choices]
        est = sampling_estimate(samples)
        flags = {"fractional": sum("fractional" in p.flags for p in samples)}
        return est, {"answers": [c.text for c in response.choices], "ratings": [p.value for p in samples],
                     **est.details, **({"flags": flags} if flags["fractional"] else {})}
    parsed = rate(response.choices[0].text)
    return greedy_estimate(parsed), {"answer": response.choices[0].text, "parse_error": parsed.error,
                                     **({"flags": list(parsed.flags)} if parsed.flags else {})}


@dataclass(frozen=True)
class DimensionPlan:
    """What a dimension is scored with: its criteria, its steps (or None) and their provenance.

    With ``criteria: paper``, ``paper`` holds the released prompt (its steps are ``steps``) and
    ``criteria`` only names its source and hash.
    """

    criteria: Criteria
    steps: str | None
    record: dict[str, Any]
    paper: PaperPrompt | None = None

    @property
    def steps_sha256(self) -> str | None:
        return content_hash(self.steps) if self.steps else None


class GEval(Method):
    """G-Eval: form-filling with auto-CoT evaluation steps and probability-weighted scores."""

    name = "geval"
    sequential_calls = False  # a sampling top-up (a server capping n) asks again, rarely
    Reader = GEvalReader
    builds: ClassVar[dict[str, ArtifactKind]] = {"geval-steps": ArtifactKind(StepsOptions, plan_steps)}
    Options = GEvalOptions
    options: GEvalOptions
    unit_order = "dimension"  # criteria and steps precede the source: same dimension, same source in a row

    @property
    def reads_logprobs(self) -> bool:
        """Logprobs mode, asked for or the default (sampling where the judge has none, decided by the probe)."""
        return self.options.mode in (None, "logprobs")

    def __init__(self, options: GEvalOptions | dict[str, Any] | None = None) -> None:
        super().__init__(options)
        self.top_logprobs = min(self.options.top_logprobs, MAX_TOP_LOGPROBS)
        self.mode: Mode | None = None
        self.fallback: str | None = None
        self.plans: dict[str, DimensionPlan] = {}
        self._lock: asyncio.Lock | None = None
        #: Steps calls started by :meth:`prefetch`, per dimension, until :meth:`_plan` takes them.
        self._early: dict[str, asyncio.Task[tuple[dict[str, Any] | None, str | None]]] = {}

    schema_stages = ("score",)

    def answer_schema(self, stage: str, dimension: Dimension | None = None, **shape: Any) -> dict | None:
        """``{"score": rating}`` for the score stage (:func:`score_schema`); the steps stay free text."""
        return score_schema(dimension) if stage == "score" and dimension is not None else None

    def free_text_reason(self) -> str | None:
        """The paper preset and the released prompts (``criteria: paper``) keep the paper's free-text form."""
        if self.options.preset == "paper" or self.options.criteria == "paper":
            return "geval with the paper's preset or released prompts keeps the paper's free-text form"
        return None

    def settings(self) -> dict[str, Any]:
        """Options plus what prepare decided (mode used, steps hashes), so a resumed run must match."""
        out = super().settings()
        if self.mode is not None:
            out["mode_used"] = self.mode
            out["top_logprobs_used"] = self.top_logprobs
            out["steps_sha256"] = {name: p.steps_sha256 for name, p in sorted(self.plans.items())}
        return out

    @classmethod
    def sampled(cls, settings: dict[str, Any]) -> bool:
        """Only the sampling mode samples (the mode used: a logprobs run on a judge without them fell back)."""
        return settings.get("mode_used") == "sampling" and float(settings.get("temperature") or 0) > 0

    def standin(self, request: Request, stage: str) -> str | None:
        """Evaluation steps of a typical length for the steps stage (score prompts then carry them)."""
        return TYPICAL_STEPS if stage == "steps" else None

    async def prepare(self, ctx: RunContext) -> dict[str, Any]:
        """Choose the mode and get each dimension's steps (generated once, or from ``--steps``)."""
        self.mode, self.fallback = resolve_mode(self.options.mode, ctx.judge.supports_logprobs, ctx.dimensions)
        if self.fallback:
            ctx.note("fallback", self.fallback)
        if self.mode == "logprobs" and self.options.top_logprobs > MAX_TOP_LOGPROBS:
            ctx.note("capped", f"geval: top_logprobs {self.options.top_logprobs} capped at the backends' "
                               f"maximum of {MAX_TOP_LOGPROBS}")
        entries = self._steps_file(ctx) if self.options.steps else None
        plans = await asyncio.gather(*(self._plan(d, ctx, entries) for d in ctx.dimensions))
        self.plans.update({d.name: p for d, p in zip(ctx.dimensions, plans, strict=True)})
        return {"mode": self.mode, "mode_requested": self.options.mode, "fallback": self.fallback,
                "top_logprobs": self.top_logprobs if self.mode == "logprobs" else None,
                "dimensions": {name: p.record for name, p in self.plans.items()}}

    def prefetch(self, judge: ManagedJudge, dataset: Dataset, dimensions: list[Dimension]) -> list[asyncio.Task[Any]]:
        """Start generating each dimension's steps: their prompt and decoding depend on no probe's answer."""
        if self.options.criteria == "paper" or self.options.no_cot or self.options.steps:
            return []
        self._early = {d.name: asyncio.ensure_future(
            generate_steps(judge, dataset.info, d, max_tokens=self.options.steps_max_tokens)) for d in dimensions}
        return list(self._early.values())

    def _steps_file(self, ctx: RunContext) -> dict[str, dict[str, Any]]:
        path = Path(str(self.options.steps)).expanduser()
        if not path.is_file():
            raise ConfigError(f"geval --steps {path}: no such file (write one with `assay geval steps`)")
        dataset, entries = load_steps_document(path.read_text(encoding="utf-8"), str(path))
        if dataset and dataset != ctx.dataset.name:
            ctx.note("steps", f"geval: {path} was written for dataset {dataset!r}, used on {ctx.dataset.name!r}")
        return entries

    async def _plan(self, dimension: Dimension, ctx: RunContext,
                    entries: dict[str, dict[str, Any]] | None) -> DimensionPlan:
        """One dimension's criteria and steps, with the manifest record of where the steps came from."""
        info = ctx.dataset.info
        if self.options.criteria == "paper":
            return self._paper_plan(dimension, ctx)
        criteria = task_criteria(info, dimension)
        record: dict[str, Any] = {"criteria_source": criteria.source, "criteria_sha256": criteria.digest()}
        if self.options.no_cot:
            return DimensionPlan(criteria, None, record | {"steps": None, "steps_source": "none (no_cot)"})
        if entries is not None:
            entry = entries.get(dimension.name)
            if entry is None:
                raise ConfigError(f"geval --steps {self.options.steps}: no steps for dimension {dimension.name!r} "
                                  f"(it has {', '.join(entries) or 'none'})")
            if entry.get("scale") not in (None, dimension.scale.label()):
                ctx.note("steps", f"geval: steps for {dimension.name} were written for the {entry['scale']} scale, "
                                  f"the dimension's is {dimension.scale.label()}")
            source = f"file:{self.options.steps}"
        else:
            ctx.status(f"G-Eval: the judge writes the evaluation steps for {dimension.name}")
            early = self._early.pop(dimension.name, None)  # cancelled: left by an earlier run of this instance
            entry, error = await (early if early is not None and not early.cancelled() else
                                  generate_steps(ctx.judge, info, dimension, max_tokens=self.options.steps_max_tokens))
            if entry is None:
                msg = (f"geval: the judge wrote no usable evaluation steps for {dimension.name} ({error}); "
                       f"{dimension.name} is scored without steps, as with --no-cot")
                ctx.note("fallback", msg)
                return DimensionPlan(criteria, None, record | {"steps": None, "steps_source": "none (failed)",
                                                               "fallback": msg})
            source = "generated"
        name = f"geval/steps/{ctx.dataset.name}/{dimension.name}"
        artifact_sha = ctx.artifacts(name, steps_document(ctx.dataset.name, {dimension.name: entry}))
        written_by = entry.get("written_by")
        record |= {"steps_sha256": content_hash(entry["steps"]), "steps_source": source, "artifact": name,
                   "artifact_sha256": artifact_sha, "edited": bool(entry.get("edited", False)),
                   "written_by": written_by.get("model") if isinstance(written_by, dict) else written_by}
        return DimensionPlan(criteria, entry["steps"], record)

    def _paper_plan(self, dimension: Dimension, ctx: RunContext) -> DimensionPlan:
        """The released prompt of the dimension: its own steps (no steps call) and its own scale."""
        pp = paper_prompt(ctx.dataset.info, dimension.name)
        check_samples(ctx.dataset.samples, ctx.dataset.info, pp)
        record: dict[str, Any] = {
            "criteria_source": pp.source, "criteria_sha256": pp.digest(), "file_sha256": pp.file_sha256,
            "steps_source": "paper" if pp.steps else "none (the released prompt has none)",
            "steps_sha256": content_hash(pp.steps) if pp.steps else None,
            "scale": pp.scale.label(), "dataset_scale": dimension.scale.label()}
        if pp.scale != dimension.scale:
            ctx.note("scale", f"geval --criteria paper: {dimension.name} is rated on the released prompt's "
                              f"{pp.scale.label()} scale (the dataset's is {dimension.scale.label()}); its scores "
                              f"are on {pp.scale.label()}")
        criteria = Criteria("", pp.template, pp.source)
        return DimensionPlan(criteria, pp.steps, record, paper=pp)

    async def _ensure(self, dimension: Dimension, ctx: RunContext) -> DimensionPlan:
        """The dimension's plan; prepares on first use when a caller skipped :meth:`prepare`."""
        if self.mode is not None and dimension.name in self.plans:
            return self.plans[dimension.name]
        self._lock = self._lock or asyncio.Lock()
        async with self._lock:
            if self.mode is None:
                await self.prepare(ctx)
            if dimension.name not in self.plans:
                self.plans[dimension.name] = await self._plan(dimension, ctx, None)
        return self.plans[dimension.name]

    async def _top_up(self, request: Request, response: Response, ctx: RunContext) -> tuple[Response, dict[str, Any]]:
        """Ask again for the sampled answers a server left out (it capped ``n``), in at most
        ``TOP_UP_ROUNDS`` rounds; the trace says how many were asked, received, and whether ``n`` was reached.

        Returns:
            The response with all choices received, and the trace fields of the top-up.
        """
        choices = list(response.choices)
        per_call, next_index, extra = max(1, len(choices)), request.sample_index + 1, 0
        for _ in range(TOP_UP_ROUNDS):
            more = top_up_requests(request, len(choices), per_call, next_index)
            if not more:
                break
            next_index, extra = next_index + len(more), extra + len(more)
            answers = [a.response for a in await asyncio.gather(*(ask(ctx.judge, r, stage="score") for r in more))]
            for answer in answers:
                choices += answer.choices
                per_call = max(per_call, len(answer.choices))
        trace: dict[str, Any] = {"samples_requested": request.n, "samples_received": min(len(choices), request.n),
                                 "top_up_requests": extra}
        if len(choices) < request.n:
            trace["samples_short"] = (f"the judge returned {len(choices)} of the {request.n} sampled answers asked "
                                      f"for, after {extra} extra requests; the estimate uses {len(choices)}")
            ctx.note("sampling", f"geval: the judge returned fewer than n={request.n} sampled answers for some "
                                 "judgments even after asking again; their traces say how many (samples_short)")
        return response.model_copy(update={"choices": choices[:request.n]}), trace

    async def score(self, sample: Sample, dimension: Dimension, ctx: RunContext) -> Judgment:
        plan = await self._ensure(dimension, ctx)
        assert self.mode is not None
        if plan.paper is not None:
            rated = paper_dimension(dimension, plan.paper)
            prompt = build_paper_prompt(sample, ctx.dataset.info, plan.paper, [form_label(dimension), dimension.name])
        else:
            rated = dimension
            prompt = build_prompt(sample, dimension, ctx.dataset.info, plan.criteria, plan.steps)
        schema = self.schema_text(ctx, "score", rated)
        request = score_request(prompt, self.mode, self.options, self.top_logprobs, schema)
        asked = await ask(ctx.judge, request, stage="score")
        response = asked.response  # read below, with any top-up
        sampled: dict[str, Any] = {}
        if self.mode == "sampling" and len(response.choices) < request.n:
            response, sampled = await self._top_up(request, response, ctx)
        estimate, read = read_answer(response, self.mode, rated, prompt=prompt,
                                     strict=self.options.strict_ratings, json=schema is not None)
        trace: dict[str, Any] = {
            "mode": self.mode, "answer_format": ctx.answer_format,
            "steps_sha256": plan.steps_sha256, "criteria_source": plan.criteria.source,
            "prompt_sha256": asked.calls[0].prompt_sha256,  # the prompt's hash, taken once by ask
            "distribution": {str(k): round(v, 6) for k, v in estimate.distribution.items()}, **read, **sampled}
        if self.fallback:
            trace |= {"mode_requested": self.options.mode, "fallback": self.fallback}
        if plan.paper is not None:
            trace["scale"] = rated.scale.label()
        if plan.record.get("fallback"):
            trace["steps_fallback"] = plan.record["fallback"]
        return self.judgment(sample, dimension, ctx, score=estimate.score, trace=trace, error=estimate.error)
