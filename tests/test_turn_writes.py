"""The run store's writes: one event-loop turn's committed together, durable at the next turn, errors at once."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

from assay.run.store import DB_NAME, RunStore
from assay.types import Judgment


def _judgment(sample: str, score: float | None = 3.0) -> Judgment:
    return Judgment(sample_id=sample, dimension="coherence", method="direct", judge="scripted:x", score=score,
                    status="scored" if score is not None else "failed")


def _committed(run_dir) -> set[str]:
    """The units another connection sees: what is committed, not what the writer holds in its transaction."""
    with sqlite3.connect(run_dir / DB_NAME) as other:
        return {row[0] for row in other.execute("SELECT sample_id FROM judgments")}


def test_outside_a_loop_each_write_is_committed_at_once(tmp_path):
    with RunStore(tmp_path) as store:
        store.add_judgment(_judgment("a"))
        assert _committed(tmp_path) == {"a"}


def test_a_turns_writes_are_committed_together_at_the_next_turn(tmp_path):
    async def main() -> list[set[str]]:
        seen = []
        with RunStore(tmp_path) as store:
            store.add_judgment(_judgment("a"))
            store.add_judgment(_judgment("b"))
            seen.append(_committed(tmp_path))  # same turn: still in the writer's transaction
            await asyncio.sleep(0)  # one turn
            seen.append(_committed(tmp_path))
            store.add_judgment(_judgment("c"))
            await asyncio.sleep(0)
            seen.append(_committed(tmp_path))
        return seen

    assert asyncio.run(main()) == [set(), {"a", "b"}, {"a", "b", "c"}]


def test_a_second_judgment_fails_at_once_inside_a_turn_and_the_turn_still_commits(tmp_path):
    async def main() -> None:
        with RunStore(tmp_path) as store:
            store.add_judgment(_judgment("a"))
            with pytest.raises(sqlite3.IntegrityError, match="stored already"):
                store.add_judgment(_judgment("a", 4.0))
            store.add_judgment(_judgment("b"))
            await asyncio.sleep(0)
            assert _committed(tmp_path) == {"a", "b"}

    asyncio.run(main())
    with RunStore(tmp_path, readonly=True) as store:
        assert {(j.sample_id, j.score) for j in store.judgments()} == {("a", 3.0), ("b", 3.0)}


def test_closing_commits_a_turn_that_never_reached_its_commit(tmp_path):
    async def main() -> None:
        store = RunStore(tmp_path)
        store.add_judgment(_judgment("a"))
        store.close()  # in the same turn: the scheduled commit finds nothing left to do

    asyncio.run(main())
    assert _committed(tmp_path) == {"a"}


def test_an_explicit_transaction_commits_the_turn_first_and_rolls_back_alone(tmp_path):
    async def main() -> None:
        with RunStore(tmp_path) as store:
            store.add_judgment(_judgment("a"))
            with pytest.raises(RuntimeError), store.writes.transaction() as db:
                db.execute("INSERT INTO notes VALUES ('k', 'm', 1)")
                raise RuntimeError("cut short")
            assert _committed(tmp_path) == {"a"}  # committed before the transaction began, kept after its rollback
            assert store.notes() == []

    asyncio.run(main())


def test_a_write_inside_an_explicit_transaction_is_part_of_it(tmp_path):
    async def main() -> None:
        with RunStore(tmp_path) as store:
            with pytest.raises(RuntimeError), store.writes.transaction():
                store.add_judgment(_judgment("a"))  # no second BEGIN: it joins, and goes with the rollback
                raise RuntimeError("cut short")
            await asyncio.sleep(0)
            assert _committed(tmp_path) == set()
            store.add_judgment(_judgment("b"))
            await asyncio.sleep(0)
            assert _committed(tmp_path) == {"b"}

    asyncio.run(main())
