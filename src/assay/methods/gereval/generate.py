"""GER-Eval rubric generation: a judge writes criteria for a task, then a scoring instruction for each.

Three prompting conditions (section 3.4.2 of the paper): the task description only; the task plus
``k`` representative input contexts; the task plus contrastive examples, each context with one
output human raters rated high and one they rated low (the rating is the dataset's
``contrast_field``). Settings follow appendix A.3.1: temperature 0.7 with nucleus sampling and at
most 512 generated tokens; every JSON answer is validated and re-asked up to three times with the
validation error, then discarded on record.

Prompt builders, example selection and answer validation are pure functions; only
:func:`generate_rubric` talks to the judge.
"""

from __future__ import annotations

import asyncio
import random
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from assay.answers.fence import MATERIAL_NOTE, fence
from assay.common.hashing import content_hash
from assay.datasets import Dataset
from assay.datasets.catalog import DatasetInfo
from assay.errors import ConfigError
from assay.judges.ask import Asked
from assay.judges.base import Request, schema_text
from assay.judges.middleware import ManagedJudge
from assay.methods.base import Build, Built
from assay.methods.gereval.reprompt import DEFAULT_REASKS, ask_json
from assay.methods.gereval.rubric import (
    CategoricalScale,
    Criterion,
    NumericScale,
    Provenance,
    Rubric,
    TaskText,
    task_text,
)
from assay.types import Sample

Condition = Literal["task", "contexts", "contrastive"]


