"""The run database's checkpoints: made by a thread beside the writer, the WAL bounded, nothing lost, none left."""

from __future__ import annotations

import asyncio
import gc
import sqlite3
import threading

from assay.judges.base import JudgeIdentity, Request, Response
from assay.run import checkpoints
from assay.run.store import DB_NAME, RunStore


def _threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name == "assay-checkpoints"]


def test_a_writing_store_leaves_its_checkpoints_to_a_thread_and_removes_the_wal_at_close(tmp_path):
    before = len(_threads())
    store = RunStore(tmp_path)
    assert store._db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0  # never in the event loop's thread
    assert len(_threads()) == before + 1
    store.close()
    assert len(_threads()) == before
    assert not (tmp_path / f"{DB_NAME}-wal").exists()
    with RunStore(tmp_path, readonly=True):  # reading starts none
        assert len(_threads()) == before


def test_the_wal_stays_bounded_while_a_run_writes_and_every_answer_is_kept(tmp_path):
    """6,000 answered calls with 4 KB prompts (about 30 MB of WAL frames), committed turn by turn as a run commits
    them: the checkpointer copies them and restarts the WAL, which stays far smaller than what was written."""
    identity = JudgeIdentity(backend="scripted", model="x")
    response = Response.model_validate({"choices": [{"text": "3"}]})
    sizes: list[int] = []
    wal = tmp_path / f"{DB_NAME}-wal"

    async def main() -> tuple[int, int]:
        with RunStore(tmp_path) as store:
            for i in range(6000):
                request = Request.chat(f"{i} " + "x" * 4000, temperature=0)
                store.calls.put_call(f"key-{i}", identity, request, response)
                if i % 60 == 59:  # a turn's answers, then the loop waits for more: the turn is committed
                    await asyncio.sleep(0.02)
                    sizes.append(wal.stat().st_size)
            ckpt = store._checkpoints
            assert ckpt is not None and ckpt.error is None
            return ckpt.checkpoints, ckpt.restarts

    made, _ = asyncio.run(main())  # restarts: where a passive checkpoint found the writer idle, none was needed
    assert made > 0
    assert max(sizes) < 20_000_000  # written: over 24 MB of requests alone
    assert not wal.exists()
    with sqlite3.connect(tmp_path / DB_NAME) as db:
        assert db.execute("SELECT count(*) FROM calls").fetchone()[0] == 6000
        assert db.execute("PRAGMA quick_check").fetchone()[0] == "ok"


def test_a_failed_checkpoint_is_kept_and_the_next_is_tried(tmp_path, monkeypatch):
    """A checkpoint that raises (the disk full) neither ends the thread nor the run: the writer meets the condition
    at its own next commit."""
    monkeypatch.setattr(checkpoints, "CHECKPOINT_EVERY_S", 0.01)
    seen: set[int] = set()
    real = checkpoints.Checkpointer.checkpoint

    def flaky(self: checkpoints.Checkpointer) -> None:  # each checkpointer's first checkpoint fails
        if id(self) not in seen:
            seen.add(id(self))
            raise sqlite3.OperationalError("database or disk is full")
        real(self)

    monkeypatch.setattr(checkpoints.Checkpointer, "checkpoint", flaky)
    store = RunStore(tmp_path)
    try:
        ckpt = store._checkpoints
        assert ckpt is not None
        for _ in range(500):
            if ckpt.checkpoints:
                break
            threading.Event().wait(0.01)
        assert isinstance(ckpt.error, sqlite3.OperationalError) and ckpt.checkpoints > 0
    finally:
        store.close()


def test_a_store_never_closed_ends_its_thread_when_collected(tmp_path):
    before = len(_threads())
    store = RunStore(tmp_path)
    assert len(_threads()) == before + 1
    del store
    gc.collect()
    for _ in range(500):
        if len(_threads()) == before:
            break
        threading.Event().wait(0.01)
    assert len(_threads()) == before


def test_a_checkpoint_restarts_the_wal_once_it_holds_enough_frames(tmp_path, monkeypatch):
    """Under a run's steady writes a passive checkpoint seldom catches up with the writer, so that the WAL would never
    start again: past ``RESTART_FRAMES`` frames the checkpoint also restarts it; below, it does not."""
    monkeypatch.setattr(checkpoints, "CHECKPOINT_EVERY_S", 3600.0)  # the thread waits; the test checkpoints
    identity = JudgeIdentity(backend="scripted", model="x")
    response = Response.model_validate({"choices": [{"text": "3"}]})
    with RunStore(tmp_path) as store:
        ckpt = store._checkpoints
        assert ckpt is not None

        def write(first: int, n: int) -> None:
            for i in range(first, first + n):
                store.calls.put_call(f"key-{i}", identity, Request.chat(f"{i} " + "x" * 4000, temperature=0), response)

        write(0, 100)  # about 100 frames
        ckpt.checkpoint()
        assert (ckpt.checkpoints, ckpt.restarts) == (1, 0)
        write(100, checkpoints.RESTART_FRAMES + 100)
        ckpt.checkpoint()
        assert (ckpt.checkpoints, ckpt.restarts) == (2, 1)
