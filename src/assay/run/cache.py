"""The call cache of a run: each judge call's answer under its key, so that a resumed run pays for no call twice."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator

from assay.judges.base import JudgeIdentity, Request, Response
from assay.run.turns import TurnWriter


class CallCache:
    """The ``calls`` table of a run database (:class:`assay.run.store.RunStore` hands it out as ``store.calls``).

    It satisfies the middleware's :class:`assay.judges.middleware.CallCache` protocol, so a managed judge reads
    and fills it directly; the replay judge and the viewer read it. Kept apart from the store so that the
    judgments' bookkeeping and the cache's do not share one class of forty methods.

    Args:
        db: The store's connection (autocommit; the store owns and closes it).
        writes: The store's writer (an answer is committed with the other writes of its event-loop turn).
    """

    def __init__(self, db: sqlite3.Connection, writes: TurnWriter) -> None:
        self._db = db
        self._writes = writes

    def get_call(self, key: str) -> Response | None:
        """The recorded answer under ``key``, or None."""
        row = self._db.execute("SELECT response FROM calls WHERE key=?", (key,)).fetchone()
        return Response.model_validate_json(row[0]) if row else None

    def put_call(self, key: str, identity: JudgeIdentity, request: Request, response: Response) -> bool:
        """Record an answer; the first one under a key stays (a second writer's is ignored: False)."""
        return self._writes.execute(
            "INSERT OR IGNORE INTO calls VALUES (?, ?, ?, ?, ?)",
            (key, identity.label, request.model_dump_json(), response.model_dump_json(), time.time())).rowcount == 1

    def requests(self) -> Iterator[Request]:
        """The requests of the recorded calls, in order (the replay judge's error search, the viewer)."""
        for (text,) in self._db.execute("SELECT request FROM calls ORDER BY rowid"):
            yield Request.model_validate_json(text)