class GenerationSettings(BaseModel):
    """Everything that changes a generated rubric; recorded in its provenance.

    Attributes:
        condition: ``task``, ``contexts`` or ``contrastive``.
        k: Contexts shown (contexts and contrastive conditions; the paper: three).
        seed: Seeds the choice of contexts and the judge's sampling.
        temperature: Sampling temperature for both steps (the paper: 0.7).
        top_p: Nucleus mass. The paper names nucleus sampling but its value is not legible in our
            copy; 0.95 is assay's choice.
        max_tokens: Length bound of the criteria answer (the paper: 512).
        instruction_max_tokens: Length bound of each scoring-instruction answer (512, same step).
        reasks: Re-asks after an invalid JSON answer (the paper: three).
        max_criteria: Answers with more criteria are invalid (asks the judge to be selective).
        max_chars: Cut each text shown in the prompt to this many characters (None: never cut);
            for judges with short contexts. Cuts are recorded.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    condition: Condition = "task"
    k: int = Field(default=3, ge=1, le=20)
    seed: int = 0
    temperature: float = Field(default=0.7, ge=0.0)
    top_p: float = Field(default=0.95, gt=0.0, le=1.0)
    max_tokens: int = Field(default=512, ge=16)
    instruction_max_tokens: int = Field(default=512, ge=16)
    reasks: int = Field(default=DEFAULT_REASKS, ge=0, le=10)
    max_criteria: int = Field(default=15, ge=1)
    max_chars: int | None = Field(default=None, ge=100)


# -- answer validation ---------------------------------------------------------------------------

_NUM = r"[-+]?\d+(?:\.\d+)?"
_RANGE = re.compile(rf"({_NUM})\s*(?:-|–|—|to|and|\.\.)\s*({_NUM})", re.IGNORECASE)
_LABEL_SPLIT = re.compile(r"\s*(?:,|/|\||;|<|\bor\b)\s*", re.IGNORECASE)
_MAX_RANGE = 100


def _numeric(low: float, high: float, anchors: str = "") -> NumericScale:
    if high - low > _MAX_RANGE:
        raise ValueError(f"scale {low:g}-{high:g} spans more than {_MAX_RANGE} points")
    integer = float(low).is_integer() and float(high).is_integer()
    return NumericScale(low=low, high=high, integer=integer, anchors=anchors)


def _labels(items: list[Any]) -> CategoricalScale:
    labels = [str(x).strip() for x in items]
    if any(not re.search(r"[A-Za-z]", x) or len(x) > 40 for x in labels):
        raise ValueError(f"scale labels must be short words, got {labels}")
    return CategoricalScale(labels=tuple(labels))


def _scale_from_text(text: str) -> NumericScale | CategoricalScale:
    m = _RANGE.search(text)
    if m:
        anchors = text[m.end():].strip(" \t\n()[]{}:;,.")
        return _numeric(float(m.group(1)), float(m.group(2)), anchors)
    parts = [p for p in _LABEL_SPLIT.split(text.strip(" \t\n()[]{}.")) if p]
    if len(parts) >= 2:
        return _labels(parts)
    raise ValueError(f"scale {text!r} is neither a numeric range like \"1-5\" nor a list of labels")


def parse_scale(value: Any) -> NumericScale | CategoricalScale:
    """Read a scale as judges write it: ``"1-5"``, ``"1 to 5 (1 = poor, 5 = great)"``, ``[1, 5]``,
    ``{"min": 1, "max": 5}``, ``["poor", "fair", "good"]``, ``"low / medium / high"``.

    Raises:
        ValueError: With a message the judge can act on.
    """
    if isinstance(value, str):
        return _scale_from_text(value)
    if isinstance(value, list) and value:
        if all(isinstance(x, int | float) and not isinstance(x, bool) for x in value):
            return _numeric(float(min(value)), float(max(value)))
        if all(isinstance(x, str) for x in value):
            return _labels(value)
    if isinstance(value, dict):
        for lo, hi in (("min", "max"), ("low", "high"), ("from", "to")):
            if lo in value and hi in value:
                try:
                    return _numeric(float(value[lo]), float(value[hi]), str(value.get("anchors", "") or ""))
                except (TypeError, ValueError) as exc:
                    raise ValueError(f"scale bounds must be numbers: {exc}") from exc
        for key in ("labels", "values", "levels", "categories", "range"):
            if key in value:
                return parse_scale(value[key])
    raise ValueError('"scale" must be a numeric range such as "1-5" or a list of labels ordered from worst to best')


def _text_field(item: dict[str, Any], key: str, where: str, min_words: int) -> str:
    value = item.get(key)
    if not isinstance(value, str) or not re.search(r"[A-Za-z]", value):
        raise ValueError(f'{where} needs a "{key}" with words in it')
    if len(value.split()) < min_words:
        raise ValueError(f'{where}."{key}" is too short (at least {min_words} words)')
    return " ".join(value.split())


def validate_criteria(obj: Any, max_criteria: int = 15,
                      resolved: list[dict[str, str]] | None = None) -> list[Criterion]:
    """The criteria of a rubric answer (``{"criteria": [{name, description, scale}, ...]}``).

    A bare list of criteria is accepted too; unknown keys are ignored. A repeated name (case aside) does not
    discard the answer: a repeat with the same description is dropped, one with another description is renamed
    ``NAME (2)``, ``NAME (3)``...; each resolution is appended to ``resolved`` (``{"name", "action", "as"}``) for the
    rubric's provenance.

    Raises:
        ValueError: What is wrong, phrased for a re-ask.
    """
    items = obj.get("criteria") if isinstance(obj, dict) else obj
    if not isinstance(items, list):
        raise ValueError('expected an object {"criteria": [...]} listing the criteria')
    if not items:
        raise ValueError('"criteria" is empty')
    if len(items) > max_criteria:
        raise ValueError(f"{len(items)} criteria is too many; give at most {max_criteria}")
    out: list[Criterion] = []
    seen: dict[str, str] = {}  # name (casefolded) -> its description (casefolded)
    record = resolved if resolved is not None else []
    for i, item in enumerate(items):
        where = f"criteria[{i}]"
        if not isinstance(item, dict):
            raise ValueError(f'{where} must be an object with "name", "description" and "scale"')
        name = _text_field(item, "name", where, 1)
        if len(name) > 80:
            raise ValueError(f"{where}.name is longer than 80 characters")
        description = _text_field(item, "description", where, 3)
        if name.casefold() in seen:
            if seen[name.casefold()] == description.casefold():
                record.append({"name": name, "action": "dropped (a repeat)", "as": ""})
                continue
            k = 2
            while f"{name} ({k})".casefold() in seen:
                k += 1
            record.append({"name": name, "action": "renamed", "as": f"{name} ({k})"})
            name = f"{name} ({k})"
        seen[name.casefold()] = description.casefold()
        if "scale" not in item:
            raise ValueError(f'{where} has no "scale"')
        try:
            scale = parse_scale(item["scale"])
        except ValueError as exc:
            raise ValueError(f"{where}.scale: {exc}") from exc
        out.append(Criterion(name=name, description=description, scale=scale))
    return out


def validate_instruction(obj: Any) -> str:
    """The instruction of an instruction answer (``{"instruction": "..."}``).

    Raises:
        ValueError: Missing, too short or too long.
    """
    if not isinstance(obj, dict):
        raise ValueError('expected an object {"instruction": "..."}')
    text = _text_field(obj, "instruction", "the answer", 5)
    if len(text) > 1500:
        raise ValueError("the instruction is longer than 1500 characters; keep it short")
    return text


# -- examples shown to the judge -------------------------------------------------------------------

@dataclass(frozen=True)
class Shown:
    """A sample shown in a generation prompt: as a context, or as a high- or low-rated output."""

    role: Literal["context", "high", "low"]
    sample: Sample
    rating: float | None = None

    def record(self, rating_field: str | None) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "doc_id": self.sample.doc_id, "sample_id": self.sample.id}
        if self.rating is not None:
            out.update(field=rating_field, rating=self.rating)
        return out


def _first_per_doc(samples: list[Sample]) -> dict[str, Sample]:
    first: dict[str, Sample] = {}
    for s in samples:
        first.setdefault(s.doc_id, s)
    return first


def pick_contexts(samples: list[Sample], k: int, seed: int) -> list[Shown]:
    """``k`` distinct input contexts drawn with ``seed`` (one per source document)."""
    docs = _first_per_doc(samples)
    chosen = random.Random(seed).sample(list(docs), min(k, len(docs)))
    return [Shown("context", docs[d]) for d in chosen]


def pick_contrastive(samples: list[Sample], rating_field: str, k: int, seed: int) -> tuple[list[Shown], str]:
    """``k`` (high, low) pairs by the human rating ``rating_field``, drawn with ``seed``.

    Within a context when the dataset has several rated outputs per input that differ (dialogue,
    SummEval, HelpSteer2): the pair shares its input, as in the paper. Datasets with one output
    per input (QAGS, SumPubMed) get pairs across contexts instead: a high-rated output from the
    top quarter and a low-rated one from the bottom quarter, each with its own input.

    Returns:
        The shown samples (high, low, high, low, ...) and the pairing (``within-context`` or
        ``across-contexts``).

    Raises:
        ConfigError: No sample has the rating, or all ratings are equal.
    """
    rng = random.Random(seed)
    rated = [s for s in samples if rating_field in s.human]
    if len({s.human[rating_field] for s in rated}) < 2:
        raise ConfigError(f"contrastive condition: too few distinct '{rating_field}' ratings to contrast")
    by_doc: dict[str, list[Sample]] = {}
    for s in rated:
        by_doc.setdefault(s.doc_id, []).append(s)
    spread = [d for d, g in by_doc.items() if len({s.human[rating_field] for s in g}) > 1]
    shown: list[Shown] = []
    if len(spread) >= k:
        for d in rng.sample(spread, k):
            group = by_doc[d]
            hi = max(s.human[rating_field] for s in group)
            lo = min(s.human[rating_field] for s in group)
            high = rng.choice([s for s in group if s.human[rating_field] == hi])
            low = rng.choice([s for s in group if s.human[rating_field] == lo])
            shown += [Shown("high", high, hi), Shown("low", low, lo)]
        return shown, "within-context"
    ordered = sorted(rated, key=lambda s: s.human[rating_field])
    quarter = max(k, len(ordered) // 4)
    lows, highs = ordered[:quarter], ordered[-quarter:]
    for high, low in zip(rng.sample(highs, min(k, len(highs))), rng.sample(lows, min(k, len(lows))), strict=True):
        if high.human[rating_field] > low.human[rating_field]:
            shown += [Shown("high", high, high.human[rating_field]), Shown("low", low, low.human[rating_field])]
    return shown, "across-contexts"


# -- prompts -------------------------------------------------------------------------------------

def _cut(text: str, max_chars: int | None) -> str:
    if max_chars is None or len(text) <= max_chars:
        return text
    return text[:max_chars].rstrip() + " [...]"


def input_blocks(sample: Sample, info: DatasetInfo, max_chars: int | None) -> str:
    """The fenced input (and grounding context) of a sample, without its output."""
    parts = [fence(_cut(sample.source, max_chars), info.input_name)] if sample.source else []
    if sample.context and info.context_name:
        parts.append(fence(_cut(sample.context, max_chars), info.context_name))
    return "\n".join(parts)


def examples_block(info: DatasetInfo, shown: list[Shown], pairing: str | None, max_chars: int | None) -> str:
    """The contexts (or contrastive pairs) part of a criteria prompt; empty for the task-only condition."""
    if not shown:
        return ""
    return MATERIAL_NOTE + "\n\n" + _examples(info, shown, pairing, max_chars)


def _examples(info: DatasetInfo, shown: list[Shown], pairing: str | None, max_chars: int | None) -> str:
    out_name = info.output_name
    if shown[0].role == "context":
        lines = [f"Here are {len(shown)} representative {info.input_name}s of this task (inputs only):"]
        for i, ex in enumerate(shown, 1):
            lines += ["", f"Example {i}:", input_blocks(ex.sample, info, max_chars)]
        return "\n".join(lines)
    pairs = list(zip(shown[::2], shown[1::2], strict=True))
    if pairing == "within-context":
        lines = [f"Here are {len(pairs)} {info.input_name}s of this task, each with two {out_name}s written for "
                 f"it: one that human raters rated high and one they rated low."]
        for i, (high, low) in enumerate(pairs, 1):
            lines += ["", f"Example {i}:", input_blocks(high.sample, info, max_chars),
                      fence(_cut(high.sample.output, max_chars), f"{out_name} rated high"),
                      fence(_cut(low.sample.output, max_chars), f"{out_name} rated low")]
        return "\n".join(lines)
    lines = [f"Here are {len(pairs)} pairs of examples of this task: in each pair, one {out_name} that human "
             f"raters rated high and one they rated low, each with its own {info.input_name}."]
    for i, (high, low) in enumerate(pairs, 1):
        lines += ["", f"Pair {i}, rated high:", input_blocks(high.sample, info, max_chars),
                  fence(_cut(high.sample.output, max_chars), f"{out_name} rated high"),
                  f"Pair {i}, rated low:", input_blocks(low.sample, info, max_chars),
                  fence(_cut(low.sample.output, max_chars), f"{out_name} rated low")]
    return "\n".join(lines)


def build_criteria_prompt(task: str, info: DatasetInfo, examples: str) -> str:
    """Step 1: ask for the rubric's criteria (name, description, scale) as JSON."""
    out = info.output_name
    parts = ["You are designing an evaluation rubric: the criteria on which the outputs of a text "
             "generation task will be judged.", "", "Task description:", task.strip()]
    if examples:
        parts += ["", examples]
    parts += [
        "",
        f"Define clear criteria, independent of each other, for judging the quality of the {out}s of this "
        "task. For each criterion give only:",
        '- "name": a short name;',
        '- "description": one or two sentences on what the criterion measures;',
        '- "scale": the values a rater chooses from: a numeric range such as "1-5" (you may say what the '
        'ends mean, e.g. "1-5 (1 = poor, 5 = excellent)"), or a list of labels ordered from worst to best, '
        'such as ["poor", "fair", "good"].',
        "",
        "Reply with one JSON object and nothing else, in this format:",
        '{"criteria": [{"name": "...", "description": "...", "scale": "..."}, ...]}',
    ]
    return "\n".join(parts)


