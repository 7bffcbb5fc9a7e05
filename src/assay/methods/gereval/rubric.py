"""Rubric files (GER-Eval): criteria with a scale and a scoring instruction, plus how they were made.

A rubric is data a user can read, edit and version. Generated rubrics (``assay rubric generate``)
and the human rubric of each bundled dataset (``human:<dataset>``) share one format, so that
both are applied by the same method (``--method gereval --rubric ...``) and compared fairly.

File format (JSON)::

    {"format": 1, "dataset": "topical-chat", "task": "...",
     "criteria": [{"name": "Engagement", "description": "...",
                   "scale": {"kind": "numeric", "low": 1, "high": 5, "integer": true, "anchors": "..."},
                   "instruction": "..."},
                  {"name": "Tone", "description": "...",
                   "scale": {"kind": "categorical", "labels": ["poor", "fair", "good"]}, "instruction": "..."}],
     "provenance": {"source": "generated", "judge": {...}, "condition": "contexts", "settings": {...},
                    "contexts": [...], "prompts": {...}, "responses": [...], "discarded": [...], ...}}

Categorical labels are ordered worst first and map to 1..n when applied (the mapping is recorded
in every judgment's trace).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_serializer,
    model_validator,
)

from assay.common.files import load_model
from assay.datasets.catalog import DatasetInfo, card_of
from assay.errors import ConfigError, InputError, did_you_mean
from assay.types import Dimension, Scale

RUBRIC_FORMAT = 1
CONDITIONS = ("task", "contexts", "contrastive")
HUMAN_PREFIX = "human:"
# Aggregate ratings are not rubric items: the paper's human rubrics (its table 12) list none.
_NOT_RUBRIC_ITEMS = frozenset({"overall"})


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


class NumericScale(BaseModel):
    """A numeric range such as 1-5; ``anchors`` keeps what the author said the ends mean."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["numeric"] = "numeric"
    low: float
    high: float
    integer: bool = True
    anchors: str = ""

    @model_validator(mode="after")
    def _ordered(self) -> NumericScale:
        if not self.high > self.low:
            raise ValueError(f"scale high ({_num(self.high)}) must be greater than low ({_num(self.low)})")
        return self

    def to_scale(self) -> Scale:
        """The scale judgments are checked against."""
        return Scale(low=self.low, high=self.high, integer=self.integer)

    def label(self) -> str:
        """Short form, e.g. ``1-5``."""
        return f"{_num(self.low)}-{_num(self.high)}"

    def describe(self) -> str:
        """How prompts state the scale, anchors included."""
        kind = "a whole number" if self.integer else "a number"
        text = f"{kind} from {_num(self.low)} to {_num(self.high)}"
        return f"{text} ({self.anchors})" if self.anchors else text


