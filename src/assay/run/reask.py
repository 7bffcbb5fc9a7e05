"""Re-asking parse-failed units on resume (``--retry-parse-failures``): a new attempt, its own keys, the old kept."""

from __future__ import annotations

from typing import Any

from assay.judges.middleware import reask_attempt
from assay.methods.base import Method, RunContext
from assay.run.store import RunStore
from assay.types import Dimension, Judgment, Sample


def parse_failures(store: RunStore) -> dict[tuple[str, str], Judgment]:
    """The run's parse-failed judgments by unit (sample id, dimension): the units to re-ask."""
    return {(j.sample_id, j.dimension): j for j in store.judgments() if j.status == "parse_failed"}


class Reasking:
    """A method whose parse-failed units are asked again as a new attempt; every other unit as by the method.

    The attempt number goes into each request of the unit (:data:`assay.judges.middleware.reask_attempt`), so
    its calls have their own cache keys: the call cache cannot hand back the answer that failed to parse, and a
    further ``--retry-parse-failures`` asks again. The new judgment's trace records ``attempt`` and, under
    ``previous_attempts``, every earlier attempt's error and trace (its answers); the store replaces the
    parse-failed row by it (:meth:`assay.run.store.RunStore.add_judgment`).

    Args:
        method: The run's method.
        previous: The parse-failed judgments to re-ask (:func:`parse_failures`).
    """

    def __init__(self, method: Method, previous: dict[tuple[str, str], Judgment]) -> None:
        self._method = method
        self.previous = previous

    def __getattr__(self, name: str) -> Any:  # everything else is the method's own
        if name.startswith("__") or name == "_method":  # unpickling (Ray) looks these up before __init__ ran
            raise AttributeError(name)
        return getattr(self._method, name)

    async def score(self, sample: Sample, dimension: Dimension, ctx: RunContext) -> Judgment:
        old = self.previous.get((sample.id, dimension.name))
        if old is None:
            return await self._method.score(sample, dimension, ctx)
        attempt = int(old.trace.get("attempt", 1)) + 1
        token = reask_attempt.set(attempt - 1)  # the first attempt is 0 in the keys: their keys are unchanged
        try:
            j = await self._method.score(sample, dimension, ctx)
        finally:
            reask_attempt.reset(token)
        earlier = [*old.trace.get("previous_attempts", []),
                   {"attempt": attempt - 1, "error": old.error,
                    "trace": {k: v for k, v in old.trace.items() if k != "previous_attempts"}}]
        return j.model_copy(update={"trace": {**j.trace, "attempt": attempt, "previous_attempts": earlier}})
