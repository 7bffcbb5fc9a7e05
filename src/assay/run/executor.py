"""The asyncio executor: runs the (sample, dimension) units of a run, writing each judgment as it completes."""

from __future__ import annotations

import asyncio
import gc
import re
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field

from assay.errors import FatalJudgeError, JudgeError
from assay.judges.ask import attributed
from assay.judges.middleware import ManagedJudge
from assay.judges.tokens import common_prefix
from assay.methods.base import Method, RunContext
from assay.run.store import RunStore
from assay.types import Dimension, Judgment, Sample

Unit = tuple[Sample, Dimension]

#: The cyclic garbage collector's first threshold while units are judged (Python's default is 700 allocations).
#: A run keeps the objects of hundreds of requests in flight alive, so that each young collection traverses them
#: for little garbage: at the default, collections took 8-9% of a 6,400-unit run's CPU (0.44 s in 650
#: collections), at this threshold 0.7% (0.03 s in 108); see docs/benchmarks.md.
JUDGING_GC_THRESHOLD = 50_000


@contextmanager
def young_collections() -> Iterator[None]:
    """While judging, collect the young generation every :data:`JUDGING_GC_THRESHOLD` allocations; the
    collector's thresholds are restored after (they are the process's: a library run leaves them as it found
    them)."""
    before = gc.get_threshold()
    gc.set_threshold(max(before[0], JUDGING_GC_THRESHOLD), *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)


def order_units(samples: list[Sample], dimensions: list[Dimension], done: set[tuple[str, str]], *,
                by: str = "sample") -> list[Unit]:
    """The units still to do, ordered so that consecutive prompts share the longest prefix.

    Samples of the same source document are always kept together (in file order). With
    ``by="sample"`` all dimensions of a sample follow each other: best when a prompt puts the
    source, then the output, then the dimension's instructions. With ``by="dimension"`` one
    dimension runs over all outputs of a document before the next dimension: best when the
    dimension's instructions come before the source (G-Eval's layout), so that consecutive
    prompts differ only in the output.
    """
    if by not in ("sample", "dimension"):
        raise ValueError(f"unit order must be 'sample' or 'dimension', not {by!r}")
    first_seen: dict[str, int] = {}
    for i, s in enumerate(samples):
        first_seen.setdefault(s.doc_id, i)
    ordered = [s for _, s in sorted(enumerate(samples), key=lambda p: (first_seen[p[1].doc_id], p[0]))]
    if by == "sample":
        return [(s, d) for s in ordered for d in dimensions if (s.id, d.name) not in done]
    units: list[Unit] = []
    start = 0
    while start < len(ordered):
        end = start
        while end < len(ordered) and ordered[end].doc_id == ordered[start].doc_id:
            end += 1
        units += [(s, d) for d in dimensions for s in ordered[start:end] if (s.id, d.name) not in done]
        start = end
    return units


def prefix_reuse(prompts: Iterable[Sequence[Hashable]]) -> float:
    """The share of prompt tokens a prefix cache holding only the previous request could serve.

    Each prompt (a token sequence, in the order the requests are sent) reuses the prefix it shares with
    the one before it, as a llama.cpp server or the embedded judge do with their single KV cache. This is
    what unit order and prompt layout are chosen to maximise; the first prompt reuses nothing.

    Returns:
        Reused tokens over all prompt tokens (0.0 for no tokens).
    """
    total = reused = 0
    previous: Sequence[Hashable] = ()
    for tokens in prompts:
        total += len(tokens)
        reused += common_prefix(previous, tokens)
        previous = tokens
    return reused / total if total else 0.0


_WORDS = re.compile(r"\w+|[^\w\s]")


def text_tokens(text: str) -> list[str]:
    """Words and punctuation marks of a text: a model-free stand-in for a tokenizer when measuring
    :func:`prefix_reuse` (a shared word prefix is a shared token prefix up to the last word or so)."""
    return _WORDS.findall(text)


@dataclass
class Progress:
    """Counters the executor updates and a progress display reads.

    Attributes:
        total: Units this session set out to do.
        done: Units with a stored answer (scored or parse-failed).
        failed: Units whose judge calls failed after all retries (stored as failed, retried on resume).
        unscored: Done units without a score (parse failures).
        errors: The first few failed units, ``sample / dimension: error``.
    """

    total: int
    done: int = 0
    failed: int = 0
    unscored: int = 0
    errors: list[str] = field(default_factory=list)


def failed_judgment(method: Method, sample: Sample, dim: Dimension, judge: str, exc: JudgeError) -> Judgment:
    """The record of a unit whose judge calls failed: no score, the error and the attempts of the call that
    gave up, so that it is counted (coverage, exit code) instead of vanishing, and retried on resume."""
    return Judgment(sample_id=sample.id, dimension=dim.name, method=method.name, judge=judge, score=None,
                    status="failed", error=str(exc) or type(exc).__name__,
                    trace={"attempts": exc.attempts, "error_type": type(exc).__name__, **(exc.trace or {})})


async def execute(
    method: Method,
    units: list[Unit],
    ctx: RunContext,
    store: RunStore,
    *,
    concurrency: int,
    on_update: Callable[[Progress], None] | None = None,
    unit_scope: Callable[[], AbstractContextManager[object]] | None = None,
) -> tuple[list[Judgment], Progress]:
    """Run the units with ``concurrency`` workers, in order, storing each judgment once.

    A unit whose judge calls fail after all retries is stored as ``failed`` with its error and
    attempts (a re-run retries it); a fatal judge error (bad key, unknown model) stops the run at once.
    ``unit_scope`` is opened around each unit's scoring (a batch judge counts the live units with it).
    """
    queue: asyncio.Queue[Unit] = asyncio.Queue()
    for u in units:
        queue.put_nowait(u)
    progress = Progress(total=len(units))
    results: list[Judgment] = []

    async def worker() -> None:
        while True:
            try:
                sample, dim = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            try:
                with attributed(), (unit_scope or nullcontext)():
                    j = await method.score(sample, dim, ctx)
            except FatalJudgeError:
                raise
            except JudgeError as exc:
                j = failed_judgment(method, sample, dim, ctx.judge.identity.label, exc)
                store.add_judgment(j)
                results.append(j)
                progress.failed += 1
                if len(progress.errors) < 5:
                    progress.errors.append(f"{sample.id} / {dim.name}: {exc}")
            else:
                store.add_judgment(j)
                results.append(j)
                progress.done += 1
                progress.unscored += j.score is None
            if on_update:
                on_update(progress)

    workers = [asyncio.create_task(worker()) for _ in range(max(1, min(concurrency, len(units) or 1)))]
    try:
        await asyncio.gather(*workers)
    finally:
        for w in workers:
            w.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
    return results, progress


def default_unit_concurrency(judge: ManagedJudge, method: Method | None = None) -> int:
    """Units in flight: twice the judge's call slots where a unit's calls come one after another (the method's
    :attr:`~assay.methods.base.Method.sequential_calls`), so that a unit preparing its next call leaves no slot
    idle; as many as the slots where a unit asks once or all at once.

    More units than slots would then only queue them on the slots' semaphore: each such wait and wake-up cost CPU
    for nothing (7% of a 6,400-unit direct run's, docs/benchmarks.md).
    """
    if judge.concurrency == 1 or (method is not None and not method.sequential_calls):
        return judge.concurrency
    return 2 * judge.concurrency