class CategoricalScale(BaseModel):
    """Ordered labels, worst first (or as ``anchors`` says); applied as the numbers 1..n.

    ``anchors`` says what the labels mean when "worst to best" does not (HelpSteer2's verbosity runs from
    succinct to verbose); it is left out of the file and the hash when empty, so rubrics written before
    it existed keep their hash.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["categorical"] = "categorical"
    labels: tuple[str, ...]
    anchors: str = ""

    @model_serializer(mode="wrap")
    def _drop_empty_anchors(self, handler: Any) -> dict[str, Any]:
        out: dict[str, Any] = handler(self)
        if not out.get("anchors"):
            out.pop("anchors", None)
        return out

    @field_validator("labels")
    @classmethod
    def _labels(cls, labels: tuple[str, ...]) -> tuple[str, ...]:
        labels = tuple(x.strip() for x in labels)
        if len(labels) < 2:
            raise ValueError("a categorical scale needs at least two labels")
        if any(not x for x in labels):
            raise ValueError("a categorical scale label may not be empty")
        folded = [_fold(x) for x in labels]
        if len(set(folded)) != len(folded):
            raise ValueError(f"categorical labels repeat: {list(labels)}")
        return labels

    def mapping(self) -> dict[str, int]:
        """Label -> ordered number (1 for the worst label)."""
        return {label: i + 1 for i, label in enumerate(self.labels)}

    def value_of(self, answer: str) -> int | None:
        """The number of a label as a judge wrote it (case and spacing ignored), or None."""
        folded = _fold(answer)
        for i, label in enumerate(self.labels):
            if _fold(label) == folded:
                return i + 1
        return None

    def to_scale(self) -> Scale:
        return Scale(low=1, high=len(self.labels), integer=True)

    def label(self) -> str:
        return " < ".join(self.labels)

    def describe(self) -> str:
        order = self.anchors or "from worst to best"
        return "one of the labels " + ", ".join(f'"{x}"' for x in self.labels) + f" ({order})"


def _fold(text: str) -> str:
    return " ".join(str(text).replace("_", " ").replace("-", " ").split()).casefold()


CriterionScale = Annotated[NumericScale | CategoricalScale, Field(discriminator="kind")]


class Criterion(BaseModel):
    """One rubric item: GER-Eval's (name, description, scale) triple and its scoring instruction."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1, max_length=120)
    description: str = Field(min_length=1)
    scale: CriterionScale
    instruction: str = ""

    def dimension(self) -> Dimension:
        """The unit dimension this criterion is scored as (categorical labels become 1..n)."""
        return Dimension(name=self.name, definition=self.description, scale=self.scale.to_scale())


class Provenance(BaseModel):
    """How a rubric came to be: who wrote it, under which condition and settings, from what.

    Attributes:
        source: ``generated`` (written by a judge) or ``human`` (the dataset's own rubric).
        dataset: The dataset it was written for.
        judge: Identity of the judge that wrote it (no secrets).
        condition: ``task``, ``contexts`` or ``contrastive`` (generated rubrics).
        settings: Every generation setting (temperature, top_p, length bounds, seed, k, re-asks).
        contexts: The samples shown to the judge (ids, role, the human rating that chose them).
        prompts: The prompts sent (the criteria prompt in full, instruction prompts by hash).
        responses: Every raw answer with its validation outcome, in order.
        discarded: Answers that stayed invalid after every re-ask, and what was dropped.
        usage: Calls and tokens per stage.
        notes: Anything done differently from the plain procedure (e.g. contrastive pairs across contexts).
    """

    model_config = ConfigDict(extra="forbid")

    source: Literal["generated", "human"]
    dataset: str
    judge: dict[str, Any] | None = None
    condition: Literal["task", "contexts", "contrastive"] | None = None
    settings: dict[str, Any] = Field(default_factory=dict)
    contexts: list[dict[str, Any]] = Field(default_factory=list)
    prompts: dict[str, Any] = Field(default_factory=dict)
    responses: list[dict[str, Any]] = Field(default_factory=list)
    discarded: list[dict[str, Any]] = Field(default_factory=list)
    usage: dict[str, Any] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)
    created_at: str | None = None
    assay_version: str | None = None


