"""A judge that answers every request from the calls recorded in an earlier run, and nothing else."""

from __future__ import annotations

from pathlib import Path

from assay.errors import AssayError, ReplayMissError
from assay.judges.base import Judge, JudgeIdentity, JudgeOptions, Request, Response
from assay.judges.middleware import call_key


class ReplayJudge(Judge):
    """Re-answers a recorded run's calls, so that a run can be re-scored offline without new calls.

    It speaks with the recorded judge's identity (so cache keys line up) under backend
    ``replay``; a request the recorded run never made is an error naming it.

    Args:
        run_dir: The run directory whose call cache is replayed.
    """

    default_concurrency = 32
    paid = False  # re-answering a recorded call pays nothing
    Options = JudgeOptions  # none

    def __init__(self, run_dir: str | Path) -> None:
        from assay.run.store import RunStore

        self._store = RunStore(run_dir, readonly=True)
        manifest = self._store.manifest()
        if not manifest or "judge" not in manifest:
            raise AssayError(f"{run_dir}: no recorded judge in the run manifest; nothing to replay")
        self.recorded = JudgeIdentity.model_validate(manifest["judge"])
        self.supports_logprobs = bool(manifest.get("judge_logprobs", False))
        recorded_format = manifest.get("answer_format") or {}
        self.supports_schema = recorded_format.get("used") == "json"  # the recorded run's requests, schemas and all
        self.schema_reason = f"replay: the recorded run answered in {recorded_format.get('used', 'free')} format"
        self.identity = JudgeIdentity(
            backend="replay", model=self.recorded.model, base_url=None,
            model_sha256=self.recorded.model_sha256, settings={"replays": self.recorded.label, "run": str(run_dir)},
        )

    async def generate(self, request: Request) -> Response:
        hit = self._store.calls.get_call(call_key(self.recorded, request))
        if hit is None:
            raise ReplayMissError(
                f"replay: the recorded run never made this call (temperature={request.temperature}, "
                f"n={request.n}, sample_index={request.sample_index}); {self._nearest(request)}")
        return hit

    def _nearest(self, request: Request) -> str:
        """Where the request parts from the most similar recorded one, so that the miss can be found."""
        asked = _text(request)
        best: Request | None = None
        shared = -1
        for recorded in self._store.calls.requests():
            n = shared_prefix(asked, _text(recorded))
            if n > shared:
                best, shared = recorded, n
        if best is None:
            return "the recorded run holds no calls"
        if shared == len(asked) == len(_text(best)):
            ours, theirs = request.key_payload(), best.key_payload()
            diff = ", ".join(f"{k}={ours[k]!r} (recorded {theirs[k]!r})"
                             for k in ours if k != "messages" and ours[k] != theirs[k])
            return f"a recorded call has the same messages but other settings: {diff}"
        start = max(0, shared - 60)
        return (f"asked ...{asked[start:shared + 60]!r}..., where the closest recorded call has "
                f"...{_text(best)[start:shared + 60]!r}... (they part at character {shared})")

    async def aclose(self) -> None:
        self._store.close()


def _text(request: Request) -> str:
    return "\n\n".join(f"[{m.role}] {m.content}" for m in request.messages)


def shared_prefix(a: str, b: str) -> int:
    """How many leading characters two texts share."""
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
