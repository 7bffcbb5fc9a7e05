"""The protocol every evaluation method follows: options, prepare once, score each (sample, dimension)."""

from __future__ import annotations

import abc
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, model_validator

from assay.common.hashing import content_hash
from assay.datasets import Dataset
from assay.errors import ConfigError
from assay.judges.ask import current_usage
from assay.judges.base import schema_text
from assay.judges.middleware import ManagedJudge
from assay.types import Dimension, Judgment, Sample, Usage


class Renamable(BaseModel):
    """Options of which some were renamed: the old names stay accepted (deprecated), converted to the new ones.

    :attr:`renamed` maps an old name to the new name and the conversion of its value. The model then records
    only the new name, and a stored run recorded with the old one is compared through :meth:`upgrade_settings`.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: Old option name -> (new name, conversion of the old value), e.g. ``max_reasks`` -> ``reasks``.
    renamed: ClassVar[dict[str, tuple[str, Callable[[Any], Any]]]] = {}

    @model_validator(mode="before")
    @classmethod
    def _rename(cls, data: Any) -> Any:
        """Accept the deprecated names of :attr:`renamed`."""
        return cls.upgrade_settings(data) if isinstance(data, dict) else data

    @classmethod
    def upgrade_settings(cls, settings: dict[str, Any]) -> dict[str, Any]:
        """``settings`` with the old option names of :attr:`renamed` under their new names and values.

        Raises:
            ConfigError: An old and a new name given together with different values.
        """
        out = dict(settings)
        for old, (new, convert) in cls.renamed.items():
            if old not in out:
                continue
            value = convert(out.pop(old))
            if new in out and out[new] != value:
                raise ConfigError(f"options {old!r} (deprecated) and {new!r} are both given, with different values")
            out.setdefault(new, value)
        return out


class MethodOptions(Renamable):
    """Base of every method's options: validated once, unknown keys rejected, old names mapped (:class:`Renamable`)."""


def reasks_from_bool(value: Any) -> Any:
    """An old on/off re-ask option as a number of re-asks (on: one)."""
    if isinstance(value, str) and value.lower() in ("true", "false", "yes", "no", "1", "0", "on", "off"):
        value = value.lower() in ("true", "yes", "1", "on")
    return int(value) if isinstance(value, bool) else value


def reasks_from_attempts(value: Any) -> Any:
    """An old ``max_attempts`` (calls per question) as re-asks after the first call."""
    try:
        return int(value) - 1
    except (TypeError, ValueError):
        return value


def same(value: Any) -> Any:
    """The conversion of an option that was only renamed."""
    return value


@dataclass
class RunContext:
    """What a method sees of the run: the dataset, the dimensions, the judge, and a place for notes.

    Attributes:
        dataset: The dataset (its info gives task, dimension definitions and scales; its samples
            are available for few-shot demonstrations).
        dimensions: The dimensions being judged.
        judge: The managed judge (cache, retries, accounting); ask it with
            ``await assay.judges.ask.ask(ctx.judge, request, stage=..., read=..., reasks=...)``.
        note: Records a fallback or warning in the run manifest and the run's output, e.g.
            ``note("fallback", "judge gives no log-probabilities: sampling instead")``.
        artifacts: Stores a prepared artifact's text in the run (name, text) and returns its hash.
        status: Says what a long preparation is doing (``"G-Eval: writing evaluation steps for coherence"``),
            shown by ``assay run`` while nothing is judged yet.
        answer_format: The answer format the run uses (``--answer-format``, resolved): ``json`` (requests carry
            the method's :meth:`Method.answer_schema`, which the backend enforces) or ``free`` (free text).
    """

    dataset: Dataset
    dimensions: list[Dimension]
    judge: ManagedJudge
    note: Callable[[str, str], None] = lambda kind, message: None
    artifacts: Callable[[str, str], str] = field(default=lambda name, text: content_hash(text))
    status: Callable[[str], None] = lambda message: None
    answer_format: str = "free"