class Rubric(BaseModel):
    """A rubric: the task it was written for, its criteria and its provenance.

    ``criteria`` may be empty only in a generated file whose every answer was discarded; such a
    file documents the failure and cannot be applied.
    """

    model_config = ConfigDict(extra="forbid")

    format: Literal[1] = RUBRIC_FORMAT
    dataset: str
    task: str
    criteria: tuple[Criterion, ...]
    provenance: Provenance

    @field_validator("criteria")
    @classmethod
    def _unique(cls, criteria: tuple[Criterion, ...]) -> tuple[Criterion, ...]:
        seen: set[str] = set()
        for c in criteria:
            key = c.name.casefold()
            if key in seen:
                raise ValueError(f"two criteria are named {c.name!r}")
            seen.add(key)
        return criteria

    @property
    def label(self) -> str:
        """A short name for tables, e.g. ``topical-chat/contexts/llamacpp:smollm2`` or ``human:topical-chat``."""
        p = self.provenance
        if p.source == "human":
            return f"{HUMAN_PREFIX}{self.dataset}"
        judge = f"{p.judge.get('backend')}:{p.judge.get('model')}" if p.judge else "?"
        return f"{self.dataset}/{p.condition}/{judge}"

    def criterion(self, name: str) -> Criterion:
        for c in self.criteria:
            if c.name == name:
                return c
        from assay.errors import did_you_mean

        raise ConfigError(f"rubric {self.label} has no criterion {name!r}."
                          + did_you_mean(name, [c.name for c in self.criteria]))

    def dimensions(self) -> list[Dimension]:
        return [c.dimension() for c in self.criteria]

    def content_hash(self) -> str:
        """Hash of what changes a score: the task and the criteria (not the provenance)."""
        blob = json.dumps({"task": self.task, "criteria": [c.model_dump(mode="json") for c in self.criteria]},
                          sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]

    def to_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"


def save_rubric(rubric: Rubric, path: str | Path) -> Path:
    """Write a rubric file (JSON), creating parent directories."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(rubric.to_json(), encoding="utf-8")
    return path


def load_rubric(spec: str | Path) -> Rubric:
    """A rubric from a file path, or the human rubric of a bundled dataset (``human:<dataset>``).

    Raises:
        InputError: A missing or malformed file, with pydantic's explanation.
        ConfigError: An unknown dataset name after ``human:``.
    """
    text = str(spec)
    if text.startswith(HUMAN_PREFIX):
        return human_rubric(text[len(HUMAN_PREFIX):])
    path = Path(text)
    if not path.exists():
        raise InputError(f"rubric file not found (or use {HUMAN_PREFIX}<dataset>)", file=text)
    return load_model(path, Rubric, what="rubric", syntax="JSON", prefix="not a valid rubric: ")


@dataclass(frozen=True)
class TaskText:
    """A dataset's task as GER-Eval shows it: for writing a rubric and for applying one.

    Attributes:
        generation: The longer description the rubric writer sees.
        scoring: The shorter description the scorer sees.
        contrast_note: What the human rating that picks contrastive examples is.
        shipped: False when assay has no description for this dataset and fell back to its ``task``.
    """

    generation: str
    scoring: str
    contrast_note: str
    shipped: bool


@cache
def _task_table() -> dict[str, dict[str, str]]:
    import yaml

    text = (resources.files("assay.methods.gereval") / "gereval_tasks.yaml").read_text(encoding="utf-8")
    table: dict[str, dict[str, str]] = yaml.safe_load(text)
    return table


def task_text(info: Any) -> TaskText:
    """The GER-Eval task descriptions of a dataset (its :class:`DatasetInfo`): the entry its card names
    (``artifacts.gereval``).

    Datasets whose card names none (user cards) use their ``task`` for both; callers record that
    (``shipped`` is False).

    Raises:
        ConfigError: The card names an entry the tasks file does not have.
    """
    table = _task_table()
    name = info.artifacts.gereval
    if name is not None and name not in table:
        raise ConfigError(f"dataset {info.name!r}: its card names GER-Eval task {name!r}, which "
                          "assay/methods/gereval/gereval_tasks.yaml does not have." + did_you_mean(name, list(table)))
    entry = table.get(name) if name is not None else None
    if not entry:
        note = f"human rating '{info.contrast_field}'"
        return TaskText(generation=info.task, scoring=info.task, contrast_note=note, shipped=False)
    return TaskText(generation=entry["generation"], scoring=entry["scoring"],
                    contrast_note=entry.get("contrast_note", info.contrast_field), shipped=True)


def human_instruction(name: str, scale: NumericScale | CategoricalScale, input_name: str, output_name: str) -> str:
    """The scoring instruction given with a human rubric item (the datasets ship definitions only)."""
    if isinstance(scale, CategoricalScale) and scale.anchors:  # a label is a degree, not a verdict
        return (f"Read the {input_name} and the {output_name}. Judge the {output_name}'s {name.replace('_', ' ')} "
                f"as defined above, then answer with {scale.describe()}.")
    return (f"Read the {input_name} and the {output_name}. Decide how well the {output_name} meets the "
            f"definition of {name.replace('_', ' ')} above, then give one rating: {scale.describe()}.")


@cache
def _human_table() -> dict[str, dict[str, Any]]:
    import yaml

    text = (resources.files("assay.methods.gereval") / "human_rubrics.yaml").read_text(encoding="utf-8")
    table: dict[str, dict[str, Any]] = yaml.safe_load(text)
    return table


def human_entry(dataset: str | DatasetInfo) -> dict[str, Any]:
    """The shipped human-rubric entry its card names (``artifacts.gereval``, ``same_as`` followed), or {} when
    none is shipped."""
    name = card_of(dataset).artifacts.gereval
    table = _human_table()
    entry = table.get(name or "") or {}
    return table[entry["same_as"]] if "same_as" in entry else entry


def _human_criterion(d: Dimension, item: dict[str, Any], input_name: str, output_name: str) -> Criterion:
    """One rated dimension as a rubric item: the shipped description and labels where given, else the catalog's."""
    scale: NumericScale | CategoricalScale
    if "labels" in item:
        scale = CategoricalScale(labels=tuple(item["labels"]), anchors=item.get("anchors", ""))
    else:
        scale = NumericScale(low=d.scale.low, high=d.scale.high, integer=d.scale.integer)
    description = " ".join(str(item.get("description", d.definition)).split())
    if item.get("items"):
        description += f" (annotation items: {', '.join(item['items'])})"
    return Criterion(name=d.name, description=description, scale=scale,
                     instruction=human_instruction(d.name, scale, input_name, output_name))


