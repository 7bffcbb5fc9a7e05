"""Artifact builds: ``prepare`` loads the judge, opens the call cache, runs a method's build step and closes both.

One place for what ``assay geval steps``, ``assay checklist build`` and ``assay rubric generate`` each used to wire
themselves: the commands call :func:`prepare` and only print. The build steps stay in their method's package
(``methods/geval/steps.py``, ``methods/checkeval/build.py``, ``methods/gereval/generate.py``); this module only
validates options, resolves the dataset's dimensions, runs the step with a managed judge and writes the file.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from assay.common.hashing import content_hash
from assay.datasets import Dataset, load_dataset
from assay.errors import ConfigError, did_you_mean
from assay.judges import DEFAULT_JUDGE, Judge, ManagedJudge, RetryPolicy
from assay.methods.checkeval.build import BuildSettings
from assay.methods.gereval.generate import GenerationSettings
from assay.run.waiting import blocking, preparing
from assay.types import Usage


class StepsOptions(BaseModel):
    """Options of ``geval-steps``: the room for each dimension's steps (``assay geval steps --max-tokens``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    max_tokens: int = Field(default=256, ge=16)


class ChecklistOptions(BuildSettings):
    """Options of ``checklist``: the build settings plus the seed checklist and the new checklist's name.

    Attributes:
        seeds: A shipped checklist name or a YAML file; default: the dataset's shipped checklist.
        name: The new checklist's name; default: ``<seeds>-built``.
    """

    seeds: str | None = None
    name: str | None = None


class RubricOptions(GenerationSettings):
    """Options of ``rubric``: the generation settings plus an own task description.

    Attributes:
        task_file: A text file whose content replaces the shipped task description in both prompts.
    """

    task_file: Path | None = None


@dataclass
class Built:
    """What a build step gave: the artifact, its file text (None: nothing fit to write), its hash, what went wrong."""

    value: Any
    text: str | None
    sha256: str
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class PrepareResult:
    """What :func:`prepare` built.

    Attributes:
        artifact: The artifact's name (``geval-steps``, ``checklist``, ``rubric``).
        method: The method that uses it (``--method``).
        value: The artifact: the steps entries by dimension, a ``Checklist`` or a ``Rubric``.
        text: The file's text (None when the build gave nothing fit to write: steps missing for a dimension).
        sha256: The hash a run using the artifact records (steps: of the file text; checklist: ``checklist_hash``;
            rubric: of its task and criteria).
        path: Where the file was written (None without ``out``, or when ``text`` is None).
        usage: The judge calls of this build by stage (cached calls counted apart: a cached re-run pays 0 calls).
        failures: Steps that gave no usable answer after their re-asks; an empty list is a complete build.
        notes: Anything done differently from the plain procedure (recorded in the artifact too).
    """

    artifact: str
    method: str
    value: Any
    text: str | None
    sha256: str
    path: Path | None
    usage: dict[str, Usage]
    failures: list[str]
    notes: list[str]

    @property
    def calls(self) -> int:
        """Judge calls paid for (those served from the call cache are :attr:`cached_calls`)."""
        return sum(u.calls for u in self.usage.values())

    @property
    def cached_calls(self) -> int:
        """Judge calls served from the call cache (free)."""
        return sum(u.cached_calls for u in self.usage.values())

    @property
    def complete(self) -> bool:
        """Whether every step of the build gave a usable answer."""
        return not self.failures


#: A planned build: everything checked and loaded, only the judge calls left.
Build = Callable[[ManagedJudge], Awaitable[Built]]
#: Checks a build's inputs (dimensions, seed files, task files) before any judge is loaded, and plans it.
Plan = Callable[[Dataset, list[str] | None, Any], Build]


@dataclass(frozen=True)
class ArtifactKind:
    """A buildable artifact: the method using it, its options model and how its build is planned."""

    method: str
    options: type[BaseModel]
    plan: Plan


