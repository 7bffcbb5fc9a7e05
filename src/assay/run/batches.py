"""The provider batches of a run (``--batch``): each uploaded input file, its batch and the calls it carries."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable
from typing import Any

from assay.judges.base import Request
from assay.run.turns import TurnWriter


class BatchRecords:
    """The ``batches`` and ``batch_calls`` tables of a run database (``store.batches``).

    A batch is recorded before it is created and again once created, so that a killed run polls the same
    batches on resume (:class:`assay.judges.batch.BatchJudge`) instead of submitting its calls again.

    Args:
        db: The store's connection (autocommit; the store owns and closes it).
        writes: The store's writer (explicit transactions commit the turn's writes first).
    """

    def __init__(self, db: sqlite3.Connection, writes: TurnWriter) -> None:
        self._db = db
        self._writes = writes

    def add(self, input_file: str, calls: Iterable[tuple[str, Request]]) -> None:
        """Record an uploaded input file and the calls it carries, before the batch is created from it."""
        now = time.time()
        with self._writes.transaction() as db:  # durable before the batch is created (and paid)
            db.execute("INSERT INTO batches (input_file, batch_id, status, created, updated) "
                       "VALUES (?, NULL, 'uploaded', ?, ?)", (input_file, now, now))
            db.executemany("INSERT OR IGNORE INTO batch_calls VALUES (?, ?, ?)",
                           [(input_file, key, req.model_dump_json()) for key, req in calls])

    def update(self, input_file: str, *, status: str, batch_id: str | None = None,
               detail: dict[str, Any] | None = None) -> None:
        """Update a batch's status (and its id once created, and what became of its requests)."""
        self._db.execute(
            "UPDATE batches SET status=?, batch_id=COALESCE(?, batch_id), updated=?, "
            "detail=COALESCE(?, detail) WHERE input_file=?",
            (status, batch_id, time.time(), None if detail is None else json.dumps(detail), input_file))

    def listed(self, *, live: bool = False) -> list[dict[str, Any]]:
        """The run's batches in order of creation (``live``: those whose results were not taken in yet)."""
        where = " WHERE status != 'done'" if live else ""
        rows = self._db.execute(
            f"SELECT input_file, batch_id, status, created, updated, detail FROM batches{where} ORDER BY rowid")
        return [{"input_file": f, "batch_id": b, "status": s, "created": c, "updated": u, "detail": json.loads(d)}
                for f, b, s, c, u, d in rows]

    def calls(self, input_file: str) -> list[tuple[str, Request]]:
        """The (call key, request) pairs a batch carries."""
        rows = self._db.execute("SELECT key, request FROM batch_calls WHERE input_file=? ORDER BY rowid",
                                (input_file,))
        return [(k, Request.model_validate_json(r)) for k, r in rows]