def criteria_schema(max_criteria: int) -> dict[str, Any]:
    """The JSON schema of step 1's answer, which a backend that can enforce one decodes under.

    The bounds keep a weak judge on track: names and descriptions of bounded length (descriptions
    start with words), numeric ranges from 0 or 1 up to at most 10, or 2-10 ordered labels. The answer
    is validated by :func:`validate_criteria` all the same.
    """
    text = {"type": "string", "pattern": "^[A-Z][a-z]+ [a-z][^\"\\\\]{15,250}$"}  # words, not digits
    scale = {"anyOf": [{"type": "string", "pattern": "^[01] ?- ?([1-9]|10)$"},
                       {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 40},
                        "minItems": 2, "maxItems": 10}]}
    item = {"type": "object", "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 60},
                                             "description": text, "scale": scale},
            "required": ["name", "description", "scale"], "additionalProperties": False}
    return {"type": "object", "required": ["criteria"], "additionalProperties": False,
            "properties": {"criteria": {"type": "array", "items": item, "minItems": 1, "maxItems": max_criteria}}}


INSTRUCTION_SCHEMA = {"type": "object", "required": ["instruction"], "additionalProperties": False,
                      "properties": {"instruction": {"type": "string", "minLength": 1, "maxLength": 600}}}


def build_instruction_prompt(task: str, info: DatasetInfo, criterion: Criterion) -> str:
    """Step 2: ask for the short scoring instruction of one criterion as JSON."""
    out = info.output_name
    return "\n".join([
        "You are writing the scoring instruction for one criterion of an evaluation rubric.",
        "",
        "Task description:",
        task.strip(),
        "",
        f"Criterion: {criterion.name}",
        f"Description: {criterion.description}",
        f"Scale: {criterion.scale.describe()}",
        "",
        f"Write a short instruction (two to four sentences) that tells a rater how to score one {out} on this "
        "criterion: what to read, what to look for, and how to choose a value on the scale.",
        "Reply with one JSON object and nothing else, in this format:",
        '{"instruction": "..."}',
    ])


