"""The run database's writes: those of one event-loop turn committed together, explicit transactions apart."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class TurnWriter:
    """Writes to a run database (an autocommit connection), each event-loop turn's in one transaction.

    A run at concurrency 256 stores a judgment and an answered call a few thousand times a second; committed
    one by one, SQLite's commit is most of each write's cost. Inside a running event loop the first write of a
    turn opens a transaction and schedules its commit with ``call_soon``: the writes made before the loop next
    waits (the answers that arrived together, their judgments) are committed at once, a millisecond later. A
    SIGKILL loses at most those, answers that arrived in the same turn: never more than the calls in flight,
    which a kill loses anyway (they are paid again on resume either way). Each statement still runs at once, so
    its result and its errors (a second judgment for a unit) reach the caller that wrote it. Outside a loop a
    write is committed on its own, as before.

    Args:
        db: The store's connection, opened with ``isolation_level=None`` (autocommit).
    """

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        self._open = False

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> sqlite3.Cursor:
        """Run one write statement in this turn's transaction (opened by the turn's first write); inside an explicit
        transaction (:meth:`transaction`), as part of it."""
        if not self._open and not self._db.in_transaction:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                return self._db.execute(sql, params)
            self._db.execute("BEGIN")
            self._open = True
            loop.call_soon(self.commit)
        return self._db.execute(sql, params)

    def commit(self) -> None:
        """Commit the turn's writes now (the scheduled commit, a store being closed, a transaction to begin)."""
        if self._open:
            self._open = False
            self._db.execute("COMMIT")

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """An explicit transaction (all or nothing): the turn's writes are committed first, on their own."""
        self.commit()
        self._db.execute("BEGIN")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")
