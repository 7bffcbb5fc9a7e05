"""GER-Eval rubric application: each criterion of a rubric is scored with a short reasoning, as JSON.

The paper (section 3.3, appendix A.3) conditions the judge on the task description, the criterion
(name, description, scale), its scoring instruction and the candidate output, optionally with
demonstrations (rubric + demonstrations, "few-shot"), and asks for a reasoning and a score at
temperature 0 with at most 256 tokens. Answers are validated and re-asked up to three times.

Each criterion of the rubric is one unit dimension of the run (see :meth:`GerEval.dimensions`):
a human rubric (``human:<dataset>``) keeps the dataset's dimension names, so its judgments line up
with the human ratings; a generated rubric brings its own criterion names.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import Field

from assay.answers.fence import MATERIAL_NOTE, sample_blocks
from assay.answers.parsing import parse_rating
from assay.common.hashing import content_hash
from assay.datasets import Dataset
from assay.datasets.catalog import DatasetInfo
from assay.errors import ConfigError
from assay.judges.base import Request
from assay.methods.base import ArtifactKind, Method, MethodOptions, RunContext
from assay.methods.gereval.generate import RubricOptions, plan_rubric
from assay.methods.gereval.imported import GerEvalReader
from assay.methods.gereval.reprompt import DEFAULT_REASKS, ask_json
from assay.methods.gereval.rubric import (
    HUMAN_PREFIX,
    CategoricalScale,
    Criterion,
    Rubric,
    human_rubric,
    load_rubric,
    task_text,
)
from assay.types import Dimension, Judgment, Sample


class GerEvalOptions(MethodOptions):
    """Options of GER-Eval's rubric application.

    Attributes:
        rubric: A rubric file, ``human:<dataset>``, or ``human`` for the run dataset's human rubric.
        shots: Demonstrations per prompt (0: rubric only, the paper's zero-shot condition).
        seed: Seeds the choice of demonstrations.
        max_tokens: Length bound of the answer (the paper: 256).
        reasks: Re-asks after an invalid answer (the paper: three).
        max_chars: Cut each demonstration text to this many characters (None: never cut).
        strict_ratings: A fractional score on an integer scale is invalid (re-asked, finally a parse
            failure); by default it is read as given and flagged ``fractional`` in the trace.
    """

    rubric: str
    shots: int = Field(default=0, ge=0, le=20)
    seed: int = 0
    max_tokens: int = Field(default=256, ge=8)
    reasks: int = Field(default=DEFAULT_REASKS, ge=0, le=10)
    max_chars: int | None = Field(default=None, ge=100)
    strict_ratings: bool = False


@dataclass(frozen=True)
class ScoreAnswer:
    """A valid scoring answer: the number on the scale, the label it came from, the reasoning."""

    value: float
    label: str | None
    reasoning: str
    flags: tuple[str, ...] = ()


def validate_score(obj: Any, criterion: Criterion, *, strict: bool = False) -> ScoreAnswer:
    """Check a ``{"reasoning": ..., "score": ...}`` answer against the criterion's scale.

    Categorical scores must be one of the labels (mapped to 1..n); numeric scores must lie on the
    scale (``4``, ``"4"`` and ``"4/5"`` are read alike). A fraction inside an integer scale is read
    as given and flagged ``fractional`` (invalid with ``strict``). Anything else, off-scale values
    included, is invalid: re-asked, and finally a parse failure.

    Raises:
        ValueError: What is wrong, phrased for a re-ask.
    """
    if not isinstance(obj, dict):
        raise ValueError('expected an object {"reasoning": "...", "score": ...}')
    reasoning = obj.get("reasoning")
    if not isinstance(reasoning, str) or not reasoning.strip():
        raise ValueError('"reasoning" must be a short text explaining the score')
    if "score" not in obj:
        raise ValueError('the answer has no "score"')
    raw, scale = obj["score"], criterion.scale
    if isinstance(scale, CategoricalScale):
        if isinstance(raw, int) and not isinstance(raw, bool):
            raw = str(raw)  # a number written for a numeric label ("3" of HelpSteer2's "0".."4")
        value = scale.value_of(raw) if isinstance(raw, str) else None
        if value is None:
            raise ValueError(f'"score" must be one of the labels {", ".join(scale.labels)}; got {raw!r}')
        return ScoreAnswer(float(value), raw.strip(), reasoning.strip())
    target = scale.to_scale()
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        value = float(raw)
        if not target.low <= value <= target.high or (strict and not target.contains(value)):
            raise ValueError(f"score {raw!r} is not on the scale: {scale.describe()}")
        flags = ("fractional",) if target.integer and not value.is_integer() else ()
        return ScoreAnswer(value, None, reasoning.strip(), flags)
    if isinstance(raw, str):
        parsed = parse_rating(raw, target, strict=strict)
        if not parsed.ok:
            raise ValueError(f"score {raw!r}: {parsed.error}")
        return ScoreAnswer(float(parsed.value), None, reasoning.strip(), parsed.flags)
    raise ValueError(f'"score" must be {scale.describe()}; got {raw!r}')


def demonstration_order(samples: list[Sample], seed: int) -> list[Sample]:
    """The candidates for demonstrations in a seeded order, shared by every prompt of the run.

    One order for all prompts keeps the demonstrations identical wherever allowed, so that a
    prefix cache reuses them.
    """
    order = list(samples)
    random.Random(seed).shuffle(order)
    return order


def pick_demonstrations(order: list[Sample], judged: Sample, k: int, rating_field: str) -> list[Sample]:
    """The first ``k`` candidates rated on ``rating_field`` that are not the judged sample.

    Samples of the judged sample's source document are skipped too: another output for the same
    input, shown with its human rating, would leak how raters judged this very context.
    """
    picked = []
    for s in order:
        if len(picked) == k:
            break
        if s.id == judged.id or s.doc_id == judged.doc_id or rating_field not in s.human:
            continue
        picked.append(s)
    return picked


def demonstration_field(criterion: Criterion, info: DatasetInfo) -> str:
    """The human rating demonstrations show: the criterion's own when it is a rated dimension
    (human rubrics), else the dataset's reference rating (``contrast_field``, e.g. overall)."""
    return criterion.name if any(d.name == criterion.name for d in info.dimensions) else info.contrast_field


def _rating_text(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".")


def demonstrations_block(info: DatasetInfo, criterion: Criterion, demos: list[Sample], rating_field: str,
                         max_chars: int | None) -> str:
    """Human-rated examples for the few-shot condition (empty when there are none)."""
    if not demos:
        return ""
    try:
        scale = info.dimension(rating_field).scale.label()
    except ConfigError:
        scale = "scale unknown"
    own = rating_field == criterion.name
    head = (f"Examples of {info.output_name}s with the mean human rating of {rating_field} ({scale}):" if own else
            f"Examples of {info.output_name}s with the mean human rating of '{rating_field}' ({scale}); it is not a "
            f"rating on {criterion.name}, but shows how human raters judged each {info.output_name}:")
    lines = [head]
    for i, s in enumerate(demos, 1):
        shown = s.model_copy(update={"source": _cut(s.source, max_chars), "output": _cut(s.output, max_chars),
                                     "context": _cut(s.context, max_chars) if s.context else s.context})
        lines += ["", f"Example {i}:", sample_blocks(shown, info, labels=[criterion.name]),
                  f"Human rating of {rating_field}: {_rating_text(s.human[rating_field])}"]
    return "\n".join(lines)


def _cut(text: str, max_chars: int | None) -> str:
    if max_chars is None or len(text) <= max_chars:
        return text
    return text[:max_chars].rstrip() + " [...]"


def answer_format(criterion: Criterion) -> str:
    """The JSON shape the judge must answer in."""
    scale = criterion.scale
    if isinstance(scale, CategoricalScale):
        score = '"<one of: ' + ", ".join(scale.labels) + '>"'
    else:
        score = f"<{scale.describe().split(' (')[0]}>"
    return '{"reasoning": "...", "score": ' + score + "}"


def score_schema(criterion: Criterion) -> dict[str, Any]:
    """The JSON schema of a scoring answer: a bounded reasoning and a score written as the scale allows
    (a label, one of a small integer range, or a number), for backends that can enforce one."""
    scale = criterion.scale
    score: dict[str, Any]
    if isinstance(scale, CategoricalScale):
        score = {"enum": list(scale.labels)}
    elif scale.integer and scale.high - scale.low <= 20:
        score = {"enum": list(range(int(scale.low), int(scale.high) + 1))}
    else:
        score = {"type": "number"}
    return {"type": "object", "required": ["reasoning", "score"], "additionalProperties": False,
            "properties": {"reasoning": {"type": "string", "maxLength": 400}, "score": score}}


def build_scoring_prompt(task: str, info: DatasetInfo, criterion: Criterion, sample: Sample, demos: str) -> str:
    """The scoring prompt: task, criterion with scale and instruction, demonstrations, the fenced sample."""
    parts = [
        task.strip(), "",
        f"You will rate one {info.output_name} on one criterion of an evaluation rubric.", "",
        f"Criterion: {criterion.name}",
        f"Description: {criterion.description}",
        f"Scale: {criterion.scale.describe()}",
    ]
    if criterion.instruction:
        parts.append(f"Instruction: {criterion.instruction}")
    if demos:
        parts += ["", demos]
    parts += [
        "", MATERIAL_NOTE,
        "", f"The {info.output_name} to rate:", sample_blocks(sample, info, labels=[criterion.name]), "",
        f"Give a short reasoning (one or two sentences), then your score on {criterion.name}. "
        "Reply with one JSON object and nothing else, in this format:",
        answer_format(criterion),
    ]
    return "\n".join(parts)


class GerEval(Method):
    """GER-Eval: apply a rubric (generated by a judge, or the dataset's human one), zero- or few-shot."""

    name = "gereval"
    sequential_calls = False
    Reader = GerEvalReader
    builds: ClassVar[dict[str, ArtifactKind]] = {"rubric": ArtifactKind(RubricOptions, plan_rubric)}
    Options = GerEvalOptions
    options: GerEvalOptions
    unit_order = "dimension"  # the criterion and its demonstrations precede the sample
    #: GER-Eval's answers are JSON in every answer format (the paper's); ``json`` adds the criterion's schema.
    schema_stages = ("score",)

    def answer_schema(self, stage: str, dimension: Dimension | None = None, **shape: Any) -> dict | None:
        """The criterion's answer (``shape``: ``criterion``): reasoning first, then its label or score
        (:func:`score_schema`)."""
        return score_schema(shape["criterion"]) if stage == "score" and "criterion" in shape else None

    def __init__(self, options: Any = None) -> None:
        super().__init__(options)
        self._rubric: Rubric | None = None
        self._order: list[Sample] = []
        self._task = ""

    def rubric(self, dataset: Dataset) -> Rubric:
        """The rubric named by the options (``human`` means the run dataset's), loaded once."""
        if self._rubric is None:
            spec = self.options.rubric
            rubric = human_rubric(dataset.info) if spec == "human" else load_rubric(spec)
            if not rubric.criteria:
                raise ConfigError(f"rubric {spec} has no criteria (its generation answers were all discarded; "
                                  "see provenance.discarded in the file)")
            self._rubric = rubric
        return self._rubric

    def dimensions(self, dataset: Dataset) -> list[Dimension] | None:
        """The rubric's criteria, each judged as one dimension (categorical labels as 1..n)."""
        return self.rubric(dataset).dimensions()

    async def prepare(self, ctx: RunContext) -> dict[str, Any]:
        rubric = self.rubric(ctx.dataset)
        task = task_text(ctx.dataset.info)
        self._task = task.scoring
        if not task.shipped:
            ctx.note("task", f"no GER-Eval scoring description shipped for {ctx.dataset.name!r}: using its task text")
        if rubric.dataset != ctx.dataset.name:
            ctx.note("rubric", f"rubric {rubric.label} was written for {rubric.dataset}, applied to {ctx.dataset.name}")
        # demonstrations come from the whole file, not only from the samples selected for this run
        self._order = demonstration_order(ctx.dataset.all_samples, self.options.seed) if self.options.shots else []
        mappings = {c.name: c.scale.mapping() for c in rubric.criteria if isinstance(c.scale, CategoricalScale)}
        return {"rubric": {
            "spec": self.options.rubric, "label": rubric.label, "source": rubric.provenance.source,
            "criteria_sha256": rubric.content_hash(), "file_sha256": ctx.artifacts("rubric", rubric.to_json()),
            "judge": rubric.provenance.judge, "condition": rubric.provenance.condition,
            "criteria": [c.name for c in rubric.criteria], "categorical_mappings": mappings},
            "task_sha256": content_hash(self._task),
            "conditions": {"shots": self.options.shots, "temperature": 0.0, "max_tokens": self.options.max_tokens}}

    async def score(self, sample: Sample, dimension: Dimension, ctx: RunContext) -> Judgment:
        rubric = self.rubric(ctx.dataset)
        criterion = rubric.criterion(dimension.name)
        info = ctx.dataset.info
        rating_field = demonstration_field(criterion, info)
        demos = (pick_demonstrations(self._order, sample, self.options.shots, rating_field)
                 if self.options.shots else [])
        if len(demos) < self.options.shots:
            ctx.note("few-shot", f"only {len(demos)} of {self.options.shots} demonstrations available for some "
                                 f"samples (the judged sample and its source document are never shown)")
        shown = demonstrations_block(info, criterion, demos, rating_field, self.options.max_chars)
        prompt = build_scoring_prompt(self._task or task_text(info).scoring, info, criterion, sample, shown)
        request = Request.chat(prompt, temperature=0.0, max_tokens=self.options.max_tokens, json_mode=True,
                               json_schema=self.schema_text(ctx, "score", criterion=criterion))
        strict = self.options.strict_ratings
        asked = await ask_json(ctx.judge, request, lambda o: validate_score(o, criterion, strict=strict), stage="score",
                               reasks=self.options.reasks)
        trace: dict[str, Any] = {
            "criterion": criterion.name, "rubric": rubric.content_hash(), "prompt_sha256": content_hash(prompt),
            "answer_format": ctx.answer_format,
            "attempts": asked.trace(), "reasks": asked.reasks,
            "shots": self.options.shots,
            "demonstrations": [{"sample_id": s.id, "field": rating_field, "rating": s.human[rating_field]}
                               for s in demos],
        }
        if isinstance(criterion.scale, CategoricalScale):
            trace["mapping"] = criterion.scale.mapping()
        if asked.value is None:
            return self.judgment(sample, dimension, ctx, score=None, trace=trace,
                                 error=f"parse failure after {asked.reasks} re-asks: {asked.error}")
        trace.update(reasoning=asked.value.reasoning, label=asked.value.label)
        if asked.value.flags:
            trace["flags"] = list(asked.value.flags)
        return self.judgment(sample, dimension, ctx, score=asked.value.value, trace=trace)


__all__ = ["HUMAN_PREFIX", "GerEval", "GerEvalOptions", "build_scoring_prompt", "pick_demonstrations",
           "validate_score"]
