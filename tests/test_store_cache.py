"""The run store and the call cache: identical calls are free and identical, sampled calls stay distinct."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from pydantic import ValidationError

import assay
from assay.errors import ConfigError
from assay.judges.base import Choice, JudgeIdentity, Request, Response, TokenLogprobs, TopToken
from assay.judges.middleware import ManagedJudge
from assay.judges.scripted import ScriptedJudge
from assay.run.store import RunStore
from assay.types import Judgment


def counter_judge() -> ScriptedJudge:
    count = iter(range(1, 10_000))
    return ScriptedJudge(lambda req: f"answer {next(count)}")


async def test_identical_call_is_free_and_identical(tmp_path):
    store = RunStore(tmp_path)
    inner = counter_judge()
    judge = ManagedJudge(inner, cache=store.calls)
    req = Request.chat("same prompt", temperature=0)
    first = await judge.generate(req)
    second = await judge.generate(req)
    assert first.text == second.text == "answer 1"
    assert len(inner.requests) == 1
    assert second.from_cache and not first.from_cache
    assert judge.ledger.by_stage["score"].calls == 1 and judge.ledger.by_stage["score"].cached_calls == 1


async def test_sampled_calls_stay_distinct_per_sample_index(tmp_path):
    store = RunStore(tmp_path)
    inner = counter_judge()
    judge = ManagedJudge(inner, cache=store.calls)
    texts = [(await judge.generate(Request.chat("p", temperature=1.0, sample_index=i))).text for i in range(5)]
    assert len(set(texts)) == 5 and len(inner.requests) == 5
    again = [(await judge.generate(Request.chat("p", temperature=1.0, sample_index=i))).text for i in range(5)]
    assert again == texts and len(inner.requests) == 5


async def test_greedy_calls_ignore_sample_index(tmp_path):
    judge = ManagedJudge(counter_judge(), cache=RunStore(tmp_path).calls)
    a = await judge.generate(Request.chat("p", temperature=0, sample_index=0))
    b = await judge.generate(Request.chat("p", temperature=0, sample_index=3))
    assert a.text == b.text


@pytest.mark.parametrize("change", [
    {"temperature": 0.5}, {"top_p": 0.9}, {"max_tokens": 7}, {"n": 2}, {"seed": 1}, {"stop": ("\n",)},
    {"top_logprobs": 5}, {"json_mode": True}, {"system": "Be strict."}, {"prompt": "other prompt"},
])
def test_cache_key_covers_every_request_setting(change):
    from assay.judges.base import JudgeIdentity
    from assay.judges.middleware import call_key

    who = JudgeIdentity(backend="scripted", model="m")

    def request(**over):
        settings = {"prompt": "p", "system": None} | over
        return Request.chat(settings.pop("prompt"), **settings)

    assert call_key(who, request(**change)) != call_key(who, request())
    assert call_key(who, request(**change)) == call_key(who, request(**change))  # stable across objects


async def test_cache_key_includes_judge_identity(tmp_path):
    store = RunStore(tmp_path)
    a = ManagedJudge(ScriptedJudge(lambda r: "from a", name="a"), cache=store.calls)
    b = ManagedJudge(ScriptedJudge(lambda r: "from b", name="b"), cache=store.calls)
    req = Request.chat("p")
    assert (await a.generate(req)).text == "from a"
    assert (await b.generate(req)).text == "from b"


def test_cache_survives_reopening(tmp_path):
    import asyncio

    async def go() -> str:
        store = RunStore(tmp_path)
        judge = ManagedJudge(counter_judge(), cache=store.calls)
        text = (await judge.generate(Request.chat("persist me"))).text
        store.close()
        return text

    first = asyncio.run(go())
    second = asyncio.run(go())
    assert first == second == "answer 1"


def test_cached_log_probabilities_are_pairs_and_older_objects_still_read(tmp_path):
    """Top tokens are stored as ``["token", logprob]``; a row an older assay wrote as objects reads the same, and a
    top token with a key of its own is refused (the cache holds only what a judge answered)."""
    top = [TopToken(token="4", logprob=-0.1), TopToken(token="3", logprob=-2.5)]
    response = Response(choices=[Choice(text="4", logprobs=[TokenLogprobs(token="4", logprob=-0.1, top=top)])])
    request, identity = Request.chat("rate it"), JudgeIdentity(backend="scripted", model="m")
    with RunStore(tmp_path) as store:
        store.calls.put_call("new", identity, request, response)
        older = json.loads(response.model_dump_json())
        older["choices"][0]["logprobs"][0]["top"] = [{"token": t.token, "logprob": t.logprob} for t in top]
        store.calls.put_call("old", identity, request, Response.model_validate(older))
        store._db.execute("UPDATE calls SET response=? WHERE key='old'", (json.dumps(older),))
        stored = json.loads(store._db.execute("SELECT response FROM calls WHERE key='new'").fetchone()[0])
        assert stored["choices"][0]["logprobs"][0]["top"] == [["4", -0.1], ["3", -2.5]]
        for key in ("new", "old"):
            got = store.calls.get_call(key)
            assert got is not None and got.choices[0].logprobs[0].top == top
            assert got.choices[0].logprobs[0].top[1].logprob == -2.5
    older["choices"][0]["logprobs"][0]["top"][0]["bytes"] = None
    with pytest.raises(ValidationError, match="bytes"):
        Response.model_validate(older)


def test_judgment_written_exactly_once(tmp_path):
    store = RunStore(tmp_path)
    j = Judgment(sample_id="s1", dimension="d", method="direct", judge="x", score=3.0)
    store.add_judgment(j)
    import sqlite3

    with pytest.raises(sqlite3.IntegrityError):
        store.add_judgment(j)
    assert len(store.judgments()) == 1


def test_manifest_mismatch_is_refused(tmp_path):
    store = RunStore(tmp_path)
    base = {"method": "direct", "method_settings": {}, "judge": {"model": "a"}, "dataset": {"name": "x"},
            "dimensions": ["d"]}
    assert store.begin(base) is False
    assert store.begin(dict(base)) is True
    with pytest.raises(ConfigError, match="method"):
        store.begin(base | {"method": "geval"})


def test_unscored_judgment_needs_a_reason():
    with pytest.raises(ValueError, match="must say why"):
        Judgment(sample_id="s", dimension="d", method="m", judge="j", score=None)


def test_evaluate_export_and_pandas(tmp_path, topical_chat):
    judge = ScriptedJudge(lambda req: "2")
    result = assay.evaluate(topical_chat, method="direct", judge=judge, limit=3, run_dir=tmp_path / "run",
                            dimensions=["naturalness", "engagingness"])
    assert len(result.judgments) == 6 and all(j.score == 2.0 for j in result.judgments)
    df = result.to_pandas()
    assert list(df["dimension"].unique()) == ["naturalness", "engagingness"]
    assert df["human"].notna().all()
    with RunStore(tmp_path / "run", readonly=True) as store:
        rows = [json.loads(line) for line in store.export(tmp_path / "j.jsonl", "jsonl").read_text().splitlines()]
        assert len(rows) == 6 and rows[0]["trace"]["answer"] == "2"
        assert len(pd.read_csv(store.export(tmp_path / "j.csv", "csv"))) == 6
        assert len(pd.read_parquet(store.export(tmp_path / "j.parquet", "parquet"))) == 6
        manifest = store.manifest()
    assert manifest["judge"]["backend"] == "scripted" and manifest["dataset"]["name"] == "topical-chat"
    assert manifest["assay_version"] == assay.__version__


def test_rerun_resumes_without_new_calls(tmp_path, topical_chat):
    judge = ScriptedJudge(lambda req: "3")
    assay.evaluate(topical_chat, method="direct", judge=judge, limit=2, run_dir=tmp_path)
    calls = len(judge.requests)
    again = assay.evaluate(topical_chat, method="direct", judge=judge, limit=2, run_dir=tmp_path)
    assert len(judge.requests) == calls
    assert again.resumed and len(again.judgments) == 8


def test_unparseable_answer_is_recorded_not_zero(tmp_path, topical_chat):
    judge = ScriptedJudge(lambda req: "I cannot decide.")
    result = assay.evaluate(topical_chat, method="direct", judge=judge, limit=1, run_dir=tmp_path,
                            dimensions=["coherence"])
    (j,) = result.judgments
    assert j.score is None and "no rating found" in j.error
    assert j.trace["answer"] == "I cannot decide."


async def test_cost_and_stage_accounting(tmp_path):
    from assay.judges.middleware import PriceTable

    prices = PriceTable(prompt_per_m={"scripted": 2.0}, completion_per_m={"scripted": 10.0})
    inner = ScriptedJudge(lambda req: "one two three")
    inner.identity = inner.identity.model_copy(update={"model": "scripted"})
    judge = ManagedJudge(inner, cache=RunStore(tmp_path).calls, prices=prices)
    await judge.generate(Request.chat("a b c d"), stage="steps")
    await judge.generate(Request.chat("e f"), stage="score")
    await judge.generate(Request.chat("e f"), stage="score")  # cached: free
    steps, score = judge.ledger.by_stage["steps"], judge.ledger.by_stage["score"]
    assert steps.prompt_tokens == 4 and steps.completion_tokens == 3
    assert steps.cost_usd == pytest.approx((4 * 2.0 + 3 * 10.0) / 1e6)
    assert score.calls == 1 and score.cached_calls == 1
    assert judge.ledger.total().cost_usd == pytest.approx((6 * 2.0 + 6 * 10.0) / 1e6)


def test_replayed_calls_cost_nothing(tmp_path):
    from assay.judges.middleware import PriceTable
    from assay.judges.replay import ReplayJudge

    prices = PriceTable(prompt_per_m={"scripted": 2.0}, completion_per_m={"scripted": 10.0})
    inner = ScriptedJudge(lambda req: "3")
    inner.identity = inner.identity.model_copy(update={"model": "scripted"})
    first = assay.evaluate(assay.load_dataset("topical-chat"), method="direct", judge=inner, limit=1,
                           run_dir=tmp_path / "paid", prices=prices, dimensions=["coherence"])
    assert first.usage["score"].cost_usd > 0
    replayed = assay.evaluate(assay.load_dataset("topical-chat"), method="direct",
                              judge=ReplayJudge(tmp_path / "paid"), limit=1, run_dir=tmp_path / "replayed",
                              prices=prices, dimensions=["coherence"])
    assert replayed.usage["score"].calls == 1 and replayed.usage["score"].cost_usd == 0


def test_evaluate_plain_samples(tmp_path):
    from assay.types import Dimension, Sample, Scale

    samples = [Sample(id=f"s{i}", doc_id="d", output=f"text {i}", source="src", human={"clarity": i})
               for i in range(1, 4)]
    dim = Dimension(name="clarity", definition="Easy to read.", scale=Scale(low=1, high=5))
    judge = ScriptedJudge(lambda req: "Clarity: 4")
    result = assay.evaluate(samples, dimensions=[dim], judge=judge, run_dir=tmp_path)
    assert [j.score for j in result.judgments] == [4.0, 4.0, 4.0]
    assert result.manifest["dataset"]["name"] == "custom"
    with pytest.raises(ConfigError, match="need their Dimension objects"):
        assay.evaluate(samples, dimensions=["clarity"], judge=judge, run_dir=tmp_path / "x")


def test_a_judge_passed_in_stays_open_for_its_owner(tmp_path, topical_chat):
    """evaluate() closes only the judges it loaded from a spec: a Judge object can serve several runs."""

    class Tracked(ScriptedJudge):
        closed = 0

        async def aclose(self) -> None:
            Tracked.closed += 1

    judge = Tracked(lambda req: "3", name="tracked")
    for d in ("a", "b"):
        assay.evaluate(topical_chat, method="direct", judge=judge, limit=2, run_dir=tmp_path / d)
    assert Tracked.closed == 0 and len(judge.requests) == 2 * 2 * 4


def test_price_table_files_and_their_errors(tmp_path):
    from assay.errors import InputError
    from assay.judges.middleware import PriceTable

    yml = tmp_path / "prices.yaml"
    yml.write_text("prompt_per_m: {m: 0.15}\ncompletion_per_m: {m: 0.6}\n")
    js = tmp_path / "prices.json"
    js.write_text(json.dumps({"prompt_per_m": {"m": 0.15}, "completion_per_m": {"m": 0.6}}))
    assert PriceTable.load(yml) == PriceTable.load(js)
    assert PriceTable.load(js).cost("m", 1_000_000, 2_000_000) == pytest.approx(0.15 + 1.2)
    cases = {
        '{"prompt_per_m": {"m": "cheap"}}': r"prices.bad, field 'prompt_per_m.m'",
        '{"prompt_per_m": {"m": -1}}': r"field 'prompt_per_m.m'.*greater than or equal to 0",
        '{"prompt": {"m": 1}}': r"field 'prompt'.*not permitted",
        "[1, 2]": r"prices.bad: expected an object",
        "prompt_per_m: {m: 1\ncompletion_per_m: {}\n": r"prices.bad, record line \d+: not valid JSON or YAML",
    }
    bad = tmp_path / "prices.bad"
    for text, message in cases.items():
        bad.write_text(text)
        with pytest.raises(InputError, match=message):
            PriceTable.load(bad)
    with pytest.raises(InputError, match="nope.yaml: cannot read"):
        PriceTable.load(tmp_path / "nope.yaml")


def test_price_table_must_price_the_judge_model(tmp_path, topical_chat):
    from assay.judges.middleware import PriceTable

    prices = PriceTable(prompt_per_m={"gpt-x": 1.0}, completion_per_m={"gpt-x": 1.0})
    with pytest.raises(ConfigError, match="no prompt_per_m or completion_per_m price for model 'scripted'.*gpt-x"):
        assay.evaluate(topical_chat, judge=ScriptedJudge(lambda r: "3"), limit=1, prices=prices,
                       run_dir=tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_cost_in_manifest_and_run_summary(tmp_path):
    """``assay run --prices``: the cost of every call is in the manifest and printed; cached calls are free."""
    from typer.testing import CliRunner

    from assay.cli.main import app
    from assay.testing import FakeOpenAIServer

    prices = tmp_path / "prices.yaml"
    prices.write_text("prompt_per_m: {fake-model: 1000}\ncompletion_per_m: {fake-model: 2000}\n")
    run_dir = tmp_path / "run"
    with FakeOpenAIServer() as server:  # every answer: 10 prompt tokens, 1 completion token
        args = ["run", "--dataset", "qags-xsum", "--limit", "3", "--judge", f"openai:fake-model@{server.url}",
                "--judge-opt", "logprobs=false", "--prices", str(prices), "--run-dir", str(run_dir), "-q"]
        first = CliRunner().invoke(app, args, catch_exceptions=False)
        again = CliRunner().invoke(app, args, catch_exceptions=False)
    expected = (3 * 10 * 1000 + 3 * 1 * 2000) / 1e6
    assert first.exit_code == 0, first.output
    assert f"cost ${expected:.4f}" in first.output
    assert f"cost $0.0000 (whole run ${expected:.4f})" in again.output
    with RunStore(run_dir, readonly=True) as store:
        manifest = store.manifest()
    assert manifest["cost_usd"] == pytest.approx(expected)
    assert manifest["usage"]["score"]["calls"] == 3 and manifest["usage"]["score"]["cached_calls"] == 0
    assert manifest["prices"] == {"prompt_per_m": {"fake-model": 1000.0}, "completion_per_m": {"fake-model": 2000.0}}


def test_replay_answers_recorded_calls_and_names_an_unrecorded_one(tmp_path, topical_chat):
    import asyncio

    from assay.errors import ReplayMissError
    from assay.judges.replay import ReplayJudge, shared_prefix

    recorded = assay.evaluate(topical_chat, judge=ScriptedJudge(lambda r: "2"), limit=1, run_dir=tmp_path / "a",
                              dimensions=["naturalness"])
    witness = ScriptedJudge(lambda r: "2")  # sees the prompts of the first two samples
    assay.evaluate(topical_chat, judge=witness, limit=2, run_dir=tmp_path / "w", dimensions=["naturalness"])
    first, second = (r.messages[-1].content for r in witness.requests)
    replay = ReplayJudge(tmp_path / "a")
    try:
        again = assay.evaluate(topical_chat, judge=replay, limit=1, run_dir=tmp_path / "b",
                               dimensions=["naturalness"])
        assert [j.score for j in again.judgments] == [j.score for j in recorded.judgments] == [2.0]
        assert again.manifest["judge"]["backend"] == "replay"
        with pytest.raises(ReplayMissError, match="never made this call") as err:
            assay.evaluate(topical_chat, judge=replay, limit=2, run_dir=tmp_path / "c", dimensions=["naturalness"])
    finally:
        asyncio.run(replay.aclose())
    message = str(err.value)
    assert "temperature=0.0" in message and "sample_index=0" in message
    # it names the request by showing where it parts from the closest recorded one
    d = shared_prefix(first, second)
    assert repr(second[d:d + 12])[1:-1] in message and repr(first[d:d + 12])[1:-1] in message


async def test_concurrency_is_bounded_per_judge():
    """ManagedJudge never has more calls in flight than its bound, and does reach it."""
    import asyncio

    class Slow(ScriptedJudge):
        in_flight = peak = 0

        async def generate(self, request: Request):
            Slow.in_flight += 1
            Slow.peak = max(Slow.peak, Slow.in_flight)
            await asyncio.sleep(0.01)
            Slow.in_flight -= 1
            return await super().generate(request)

    judge = ManagedJudge(Slow(lambda r: "3"), concurrency=3)
    await asyncio.gather(*(judge.generate(Request.chat(f"call {i}")) for i in range(20)))
    assert Slow.peak == 3 and Slow.in_flight == 0
    assert judge.ledger.total().calls == 20


def test_cache_keys_stay_those_of_stored_runs():
    """A call's key is what a resumed run looks its answer up by: the same request and judge must keep the key an
    earlier assay wrote (the first was computed by the code issue 28 was filed on, e769ff7), or a resumed run pays
    again for every call."""
    from assay.judges.base import JudgeIdentity
    from assay.judges.middleware import call_key

    who = JudgeIdentity(backend="openai", model="gpt-4o-mini", base_url="http://127.0.0.1:8080/v1")
    greedy = Request.chat("Rate the summary « café » 1-5.", system="You judge.", max_tokens=8, top_logprobs=20)
    assert call_key(who, greedy) == "6712ab8762e775ffa85e93f55f3ec252a8c32821eddd6d32cf9b399398e1b56e"
    sampled = Request.chat("x", temperature=0.7, n=3, sample_index=2, stop=("\n",), json_schema='{"type":"object"}',
                           attempt=1)
    assert call_key(who, sampled) == "939f3631439c52bc6d0d84f0a50ba61f171c3cac0d7b7888b275f25aae017bb5"
