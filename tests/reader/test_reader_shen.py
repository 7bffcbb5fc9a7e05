"""The answer reader on 309 hand-checked answers of five real judges (Shen et al. 2023): no misreading, high agreement.

The answer texts are not in the repository (no licence): they are read from
``../shared/data/published/shen2023_summeval`` beside the repository root (or ``$ASSAY_SHEN2023``);
tests that need them are skipped, saying so, when that folder is absent. The expected readings and
their references are in ``tests/fixtures/reader/shen2023_expected.jsonl`` (see the README beside it).
"""

from __future__ import annotations

import importlib.util
import sys
from collections import Counter
from pathlib import Path

import pytest

from assay.answers import parsing
from published import TESTS

ROOT = TESTS.parent
_spec = importlib.util.spec_from_file_location("reader_shen", ROOT / "benchmarks" / "reader_shen.py")
bench = importlib.util.module_from_spec(_spec)
sys.modules["reader_shen"] = bench
_spec.loader.exec_module(bench)

DATA = bench.data_dir()
ENTRIES = bench.load_sample()
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=f"the Shen et al. 2023 answers are not at {DATA} "
                                                          "(../shared beside the repository, or $ASSAY_SHEN2023)")
# The share of hand-checked answers the reader must read as a person does (null == failure counts).
# Measured: the reader after the issue-13 follow-up 99.7% (308 of 309; the one failure is a llama-2-7b
# answer that states a fluency score of 5, then revises it to 4: two ratings, left ambiguous, see
# docs/benchmarks.md); the issue-13 reader 93.5% (289 of 309); the reader before issue 13 (0b33857)
# 74.0% of the 285 number and null entries, with 13 misreadings, and no letters. Raise it as the reader improves.
AGREEMENT_MIN = 0.99


def _readings() -> list[tuple[bench.Entry, object]]:
    """(entry, what the reader gives) for every entry it can read: letters need ``parsing.parse_choice``."""
    return bench.read_sample(parsing, ENTRIES, DATA)


def test_fixture_covers_every_judge_style_and_dimension() -> None:
    groups = Counter((e.judge, e.style, e.dimension) for e in ENTRIES)
    judges = {e.judge for e in ENTRIES}
    assert len(ENTRIES) >= 200
    assert len(judges) == 5
    assert {e.style for e in ENTRIES if e.judge == "gpt-3.5-turbo-0301"} == set(bench.STYLES)
    assert all(groups[(e.judge, e.style, d)] >= 3 for e in ENTRIES
               for d in ("coherence", "consistency", "fluency", "relevance"))
    assert sum(e.sample == "random" for e in ENTRIES) >= 90


def test_fixture_entries_are_well_formed() -> None:
    for e in ENTRIES:
        where = f"{e.file}:{e.line}"
        assert e.style == Path(e.file).stem.rpartition("_")[2] and e.judge == e.file.split("/")[0], where
        assert e.dimension == Path(e.file).stem.rpartition("_")[0], where
        if e.kind == "letter":
            assert e.style in bench.LETTER_STYLES and e.expected in bench.LETTERS, where
        elif e.kind == "number":
            assert e.style not in bench.LETTER_STYLES and 1 <= e.expected <= 5, where
        else:
            assert e.kind == "null" and e.expected is None and e.why, where
        assert len(e.why) < 200, f"{where}: 'why' says what is hard, it does not quote the answer"
    assert len({(e.file, e.line) for e in ENTRIES}) == len(ENTRIES)


@needs_data
def test_fixture_references_exist_and_ids_match() -> None:
    for e in ENTRIES:
        record = bench.read_record(DATA, e.file, e.line)
        assert record["id"] == e.id, f"{e.file}:{e.line} holds {record['id']}, the fixture says {e.id}"
        assert record["resp"].strip(), f"{e.file}:{e.line} is empty"


@needs_data
def test_reader_never_misreads_a_real_answer() -> None:
    wrong = [f"{e.judge} {e.file}:{e.line} expected {e.expected!r} ({e.why or 'plain'}), read {got!r}"
             for e, got in _readings() if bench.misreads(e.expected, got)]
    assert not wrong, f"{len(wrong)} answers misread:\n" + "\n".join(wrong)


@needs_data
def test_reader_agrees_with_the_hand_readings(capsys: pytest.CaptureFixture[str]) -> None:
    pairs = _readings()
    table = bench.sample_table("reader agreement on the Shen et al. 2023 hand-checked sample", pairs)
    with capsys.disabled():
        print("\n" + "\n".join(table))
    overall = bench.tally(pairs, lambda e: e.judge)["all"]
    assert overall.n == len(ENTRIES), "the letter answers were not read: assay.answers.parsing has no parse_choice"
    assert overall.agree / overall.n >= AGREEMENT_MIN, "\n".join(bench.wrong(pairs, DATA))