# -- the driver ----------------------------------------------------------------------------------

def select_examples(dataset: Dataset, settings: GenerationSettings) -> tuple[list[Shown], str | None]:
    """The samples the condition shows, and the contrastive pairing (None otherwise)."""
    if settings.condition == "task":
        return [], None
    if settings.condition == "contexts":
        return pick_contexts(dataset.samples, settings.k, settings.seed), None
    return pick_contrastive(dataset.samples, dataset.info.contrast_field, settings.k, settings.seed)


def _records(asked: Asked[Any], stage: str, criterion: str | None = None) -> list[dict[str, Any]]:
    """The provenance's responses: each call's record, under the generation step (not the usage stage)."""
    base = {"stage": stage} | ({"criterion": criterion} if criterion else {})
    return [call | base | {"attempt": i + 1} for i, call in enumerate(asked.trace())]


async def generate_rubric(dataset: Dataset, judge: Any, settings: GenerationSettings, *,
                          task: TaskText | None = None, note: Any = None) -> Rubric:
    """Have ``judge`` write a rubric for ``dataset`` under ``settings.condition``.

    Args:
        dataset: The dataset (its task, input/output names, and samples for the contexts).
        judge: A :class:`ManagedJudge`; its ledger gives the usage recorded in the rubric.
        settings: Condition, k, seed, sampling and length bounds, re-asks.
        task: Task descriptions; the shipped ones for the dataset by default.
        note: Called with a message for anything done differently from the plain procedure.

    Returns:
        The rubric; its criteria are empty when the criteria answer was discarded (see provenance).
    """
    from assay._version import __version__

    info = dataset.info
    task = task or task_text(info)
    notes: list[str] = []

    def _note(message: str) -> None:
        notes.append(message)
        if note is not None:
            note(message)

    if not task.shipped:
        _note(f"no GER-Eval task description is shipped for {info.name!r}: using its task text")
    shown, pairing = select_examples(dataset, settings)
    if pairing == "across-contexts":
        _note(f"{info.name}: one rated output per input, so contrastive pairs are drawn across contexts")
    if settings.max_chars and any(len(x) > settings.max_chars for s in shown
                                  for x in (s.sample.source, s.sample.output, s.sample.context or "")):
        _note(f"texts shown in the prompt were cut to {settings.max_chars} characters")
    prompt = build_criteria_prompt(task.generation, info, examples_block(info, shown, pairing, settings.max_chars))
    sampling = {"temperature": settings.temperature, "top_p": settings.top_p, "seed": settings.seed, "json_mode": True}
    resolved: list[dict[str, str]] = []

    def criteria_of(obj: Any) -> list[Criterion]:
        resolved.clear()  # the accepted answer is the last one read: its resolutions are the ones kept
        return validate_criteria(obj, settings.max_criteria, resolved)

    asked = await ask_json(judge, Request.chat(prompt, max_tokens=settings.max_tokens, **sampling,
                                               json_schema=schema_text(criteria_schema(settings.max_criteria))),
                           criteria_of, stage="criteria", reasks=settings.reasks)
    for r in resolved if asked.ok else []:
        _note(f"criterion name {r['name']!r} was given twice: {r['action']}" + (f" as {r['as']!r}" if r["as"] else ""))
    responses, discarded = _records(asked, "criteria"), []
    criteria: list[Criterion] = []
    instruction_prompts: dict[str, str] = {}
    if not asked.ok:
        discarded.append({"stage": "criteria", "reason": asked.error, "attempts": len(asked.calls)})
        _note(f"every criteria answer was invalid after {settings.reasks} re-asks: the rubric has no criteria")
    else:
        drafts = asked.value or []
        prompts = [build_instruction_prompt(task.scoring, info, c) for c in drafts]
        outcomes = await asyncio.gather(*(
            ask_json(judge, Request.chat(p, max_tokens=settings.instruction_max_tokens, **sampling,
                                         json_schema=schema_text(INSTRUCTION_SCHEMA)),
                     validate_instruction, stage="instruction", reasks=settings.reasks) for p in prompts))
        for draft, p, got in zip(drafts, prompts, outcomes, strict=True):
            instruction_prompts[draft.name] = content_hash(p)
            responses += _records(got, "instruction", draft.name)
            if got.ok:
                criteria.append(draft.model_copy(update={"instruction": got.value}))
            else:
                discarded.append({"stage": "instruction", "criterion": draft.model_dump(mode="json"),
                                  "reason": got.error, "attempts": len(got.calls)})
                _note(f"criterion {draft.name!r} dropped: no valid scoring instruction after "
                      f"{settings.reasks} re-asks")
    rating_field = info.contrast_field if settings.condition == "contrastive" else None
    provenance = Provenance(
        source="generated", dataset=info.name, judge=judge.identity.model_dump(mode="json"),
        condition=settings.condition, settings=settings.model_dump(mode="json") | {"json_mode": True},
        contexts=[s.record(rating_field) | ({"pairing": pairing} if pairing else {}) for s in shown],
        prompts={"criteria": prompt, "instructions_sha": instruction_prompts,
                 "task_source": "assay gereval_tasks.yaml" if task.shipped else "dataset task"},
        responses=responses, discarded=discarded,
        usage={k: v.model_dump() for k, v in judge.ledger.by_stage.items()}, notes=notes,
        created_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"), assay_version=__version__)
    return Rubric(dataset=info.name, task=task.generation, criteria=tuple(criteria), provenance=provenance)


class RubricOptions(GenerationSettings):
    """Options of ``rubric``: the generation settings plus an own task description.

    Attributes:
        task_file: A text file whose content replaces the shipped task description in both prompts.
    """

    task_file: Path | None = None


def read_task_file(path: Path, option: str) -> str:
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ConfigError(f"{option} {path}: cannot read it ({exc.strerror or exc})") from exc
    if not text:
        raise ConfigError(f"{option} {path}: the file is empty")
    return text


def plan_rubric(dataset: Dataset, dimensions: list[str] | None, opts: RubricOptions) -> Build:
    """GER-Eval's rubric generation; a rubric without criteria is still written (its provenance says why)."""
    from assay.methods.gereval.rubric import TaskText, task_text

    if dimensions:
        raise ConfigError("a generated rubric brings its own criteria: leave dimensions out for 'rubric'")
    task = task_text(dataset.info)
    if opts.task_file is not None:
        own = read_task_file(opts.task_file, "task_file")
        task = TaskText(generation=own, scoring=own, contrast_note=task.contrast_note, shipped=True)
    settings = GenerationSettings(**opts.model_dump(exclude={"task_file"}))

    async def build(judge: ManagedJudge) -> Built:
        rubric = await generate_rubric(dataset, judge, settings, task=task)
        failures = [] if rubric.criteria else ["no valid criteria: every answer was discarded "
                                               "(see provenance.discarded)"]
        return Built(rubric, rubric.to_json(), rubric.content_hash(), failures, list(rubric.provenance.notes))

    return build