def human_rubric(dataset: str | DatasetInfo) -> Rubric:
    """The human rubric of a bundled dataset: its annotation items, their definitions and scales.

    The items, definitions and categorical labels come from ``assay/methods/gereval/human_rubrics.yaml``
    (each with its source, copied into the provenance); dimensions it does not describe use the catalog's
    definition and scale. The aggregate ``overall`` rating and the columns the file lists under
    ``left_out`` are not rubric items. Criterion names are the dataset's dimension names, so a run with
    this rubric is compared with the human ratings dimension by dimension.
    """
    from assay._version import __version__
    info = card_of(dataset)
    entry = human_entry(info)
    shipped, left_out = entry.get("criteria", {}), entry.get("left_out", {})
    criteria = [_human_criterion(d, shipped.get(d.name) or {}, info.input_name, info.output_name)
                for d in info.dimensions if d.name not in _NOT_RUBRIC_ITEMS and d.name not in left_out]
    notes = [*entry.get("sources", [])] or [f"definitions and scales from assay's catalog of {info.name}"]
    notes += [f"{name} left out: {' '.join(why.split())}" for name, why in left_out.items()]
    if entry.get("unrated_items"):
        unrated = ", ".join(entry["unrated_items"])
        notes.append(f"annotation items without a rating in the data, not criteria: {unrated}")
    if entry.get("not_stated"):
        notes.append(" ".join(entry["not_stated"].split()))
    notes.append(info.provenance)
    settings = {"instructions": "assay template",
                "items": {name: list(v.get("items", [])) for name, v in shipped.items()},
                "source_file": "assay/methods/gereval/human_rubrics.yaml" if entry else "catalog"}
    prov = Provenance(source="human", dataset=info.name, settings=settings, notes=notes, assay_version=__version__)
    return Rubric(dataset=info.name, task=task_text(info).scoring, criteria=tuple(criteria), provenance=prov)
