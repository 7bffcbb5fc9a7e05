"""The protocol every evaluation method follows: options, prepare once, score each (sample, dimension)."""

from __future__ import annotations

import abc
import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, model_validator

from assay.answers.imported import answer_texts
from assay.common.hashing import content_hash
from assay.datasets import Dataset
from assay.errors import ConfigError
from assay.judges.ask import current_usage
from assay.judges.base import Request, schema_text
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


@dataclass
class Built:
    """What a build step gave: the artifact, its file text (None: nothing fit to write), its hash, what went wrong."""

    value: Any
    text: str | None
    sha256: str
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


#: A planned build: everything checked and loaded, only the judge calls left.
Build = Callable[[ManagedJudge], Awaitable[Built]]


@dataclass(frozen=True)
class ArtifactKind:
    """A file a method's build step writes with a judge once, outside a run, for the method to read back
    (``assay.prepare``, ``assay geval steps``, ``assay checklist build``, ``assay rubric generate``).

    Attributes:
        options: The build's options model (validated, unknown keys refused, before the judge is loaded).
        plan: Checks the build's inputs (dataset, dimensions, options: seed files, task files) and returns the
            build, so that a typo costs nothing.
    """

    options: type[BaseModel]
    plan: Callable[[Dataset, list[str] | None, Any], Build]


#: What an import reader gives for one record: the score (or None), the trace and the error.
ImportedRead = tuple[float | None, dict[str, Any], str | None]


class AnswerReader(abc.ABC):
    """Reads one method's answers for one dimension of a dataset.

    A method that can read answers written outside assay sets :attr:`Method.Reader` to its subclass; ``assay
    import`` then finds it through the method registry, so a plugin method imports as a built-in does.

    Attributes:
        method: The method's name, stamped on the judgments.
        options: The import options this reader takes (``assay import`` flags such as ``mode``, ``checklist``),
            given to its constructor as keywords; any other option is refused before a file is read.
        dimension: The dimension judged (for GER-Eval, the rubric criterion).
    """

    method: str
    options: ClassVar[tuple[str, ...]] = ()
    #: The ``--match`` used when the user gives neither ``--match`` nor ``--id`` (None: one must be given).
    default_match: ClassVar[str | None] = None

    def __init__(self, dataset: Dataset, dimension: str, answers: str, *, strict: bool = False) -> None:
        self.dataset, self.answers, self.strict = dataset, answers, strict
        self.dimension = self._dimension(dimension)

    def _dimension(self, name: str) -> Dimension:
        return self.dataset.dimensions([name])[0]

    def settings(self) -> dict[str, Any]:
        """What the run's manifest records as method settings (every import into one run must agree)."""
        return {"imported": True, "strict_ratings": self.strict}

    def artifacts(self) -> dict[str, Any]:
        """What the manifest records about the artifacts the answers were read against."""
        return {}

    def work_items(self, dataset: Dataset, records: Any, match: list[tuple[str, str]], *,
                   file: str = "") -> tuple[Dataset, Any, list[tuple[str, str]]]:
        """The samples the records are matched to, the records, and the match fields: by default the dataset's
        outputs as they are (pairwise imports match records to pairs of outputs instead)."""
        return dataset, records, match

    @abc.abstractmethod
    def read(self, sample: Sample, rec: dict[str, Any], *, file: str, record: Any) -> ImportedRead:
        """The score (or None), the trace and the error of one record's answer.

        Raises:
            InputError: The record's answer field is missing or of the wrong shape.
        """

    def texts(self, rec: dict[str, Any], file: str, record: Any, *, many: bool = False) -> list[str]:
        """The record's answer text(s) from the ``--answers`` field (``many``: a text or a list of texts)."""
        return answer_texts(rec, self.answers, file=file, record=record, many=many)



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
    #: How ``assay import`` reads this method's answers written outside assay (None: it cannot import them).
    Reader: ClassVar[type[AnswerReader] | None] = None
    #: Whether the method judges pairs of outputs (its score: the preference for the first of the pair, 1 / 0.5 / 0,
    #: both orders in the trace): ``assay meta``, ``assay probe`` and the viewer then report pairwise statistics.
    compares_pairs: ClassVar[bool] = False
    #: Whether a unit's judge calls come one after another (SEAL's stages): the executor then keeps twice as many
    #: units in flight as the judge has call slots, so that a unit between two calls leaves no slot idle
    #: (:func:`assay.run.executor.default_unit_concurrency`). A method whose unit asks once, or asks all of its calls
    #: at once (CheckEval's question groups, a pair's two orders), sets False: as many units as slots keep every
    #: slot busy. A re-ask after an unusable answer, the exception, does not count.
    sequential_calls: ClassVar[bool] = True
    #: The artifacts this method's build steps write outside a run, by the name ``assay.prepare`` takes.
    builds: ClassVar[dict[str, ArtifactKind]] = {}

    @property
    def reads_logprobs(self) -> bool:
        """Whether this instance, as configured, reads log-probabilities where the judge gives them.

        The run probes the judge for them only then (``api._detect_capabilities``): a method that never reads
        them must not be stopped, nor pay, for a probe whose answer it ignores. Default False.
        """
        return False

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

    @classmethod
    def score_range(cls, dimension: Dimension) -> tuple[float, float, bool]:
        """The range this method's scores lie in, and whether they are whole numbers (the probe's scale use and
        spans): the dimension's own scale, unless the method scores on a scale of its own (a ratio)."""
        return dimension.scale.low, dimension.scale.high, dimension.scale.integer

    @classmethod
    def reorderable(cls) -> bool:
        """Whether the method's prompts have independent parts it can show in another order (its ``shuffle_seed``
        option), which ``assay probe`` re-asks to measure order sensitivity."""
        return "shuffle_seed" in cls.Options.model_fields

    @classmethod
    def sampled(cls, settings: dict[str, Any]) -> bool:
        """Whether a run with these recorded settings sampled its answers (temperature > 0), so that a repeat with
        another sample index may answer differently (``assay probe``'s self-consistency)."""
        return float(settings.get("temperature") or 0) > 0

    def standin(self, request: Request, stage: str) -> str | None:
        """A stand-in answer in the shape this method reads, for ``--estimate`` (no judge is asked), so that the
        method builds its later requests as after a real answer; never a score.

        Returns:
            The answer, or None for the generic stand-in (:func:`assay.run.standin.answer`: JSON in the shape the
            request asks for, else the middle of the scale the prompt names).
        """
        return None

    def work_items(self, dataset: Dataset) -> Dataset:
        """The dataset as this method's work items, each a :class:`Sample` judged per dimension.

        The default is the dataset as it is (one output per item). A method that judges something else than
        one output returns its own items: ``pairwise`` one sample per pair of outputs of an input. Called once
        per run, right after the dataset is selected (``limit``, ``docs``) and before anything is stored.
        """
        return dataset

    def prefetch(self, judge: ManagedJudge, dataset: Dataset, dimensions: list[Dimension]) -> list[asyncio.Task[Any]]:
        """Start the judge calls :meth:`prepare` will make whatever the judge turns out to support, before it is
        asked (a run starts them beside its capability probe: one round trip at the start, not two);
        :meth:`prepare` then awaits them instead of asking. Only calls that do not depend on the probe's answers
        (log-probabilities, the answer format) may start here.

        Returns:
            The tasks started; the caller cancels those :meth:`prepare` never awaited (a run stopped by its
            probe). Default: none.
        """
        return []

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
