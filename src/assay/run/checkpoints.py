"""The run database's WAL checkpoints, made by a thread beside the writer, so that judging never waits for them."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

#: Seconds between two checkpoints: a run at concurrency 256 writes a few megabytes of WAL a second.
CHECKPOINT_EVERY_S = 0.1
#: WAL frames (4 KB pages) from which a checkpoint also restarts the WAL, so that its file stops growing (a full
#: SummEval run's stays under 15 MB; without restarts it grew to 99 MB, three times the database).
RESTART_FRAMES = 1000
#: How long a restarting checkpoint may wait for a writer or a reader; it blocks new writers while it waits, so
#: that a reader holding an old snapshot (a viewer) must not hold the run's writes for long: it is tried again.
RESTART_WAIT_S = 0.05


class Checkpointer:
    """Copies the WAL of a run database into the database file beside the writer, every :data:`CHECKPOINT_EVERY_S`.

    SQLite checkpoints a WAL database itself when a commit leaves the WAL over 1,000 pages, in the committing
    thread, which for a run is the event loop's. A run writes a call's request (a few kilobytes) and a judgment per
    unit: a full SummEval run met about twenty checkpoints, each copying 4 MB and syncing two files while no answer
    was read and no request sent. The writer's connection therefore checkpoints never (``wal_autocheckpoint=0``, set
    by :class:`~assay.run.store.RunStore`), and this thread, with a connection of its own, makes PASSIVE checkpoints,
    which never wait for the writer nor block it (SQLite releases the interpreter lock while it copies and syncs).
    A passive checkpoint seldom copies the last frames (the writer goes on appending), so the WAL would never start
    again from its beginning: once it holds :data:`RESTART_FRAMES` frames, a RESTART checkpoint copies what is left
    and lets the writer's next transaction start the WAL again, waiting :data:`RESTART_WAIT_S` at most for the
    writer's transaction or a reader. What is committed is as durable as before (the WAL holds it until copied), and
    the writer's close still checkpoints the rest and removes the WAL.

    A checkpoint that fails (the disk full, the file gone) is kept in :attr:`error` and the next one is tried all the
    same: the writer meets the same condition at its next commit and raises it there.

    Args:
        db: The run database (in WAL mode).
    """

    def __init__(self, db: Path) -> None:
        self.error: sqlite3.Error | None = None
        self.checkpoints = 0
        self.restarts = 0
        self._stop = threading.Event()
        self._conn = sqlite3.connect(db, isolation_level=None, timeout=RESTART_WAIT_S, check_same_thread=False)
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._thread = threading.Thread(target=self._run, name="assay-checkpoints", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(CHECKPOINT_EVERY_S):
            try:
                self.checkpoint()
            except sqlite3.Error as exc:
                self.error = exc
        self._conn.close()  # the connection lives as long as the thread

    def checkpoint(self) -> None:
        """One passive checkpoint, and a restarting one where the WAL has grown to :data:`RESTART_FRAMES` frames."""
        _, frames, _ = self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        self.checkpoints += 1
        if frames >= RESTART_FRAMES:
            busy, _, _ = self._conn.execute("PRAGMA wal_checkpoint(RESTART)").fetchone()
            self.restarts += not busy

    def close(self) -> None:
        """Stop the thread (a checkpoint under way is finished; the thread closes its connection) and wait for it.
        Idempotent; called by the store's close, or when a store that was never closed is collected, from whichever
        thread collects it (this one's included, which then does not wait for itself)."""
        self._stop.set()
        if threading.current_thread() is not self._thread:
            self._thread.join()
