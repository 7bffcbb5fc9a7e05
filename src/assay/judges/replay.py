"""A judge that answers every request from the calls recorded in an earlier run, and nothing else."""

from __future__ import annotations

from pathlib import Path

from assay.errors import AssayError, ReplayMissError
from assay.judges.base import Judge, JudgeIdentity, Request, Response
from assay.judges.middleware import call_key


class ReplayJudge(Judge):
    """Re-answers a recorded run's calls, so that a run can be re-scored offline without new calls.

    It speaks with the recorded judge's identity (so cache keys line up) under backend
    ``replay``; a request the recorded run never made is an error naming it.

    Args:
        run_dir: The run directory whose call cache is replayed.
    """

    default_concurrency = 32

    def __init__(self, run_dir: str | Path) -> None:
        from assay.store import RunStore

        self._store = RunStore(run_dir, readonly=True)
        manifest = self._store.manifest()
        if not manifest or "judge" not in manifest:
            raise AssayError(f"{run_dir}: no recorded judge in the run manifest; nothing to replay")
        self.recorded = JudgeIdentity.model_validate(manifest["judge"])
        self.supports_logprobs = bool(manifest.get("judge_logprobs", False))
        self.identity = JudgeIdentity(
            backend="replay", model=self.recorded.model, base_url=None,
            model_sha256=self.recorded.model_sha256, settings={"replays": self.recorded.label, "run": str(run_dir)},
        )

    async def generate(self, request: Request) -> Response:
        hit = self._store.get_call(call_key(self.recorded, request))
        if hit is None:
            last = request.messages[-1].content
            snippet = (last[:120] + "...") if len(last) > 120 else last
            raise ReplayMissError(
                f"replay: the recorded run never made this call (temperature={request.temperature}, "
                f"n={request.n}, sample_index={request.sample_index}); last message starts: {snippet!r}")
        return hit

    async def aclose(self) -> None:
        self._store.close()
