"""The executor on its own: unit order for prefix reuse, and running units (storage, failures, the concurrency
bound, progress, per-judgment usage) with a tiny method over a scripted judge."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from assay.datasets import Dataset
from assay.errors import FatalJudgeError, TransientJudgeError
from assay.judges.ask import ask
from assay.judges.base import Request
from assay.judges.middleware import ManagedJudge, RetryPolicy
from assay.judges.scripted import ScriptedJudge
from assay.methods.base import Method, RunContext
from assay.run.executor import Progress, execute, order_units
from assay.run.store import RunStore
from assay.types import Dimension, Judgment, Sample

DIMS = [Dimension(name="a", definition="first"), Dimension(name="b", definition="second")]
# documents interleaved in file order: x, y, x, y
SAMPLES = [Sample(id=f"s{i}", doc_id="xy"[i % 2], output=f"output {i}", source=f"doc {'xy'[i % 2]}")
           for i in range(4)]


def _ids(units: list[tuple[Sample, Dimension]]) -> list[str]:
    return [f"{s.id}/{d.name}" for s, d in units]


def test_order_by_sample_keeps_documents_together_and_dimensions_in_a_row() -> None:
    units = order_units(SAMPLES, DIMS, set(), by="sample")
    assert _ids(units) == ["s0/a", "s0/b", "s2/a", "s2/b", "s1/a", "s1/b", "s3/a", "s3/b"]


def test_order_by_dimension_runs_one_dimension_over_a_documents_outputs() -> None:
    units = order_units(SAMPLES, DIMS, set(), by="dimension")
    assert _ids(units) == ["s0/a", "s2/a", "s0/b", "s2/b", "s1/a", "s3/a", "s1/b", "s3/b"]


@pytest.mark.parametrize("by", ["sample", "dimension"])
def test_done_units_are_skipped_in_either_order(by: str) -> None:
    done = {("s2", "a"), ("s1", "b"), ("s3", "a")}
    units = order_units(SAMPLES, DIMS, done, by=by)
    assert len(units) == 5 and not {(s.id, d.name) for s, d in units} & done
    assert _ids(units) == [u for u in _ids(order_units(SAMPLES, DIMS, set(), by=by))
                           if tuple(u.split("/")) not in done]


def test_an_unknown_order_is_refused() -> None:
    with pytest.raises(ValueError, match="'sample' or 'dimension'"):
        order_units(SAMPLES, DIMS, set(), by="doc")


class Counting(Method):
    """Asks ``1 + sample number`` questions per unit (stage "score") and scores the last answer as a number."""

    name = "counting-test"

    def __init__(self) -> None:
        super().__init__()
        self.in_flight = 0
        self.most_in_flight = 0

    async def score(self, sample: Sample, dimension: Dimension, ctx: RunContext) -> Judgment:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            answers = []
            for k in range(1 + int(sample.id[1:])):
                await asyncio.sleep(0.002)  # let other units interleave their calls with this one's
                got = await ask(ctx.judge, Request.chat(f"{sample.id} {dimension.name} question {k} " + "w " * k),
                                stage="score")
                answers.append(got.value)
        finally:
            self.in_flight -= 1
        if not answers[-1].isdigit():
            return self.judgment(sample, dimension, ctx, score=None, trace={}, error=f"unreadable: {answers[-1]}")
        return self.judgment(sample, dimension, ctx, score=float(answers[-1]), trace={"answers": answers})


def _answer(request: Request) -> str:
    prompt = request.messages[-1].content
    if prompt.startswith("s3 b"):
        raise TransientJudgeError("503 from the scripted server")
    if prompt.startswith("s1 a"):
        return "no idea"
    return "4"


def _run(tmp_path: Path, judge: ScriptedJudge, method: Method, *, concurrency: int,
         on_update: object = None) -> tuple[list[Judgment], Progress, RunStore]:
    store = RunStore(tmp_path / "run")
    managed = ManagedJudge(judge, retry=RetryPolicy(max_attempts=2, base_delay_s=0.0))
    ctx = RunContext(dataset=Dataset.from_samples(SAMPLES, DIMS), dimensions=DIMS, judge=managed)
    units = order_units(SAMPLES, DIMS, set())
    judgments, progress = asyncio.run(execute(method, units, ctx, store, concurrency=concurrency,
                                              on_update=on_update))  # type: ignore[arg-type]
    return judgments, progress, store


def test_every_unit_stored_once_failures_stored_and_counted(tmp_path: Path) -> None:
    updates: list[tuple[int, int, int]] = []
    judgments, progress, store = _run(tmp_path, ScriptedJudge(_answer), Counting(), concurrency=3,
                                      on_update=lambda p: updates.append((p.done, p.failed, p.unscored)))
    stored = {(j.sample_id, j.dimension): j for j in store.judgments()}
    assert len(store.judgments()) == 8 == len(stored) == len(judgments)
    assert {(j.sample_id, j.dimension) for j in judgments} == set(stored)
    failed = stored[("s3", "b")]
    assert failed.status == "failed" and failed.score is None and "503" in (failed.error or "")
    assert failed.trace == {"attempts": 2, "error_type": "JudgeError"}
    assert stored[("s1", "a")].status == "parse_failed" and stored[("s0", "b")].score == 4.0
    assert (progress.total, progress.done, progress.failed, progress.unscored) == (8, 7, 1, 1)
    assert progress.errors == [f"s3 / b: {failed.error}"]
    assert len(updates) == 8 and updates[-1] == (7, 1, 1)  # once per unit, failed ones included
    assert [d + f for d, f, _ in updates] == list(range(1, 9))
    assert store.done_units() == set(stored) - {("s3", "b")}  # the failed unit is retried on resume
    store.close()


def test_a_fatal_judge_error_stops_the_run(tmp_path: Path) -> None:
    def answer(request: Request) -> str:
        if request.messages[-1].content.startswith("s0 b"):
            raise FatalJudgeError("401: invalid API key")
        return "3"

    judge = ScriptedJudge(answer)
    with pytest.raises(FatalJudgeError, match="invalid API key"):
        _run(tmp_path, judge, Counting(), concurrency=1)
    with RunStore(tmp_path / "run", readonly=True) as store:
        assert [(j.sample_id, j.dimension) for j in store.judgments()] == [("s0", "a")]
    assert len(judge.requests) == 2  # no unit after the fatal one was started


@pytest.mark.parametrize("concurrency", [1, 3])
def test_units_in_flight_never_exceed_the_bound_and_reach_it(tmp_path: Path, concurrency: int) -> None:
    method = Counting()
    _run(tmp_path, ScriptedJudge(lambda r: "2"), method, concurrency=concurrency)
    assert method.most_in_flight == concurrency


def test_each_judgment_pays_exactly_its_own_calls(tmp_path: Path) -> None:
    judge = ScriptedJudge(lambda r: "5")
    judgments, _, store = _run(tmp_path, judge, Counting(), concurrency=4)
    for j in store.judgments():
        n = 1 + int(j.sample_id[1:])
        own = [r for r in judge.requests if r.messages[-1].content.startswith(f"{j.sample_id} {j.dimension} ")]
        assert j.usage["score"].calls == n == len(own)
        assert j.usage["score"].prompt_tokens == sum(len(r.messages[-1].content.split()) for r in own)
        assert j.usage["score"].completion_tokens == n
    total = sum(j.usage["score"].calls for j in judgments)
    assert total == len(judge.requests) == 2 * (1 + 2 + 3 + 4)
    store.close()


def test_judging_collects_the_young_generation_less_often_and_restores_the_thresholds(tmp_path):
    """Issue 28: the collector's first threshold is raised while units are judged (seen from inside a judge
    call), and a run leaves the process's thresholds as it found them, also when it fails."""
    import gc

    import assay
    from assay.datasets import load_dataset
    from assay.run.executor import JUDGING_GC_THRESHOLD, young_collections

    seen = []

    def answer(request):
        seen.append(gc.get_threshold())
        return "3"

    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 11, 12)
        assay.evaluate(load_dataset("summeval").select(limit=2), method="direct", judge=ScriptedJudge(answer),
                       dimensions=["coherence"], run_dir=tmp_path / "run")
        assert seen and all(t == (JUDGING_GC_THRESHOLD, 11, 12) for t in seen)
        assert gc.get_threshold() == (700, 11, 12)
        with pytest.raises(RuntimeError), young_collections():
            raise RuntimeError("a failed run")
        assert gc.get_threshold() == (700, 11, 12)
        gc.set_threshold(10**6, 11, 12)  # a process that set a higher one keeps it while judging
        with young_collections():
            assert gc.get_threshold() == (10**6, 11, 12)
    finally:
        gc.set_threshold(*before)