def _plan_steps(dataset: Dataset, dimensions: list[str] | None, opts: StepsOptions) -> Build:
    """G-Eval's evaluation steps for each dimension; the file text exists only when every dimension has steps."""
    from assay.methods.geval.steps import generate_steps, steps_document

    dims = dataset.dimensions(dimensions)  # unknown names fail here

    async def build(judge: ManagedJudge) -> Built:
        entries, failures = {}, []
        for d in dims:
            entry, error = await generate_steps(judge, dataset.info, d, max_tokens=opts.max_tokens)
            if entry is None:
                failures.append(f"{judge.identity.label} wrote no usable steps for {d.name}: {error}")
            else:
                entries[d.name] = entry
        text = None if failures else steps_document(dataset.name, entries)
        return Built(entries, text, content_hash(text or ""), failures)

    return build


def _plan_checklist(dataset: Dataset, dimensions: list[str] | None, opts: ChecklistOptions) -> Build:
    """CheckEval's augmentation and filtering of the seed checklist; the text must load back before it is kept."""
    from assay.methods.checkeval.build import build_checklist
    from assay.methods.checkeval.checklist import checklist_hash, dump_checklist, parse_checklist
    from assay.methods.checkeval.shipped import default_checklist, load_checklist

    seeds = load_checklist(opts.seeds or default_checklist(dataset.info))
    for d in dimensions or []:
        seeds.dimension(d)  # unknown names fail here
    settings = BuildSettings(**opts.model_dump(exclude={"seeds", "name"}))

    async def build(judge: ManagedJudge) -> Built:
        built = await build_checklist(seeds, dataset.info, judge, settings, dimensions or None, opts.name)
        text = dump_checklist(built)
        parse_checklist(text, f"the checklist built from {seeds.name}")  # what is written must load back
        record = built.build
        return Built(built, text, checklist_hash(built), list(record.failures) if record else [],
                     list(record.notes) if record else [])

    return build


def _plan_rubric(dataset: Dataset, dimensions: list[str] | None, opts: RubricOptions) -> Build:
    """GER-Eval's rubric generation; a rubric without criteria is still written (its provenance says why)."""
    from assay.methods.gereval.generate import generate_rubric
    from assay.methods.gereval.rubric import TaskText, task_text

    if dimensions:
        raise ConfigError("a generated rubric brings its own criteria: leave dimensions out for 'rubric'")
    task = task_text(dataset.info)
    if opts.task_file is not None:
        own = _read_text(opts.task_file, "task_file")
        task = TaskText(generation=own, scoring=own, contrast_note=task.contrast_note, shipped=True)
    settings = GenerationSettings(**opts.model_dump(exclude={"task_file"}))

    async def build(judge: ManagedJudge) -> Built:
        rubric = await generate_rubric(dataset, judge, settings, task=task)
        failures = [] if rubric.criteria else ["no valid criteria: every answer was discarded "
                                               "(see provenance.discarded)"]
        return Built(rubric, rubric.to_json(), rubric.content_hash(), failures, list(rubric.provenance.notes))

    return build


#: The artifacts :func:`prepare` builds, by name.
ARTIFACTS: dict[str, ArtifactKind] = {
    "geval-steps": ArtifactKind("geval", StepsOptions, _plan_steps),
    "checklist": ArtifactKind("checkeval", ChecklistOptions, _plan_checklist),
    "rubric": ArtifactKind("gereval", RubricOptions, _plan_rubric),
}


def _read_text(path: Path, option: str) -> str:
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ConfigError(f"{option} {path}: cannot read it ({exc.strerror or exc})") from exc
    if not text:
        raise ConfigError(f"{option} {path}: the file is empty")
    return text


def _kind_and_options(artifact: str, options: dict[str, Any] | None) -> tuple[ArtifactKind, Any]:
    """The artifact's kind and its validated options: a typo is an error before the judge is loaded."""
    kind = ARTIFACTS.get(artifact)
    if kind is None:
        raise ConfigError(f"unknown artifact {artifact!r}; prepare builds: {', '.join(ARTIFACTS)}."
                          + did_you_mean(artifact, list(ARTIFACTS)))
    try:
        return kind, kind.options.model_validate(options or {})
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'options'}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"options of {artifact!r}: {problems}") from exc


