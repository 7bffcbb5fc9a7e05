"""Answers that arrived after a killed driver: kept by the Ray actors in side files, taken into the cache next run."""

from __future__ import annotations

import json
import os
from pathlib import Path

from assay.judges.base import JudgeIdentity, Request, Response
from assay.run.store import RunStore

#: The folder of the run directory where Ray actors keep answers their dead driver can no longer store.
LATE_CALLS = "late-calls"


def late_call_line(key: str, request: Request, response: Response) -> str:
    """One kept answer as a JSONL line: the call key, the request and the response, as the call cache holds them."""
    return json.dumps({"key": key, "request": request.model_dump(mode="json"),
                       "response": response.model_dump(mode="json")}) + "\n"


def take_late_calls(store: RunStore, identity: JudgeIdentity) -> int:
    """Take the answers kept in the run's side files into its call cache (the driver, the store's one writer).

    Each file is renamed before it is read, so that an actor of the dead driver still appending (Ray ends them
    about 1.5 s after the driver) starts a new file, taken in by the next run, instead of writing into one being
    read; it is removed once its answers are stored. A line cut short by a killed actor is skipped.

    Args:
        store: The run's store, open for writing.
        identity: The run's judge (recorded with each call; the key already names the judge it answers).

    Returns:
        How many answers were new to the cache (an actor also keeps answers its driver stored but had not yet
        confirmed: those are skipped).
    """
    folder = Path(store.run_dir) / LATE_CALLS
    if not folder.is_dir():
        return 0
    taken = 0
    for path in sorted([*folder.glob("*.taking"), *folder.glob("*.jsonl")]):  # .taking: a take-in cut short
        reading = path.with_suffix(".taking")
        os.replace(path, reading)
        for line in reading.read_text(encoding="utf-8").splitlines():
            try:
                obj = json.loads(line)
                request, response = Request.model_validate(obj["request"]), Response.model_validate(obj["response"])
            except (ValueError, KeyError, TypeError):
                continue
            taken += store.calls.put_call(obj["key"], identity, request, response)
        reading.unlink()
    return taken
