"""Artifact builds: ``prepare`` loads the judge, opens the call cache, runs a method's build step and closes both.

One place for what ``assay geval steps``, ``assay checklist build`` and ``assay rubric generate`` each used to wire
themselves: the commands call :func:`prepare` and only print. The build steps stay in their method's package
(each method declares them in :attr:`assay.methods.base.Method.builds`: a plugin method's builds work the same);
this module only finds the build, validates its options, runs it with a managed judge and writes the file.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from assay.datasets import Dataset, load_dataset
from assay.errors import ConfigError, did_you_mean
from assay.judges import DEFAULT_JUDGE, Judge, ManagedJudge, RetryPolicy
from assay.methods import get_method, method_names
from assay.methods.base import ArtifactKind
from assay.run.session import blocking, preparing
from assay.types import Usage


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


def artifact_builds() -> dict[str, tuple[str, ArtifactKind]]:
    """Every artifact a registered method builds: name -> (the method, its kind). Each method is imported to ask it;
    a plugin that fails to load is left out here (its own error names it when it is asked for)."""
    found: dict[str, tuple[str, ArtifactKind]] = {}
    for name in method_names():
        try:
            builds = get_method(name).builds
        except ConfigError:
            continue
        for artifact, kind in builds.items():
            found.setdefault(artifact, (name, kind))
    return found


def _kind_and_options(artifact: str, options: dict[str, Any] | None) -> tuple[str, ArtifactKind, Any]:
    """The method, the artifact's kind and its validated options: a typo is an error before the judge is loaded."""
    known = artifact_builds()
    if artifact not in known:
        raise ConfigError(f"unknown artifact {artifact!r}; prepare builds: {', '.join(known)}."
                          + did_you_mean(artifact, list(known)))
    method, kind = known[artifact]
    try:
        return method, kind, kind.options.model_validate(options or {})
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
            --checklist FILE``) or ``rubric`` (``--method gereval --rubric FILE``); see :func:`artifact_builds`.
        dataset: A Dataset or a dataset spec for :func:`assay.datasets.load_dataset`.
        judge: A judge spec string, loaded and closed by this call, or a Judge object, which stays open.
        dimensions: The dimensions to build for (steps: the dataset's default ones; checklist: all of the seed
            checklist's); a rubric brings its own criteria and takes none.
        options: The artifact's options, validated (unknown keys are an error): ``geval-steps``:
            ``StepsOptions`` (``methods/geval/steps.py``); ``checklist``: ``ChecklistOptions``
            (``methods/checkeval/build.py``); ``rubric``: ``RubricOptions`` (``methods/gereval/generate.py``).
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

    method, kind, opts = _kind_and_options(artifact, options)
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
    return PrepareResult(artifact=artifact, method=method, value=built.value, text=built.text,
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