async def prepare_async(
    artifact: str,
    *,
    dataset: Dataset | str,
    judge: str | Judge = DEFAULT_JUDGE,
    dimensions: list[str] | None = None,
    options: dict[str, Any] | None = None,
    out: str | Path | None = None,
    cache_dir: str | Path | None = None,
    judge_options: dict[str, Any] | None = None,
    retry: RetryPolicy | None = None,
    on_status: Callable[[str], None] | None = None,
) -> PrepareResult:
    """Build a method's artifact with a judge, once, outside a run: G-Eval steps, a CheckEval checklist, a rubric.

    :func:`prepare` is this coroutine run to completion (``asyncio.run``); await this form from a running loop.
    Options, dimensions and files (seed checklist, task file) are checked before the judge is loaded, so a typo
    costs nothing; the judge, the call cache and the event loop are opened and closed here, in one place.

    Args:
        artifact: ``geval-steps`` (for ``--method geval --steps FILE``), ``checklist`` (``--method checkeval
            --checklist FILE``) or ``rubric`` (``--method gereval --rubric FILE``); see :data:`ARTIFACTS`.
        dataset: A Dataset or a dataset spec for :func:`assay.datasets.load_dataset`.
        judge: A judge spec string, loaded and closed by this call, or a Judge object, which stays open.
        dimensions: The dimensions to build for (steps: the dataset's default ones; checklist: all of the seed
            checklist's); a rubric brings its own criteria and takes none.
        options: The artifact's options, validated (unknown keys are an error): ``geval-steps``:
            :class:`StepsOptions`; ``checklist``: :class:`ChecklistOptions`; ``rubric``: :class:`RubricOptions`.
        out: Write the artifact's file here (parents created). Steps are written only when every dimension got
            steps; a checklist or a rubric is written even with failures, which the file records.
        cache_dir: A directory keeping a call cache (a run store): a re-run with the same settings pays nothing.
        judge_options: Backend options (``n_threads``, ``timeout``, ...).
        retry: Retry and timeout policy of the judge calls.
        on_status: Called with lines saying what the build is doing (loading the judge, judge calls so far).

    Raises:
        ConfigError: An unknown artifact, bad options or dimensions, an unreadable task file.
        InputError: A dataset or seed checklist file that cannot be read (file, record and field named).
    """
    import assay.judges as registry  # looked up at call time: tests swap ``assay.judges.load_judge``

    kind, opts = _kind_and_options(artifact, options)
    data = load_dataset(dataset) if isinstance(dataset, str) else dataset
    build = kind.plan(data, dimensions, opts)  # every input checked before the judge is loaded
    status = on_status or (lambda message: None)
    owns_judge = isinstance(judge, str)
    if owns_judge:
        status(f"loading judge {judge}")
    bare = registry.load_judge(judge, **(judge_options or {})) if isinstance(judge, str) else judge
    store = None
    try:
        if cache_dir is not None:
            from assay.run.store import RunStore

            store = RunStore(cache_dir)
        managed = ManagedJudge(bare, cache=store.calls if store is not None else None, retry=retry)
        built = await preparing(build(managed), artifact, managed, status)
    finally:
        if owns_judge:
            await bare.aclose()
        if store is not None:
            store.close()
    path = _write(built.text, out)
    return PrepareResult(artifact=artifact, method=kind.method, value=built.value, text=built.text,
                         sha256=built.sha256, path=path, usage=dict(managed.ledger.by_stage),
                         failures=built.failures, notes=built.notes)


def _write(text: str | None, out: str | Path | None) -> Path | None:
    if text is None or out is None:
        return None
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


#: :func:`prepare_async` run to completion: the same keywords, written once.
prepare = blocking(prepare_async)