class Method(abc.ABC):
    """An evaluation method. Subclasses set ``name`` and ``Options`` and implement :meth:`score`.

    The split follows "plan, execute, process": prompt builders and parsers are pure functions in
    the method's module; :meth:`score` only sequences them around judge calls.
    """

    name: ClassVar[str]
    Options: ClassVar[type[MethodOptions]] = MethodOptions
    #: How the executor orders units for prefix reuse (see :func:`assay.run.executor.order_units`):
    #: "sample" (all dimensions of an output in a row) or "dimension" (one dimension over all
    #: outputs of a source document in a row). A method whose layout depends on its options sets
    #: it per instance (CheckEval's ``definition``); :func:`assay.run.executor.prefix_reuse` measures it.
    unit_order: str = "sample"

    def __init__(self, options: MethodOptions | dict[str, Any] | None = None) -> None:
        if options is None:
            options = {}
        self.options = options if isinstance(options, MethodOptions) else self.Options.model_validate(options)

    # -- answer format (issue 27): the one place a method says what its answers look like -----------------

    #: The stages whose answers have a schema under ``--answer-format json`` (empty: free text only). A run
    #: probes an endpoint's schema support only for a method that lists some.
    schema_stages: ClassVar[tuple[str, ...]] = ()

    def answer_schema(self, stage: str, dimension: Dimension | None = None, **shape: Any) -> dict[str, Any] | None:
        """The JSON schema of the judge's answer at ``stage`` (None: free text, the default).

        ``shape`` carries what the schema depends on besides the dimension (CheckEval: ``questions``, the
        question count of a prompt). Properties are listed in the order the judge must write them: a reasoning
        field always comes before the verdict, since a grammar decodes them in that order.
        """
        return None

    def free_text_reason(self) -> str | None:
        """Why ``--answer-format auto`` keeps free text for this method as configured (None: json where the
        judge can enforce it). The default: a paper preset keeps the paper's own free-text format."""
        if getattr(self.options, "preset", None) == "paper":
            return f"{self.name} --preset paper keeps the paper's free-text answer format"
        return None

    def schema_text(self, ctx: RunContext, stage: str, dimension: Dimension | None = None,
                    **shape: Any) -> str | None:
        """The schema a request carries at ``stage`` in this run: :meth:`answer_schema` under the ``json``
        answer format, else None."""
        if ctx.answer_format != "json":
            return None
        schema = self.answer_schema(stage, dimension, **shape)
        return schema_text(schema) if schema is not None else None

    def settings(self) -> dict[str, Any]:
        """The method's settings as recorded in the run manifest (every option that changes a number).

        ``shuffle_seed`` (the order hook of CheckEval and SEAL, used by ``assay probe``) is recorded only when
        set, so that runs stored before the option existed still resume.
        """
        out = self.options.model_dump(mode="json")
        if "shuffle_seed" in out and out["shuffle_seed"] is None:
            del out["shuffle_seed"]
        return out

    def dimensions(self, dataset: Dataset) -> list[Dimension] | None:
        """The dimensions this method judges when they come from its own artifact, not the dataset.

        The default (None) judges the dataset's dimensions. GER-Eval returns the criteria of its
        rubric, so that each criterion is one unit of work; ``evaluate(dimensions=[...])`` then
        picks among these names.
        """
        return None

    async def prepare(self, ctx: RunContext) -> dict[str, Any]:
        """Build or load artifacts once per run (steps, checklists, rubrics).

        Returns:
            What to record in the manifest about them (names, hashes, which judge wrote them).
        """
        return {}

    @abc.abstractmethod
    async def score(self, sample: Sample, dimension: Dimension, ctx: RunContext) -> Judgment:
        """Judge one sample on one dimension; never raise for a bad answer, record it instead."""

    def judgment(self, sample: Sample, dimension: Dimension, ctx: RunContext, *, score: float | None,
                 trace: dict[str, Any], usage: dict[str, Usage] | None = None,
                 error: str | None = None) -> Judgment:
        """A Judgment stamped with this method and the run's judge; its usage is, unless given, what the calls
        made while scoring it cost (:func:`assay.judges.ask.attributed`)."""
        if usage is None:
            usage = current_usage()
        return Judgment(sample_id=sample.id, dimension=dimension.name, method=self.name,
                        judge=ctx.judge.identity.label, score=score, trace=trace, usage=usage, error=error)


def shuffled(items: list[Any], seed: int, *key: str) -> list[Any]:
    """``items`` in an order drawn from ``seed`` and ``key`` (e.g. sample id, dimension, group): the same
    arguments always give the same order, so a shuffled run resumes and its calls are served from the cache."""
    out = list(items)
    random.Random("|".join([str(seed), *key])).shuffle(out)
    return out
