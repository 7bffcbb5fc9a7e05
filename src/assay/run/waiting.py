"""Waiting on async work from the API: a coroutine's blocking form, and a preparation that reports progress."""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable
from typing import ParamSpec, TypeVar

from assay.judges import ManagedJudge

P = ParamSpec("P")
R = TypeVar("R")


def blocking(coroutine: Callable[P, Awaitable[R]]) -> Callable[P, R]:
    """The blocking form of an API coroutine: same signature and docstring, run with ``asyncio.run``."""
    @functools.wraps(coroutine)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        return asyncio.run(coroutine(*args, **kwargs))  # type: ignore[arg-type]
    run.__name__ = run.__qualname__ = coroutine.__name__.removesuffix("_async")
    return run


async def preparing(prepare: Awaitable[R], method: str, judge: ManagedJudge,
                    status: Callable[[str], None], every_s: float = 0.5) -> R:
    """Await a method's preparation (a run's, or :func:`assay.prepare`'s build), saying every ``every_s``
    seconds how many judge calls it has made, so that a long build never looks like a hang."""
    task = asyncio.ensure_future(prepare)
    started = time.monotonic()
    status(f"preparing {method} (artifacts: steps, checklists, rubrics, ...)")
    while not task.done():
        await asyncio.wait({task}, timeout=every_s)
        if not task.done():
            u = judge.ledger.total()
            status(f"preparing {method}: {u.calls} judge call(s) so far ({u.cached_calls} from cache), "
                   f"{time.monotonic() - started:.0f} s")
    return task.result()