def test_units_in_flight_are_the_call_slots_unless_a_units_calls_come_in_turn(tmp_path: Path, monkeypatch) -> None:
    """Issue 28: a unit that asks once, or asks all of its calls at once, needs no more units in flight than the
    judge has call slots: more would only wait on the slots' semaphore (CPU for nothing). A method whose unit's
    calls come one after another (SEAL's stages) keeps twice as many, so that no slot idles. A wrapper around the
    method (re-asks, the context check) says what the method says."""
    import assay
    from assay.datasets import load_dataset
    from assay.methods import get_method, make_method
    from assay.run import session
    from assay.run.executor import default_unit_concurrency
    from assay.run.reask import Reasking

    judge = ManagedJudge(ScriptedJudge(lambda r: "3"), concurrency=5)
    for name, units in [("direct", 5), ("geval", 5), ("checkeval", 5), ("seal", 10)]:
        method = make_method(name)
        assert default_unit_concurrency(judge, method) == units, name
        assert default_unit_concurrency(judge, Reasking(method, {})) == units, name
    assert not get_method("gereval").sequential_calls and not get_method("pairwise").sequential_calls
    assert default_unit_concurrency(judge) == 10  # a method unknown: in turn, as a plugin's may be
    assert default_unit_concurrency(ManagedJudge(ScriptedJudge(lambda r: "3"), concurrency=1),
                                    make_method("seal")) == 1

    bounds = []
    real = session.execute

    async def spy(*args, **kwargs):
        bounds.append(kwargs["concurrency"])
        return await real(*args, **kwargs)

    monkeypatch.setattr(session, "execute", spy)
    data = load_dataset("summeval")
    assay.evaluate(data, method="direct", judge=ScriptedJudge(lambda r: "3"), run_dir=tmp_path / "run", concurrency=2,
                   limit=3)
    assert bounds == [2]


def test_on_plan_hears_the_units_of_the_run_before_the_judge_is_asked(tmp_path: Path) -> None:
    """``evaluate(on_plan=)``: samples x dimensions, done units included, before any judge call (the CLI starts its
    summary's helper there)."""
    import assay
    from assay.datasets import load_dataset

    judge = ScriptedJudge(lambda r: "3")
    heard: list[tuple[int, int]] = []
    data = load_dataset("summeval")
    for _ in range(2):  # the second time every unit is done already
        assay.evaluate(data, method="direct", judge=judge, run_dir=tmp_path / "run", limit=3,
                       on_plan=lambda units: heard.append((units, len(judge.requests))))
    assert heard == [(3 * 4, 0), (3 * 4, 3 * 4)]
