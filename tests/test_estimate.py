"""``--estimate``: the bill before the run, counted from the method's own requests without calling the judge."""

from __future__ import annotations

import asyncio
import json
import socket

import pytest

import assay
from assay.answers.shapes import schema_answer
from assay.errors import ConfigError
from assay.judges import PriceTable
from assay.judges.base import Request
from assay.judges.scripted import ScriptedJudge
from assay.methods import get_method
from assay.methods.checkeval.method import checklist_answer
from assay.run.estimate import Estimate, call_cost
from assay.run.standin import json_answer, middle_rating
from assay.testing import FakeOpenAIServer


def closed_port_url() -> str:
    """An endpoint nothing listens on: any call to it fails at once."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def stage(est: Estimate, name: str):
    return next(s for s in est.stages if s.stage == name)


# -- stand-in answers (pure) ---------------------------------------------------------------------------------------


def test_standins_have_the_shape_the_methods_read():
    assert middle_rating("Answer with one number from 1 to 5 and nothing else.") == 3
    assert middle_rating("Coherence (1-10):") == 5
    assert checklist_answer(3) == "Q1: yes\nQ2: no\nQ3: yes"
    check = Request.chat("Q1 ... Q4", stop=("Q5:",))
    assert get_method("checkeval")().standin(check, "score").count("\n") == 3  # one per question, from the stop
    bits = r"^[01](,[01]){4}$"
    weights = r"^(0([.][0-9]{1,3})?|1([.]0{1,3})?)(,(0([.][0-9]{1,3})?|1([.]0{1,3})?)){2}$"
    got = schema_answer({"properties": {"k": {"pattern": bits}, "k_weight": {"pattern": weights},
                                        "r": {"pattern": "^[1-5]$"}}})
    assert got["k"] == "1,1,1,1,1" and got["r"] == "3"
    assert round(sum(float(w) for w in got["k_weight"].split(",")), 6) == 1.0 and got["k_weight"].count(",") == 2


def seal_standin(prompt: str) -> str:
    return get_method("seal")().standin(Request.chat(prompt, json_mode=True), "decompose")


def test_a_decomposition_stand_in_lists_the_fenced_texts_sentences():
    prompt = ('Split it.\n\n<<<SUMMARY>>>\nThe cat sat. It was happy. Then it left.\n<<<END SUMMARY>>>\n\n'
              'Answer with JSON only, in this form: {"facts": ["<first fact>", "<second fact>"]}')
    assert json.loads(seal_standin(prompt)) == {"facts": ["The cat sat.", "It was happy.", "Then it left."]}
    paper = ('Output format (JSON only):\n{"sentence": ["sentence 1", "sentence 2"]}\n\n'
             '<<<SUMMARY>>>\nA b c. D e.\n<<<END SUMMARY>>>')
    assert json.loads(seal_standin(paper)) == {"sentence": ["A b c.", "D e."]}  # the paper's key
    support = 'Answer with JSON only:\n- "supported": ...\nExample: {"supported": [["c2", "c5"], [], ["c1"]]}'
    assert json.loads(json_answer(support, None)) == {"supported": [[], [], []]}  # no source id invented


# -- no call, per-stage rows ---------------------------------------------------------------------------------------


def test_estimate_against_an_unreachable_judge_makes_no_call(summeval):
    est = assay.evaluate(summeval, method="checkeval", judge=f"openai:gpt-4o-mini@{closed_port_url()}",
                         dimensions=["coherence", "fluency"], docs=1, limit=2, options={"group_size": 2},
                         estimate=True)
    assert isinstance(est, Estimate) and est.units == 4
    score = stage(est, "score")
    assert score.calls >= 8 and score.prompt_tokens > 0 and score.completion_tokens > 0  # several groups per unit
    assert score.exact  # groups sent together are counted before any answer: none is built from a sibling's
    assert "chars/4" in est.tokenizer and not est.tokenizer_exact  # tiktoken has no offline encoding here
    assert any("log-probabilities assumed" in a for a in est.assumptions)
    told = assay.evaluate(summeval, method="checkeval", judge=f"openai:gpt-4o-mini@{closed_port_url()}",
                          judge_options={"logprobs": False, "schema": False}, dimensions=["coherence"], limit=1,
                          estimate=True)
    assert told.assumptions == []  # the capability was given, nothing assumed


def test_estimate_sends_nothing_to_a_live_server(summeval):
    with FakeOpenAIServer() as server:
        est = assay.evaluate(summeval, method="direct", judge=f"openai:judge-model@{server.url}",
                             dimensions=["coherence"], docs=1, limit=3, estimate=True)
        assert server.requests == []  # not even the log-probability probe
    assert stage(est, "score").calls == 3 and est.units == 3


def test_later_stages_are_counted_from_the_methods_own_requests_and_marked_estimated(summeval):
    est = assay.evaluate(summeval, method="geval", judge=f"openai:m@{closed_port_url()}",
                         dimensions=["coherence", "fluency"], docs=1, limit=2, estimate=True)
    steps, score = stage(est, "steps"), stage(est, "score")
    assert steps.calls == 2 and steps.exact
    assert score.calls == 4 and score.exact_calls == 0 and "'steps'" in score.why  # the prompts carry stand-in steps
    seal = assay.evaluate(summeval, method="seal", judge=f"openai:m@{closed_port_url()}",
                          dimensions=["consistency"], docs=1, limit=2, options={"threshold_facts": 1}, estimate=True)
    decompose, verify = stage(seal, "decompose"), stage(seal, "verify")
    assert decompose.calls == 3  # each summary's facts, then the source's once (shared by both)
    assert decompose.exact_calls == 2  # the source's facts are asked only when a summary has enough facts
    assert verify.calls >= 2 and verify.exact_calls == 0 and "'decompose'" in verify.why


async def test_a_prompt_listing_a_stand_ins_units_is_estimated_even_without_a_call_in_its_unit():
    """A later dimension reads units decomposed in another unit (SEAL shares stage 1) without a call of its
    own; its prompts list stand-in units, so they are estimated. The judged text alone is no such listing."""
    from assay.answers.fence import fence
    from assay.judges import JudgeIdentity
    from assay.judges.tokens import approximate
    from assay.run.counting import CountingJudge
    from assay.run.counting import scoped as _scoped

    text = "The cat sat on the mat. It was happy there. Then it left the house."
    judge = CountingJudge(JudgeIdentity(backend="openai", model="m"), True, approximate("test"), None,
                          standin=get_method("seal")().standin)
    split = Request.chat(f'Facts of:\n{fence(text, "summary")}\nAnswer with JSON only, in this form: '
                         '{"facts": ["<first fact>", "<second fact>"]}', json_mode=True)
    with _scoped((text,), None):
        facts = json.loads((await judge.generate(split, stage="decompose")).text)["facts"]
    assert facts == ["The cat sat on the mat.", "It was happy there.", "Then it left the house."]
    with _scoped((text,), None):  # other dimensions' units: they have read no stand-in answer themselves
        await judge.generate(Request.chat(f"Rate it:\n{fence(text, 'summary')}\nfrom 1 to 5"), stage="weights")
    with _scoped((text,), None):
        await judge.generate(Request.chat(f"{fence(text, 'summary')}\ns1: {facts[0]}\ns2: {facts[1]}"),
                             stage="verify")
    assert judge.rows["weights"].exact  # the text itself, not a listing of its stand-in units
    assert judge.rows["verify"].exact_calls == 0 and "'decompose'" in judge.rows["verify"].why


def test_an_estimate_writes_nothing_and_a_resumed_run_counts_its_cache(summeval, tmp_path):
    run = tmp_path / "run"
    est = assay.evaluate(summeval, method="direct", judge=f"openai:m@{closed_port_url()}", run_dir=run,
                         dimensions=["coherence"], docs=1, limit=2, estimate=True)
    assert not run.exists() and stage(est, "score").calls == 2
    judge = ScriptedJudge(lambda r: "3", name="s")
    assay.evaluate(summeval, method="geval", judge=judge, run_dir=run, dimensions=["coherence"], docs=1, limit=1,
                   options={"mode": "greedy"})
    again = assay.evaluate(summeval, method="geval", judge=judge, run_dir=run, dimensions=["coherence"], docs=1,
                           limit=2, options={"mode": "greedy"}, estimate=True)
    assert again.units == 1 and again.units_done == 1  # the scored unit is not counted again
    steps = stage(again, "steps")
    assert steps.calls == 0 and steps.cached_calls == 1  # the steps the run paid for are in its cache
    assert stage(again, "score").exact  # built from the real steps, not a stand-in's


def test_a_method_object_keeps_nothing_a_stand_in_wrote(summeval):
    from assay.methods import make_method

    geval = make_method("geval", {"mode": "greedy"})
    assay.evaluate(summeval, method=geval, judge=f"openai:m@{closed_port_url()}", dimensions=["coherence"], limit=1,
                   estimate=True)
    assert geval.plans == {}  # no stand-in steps for a real run with the same object to score with
    judge = ScriptedJudge(lambda r: "1. Read it.\n2. Rate it." if "steps" in r.messages[-1].content else "3")
    real = assay.evaluate(summeval, method=geval, judge=judge, dimensions=["coherence"], limit=1)
    assert real.usage["steps"].calls == 1


def test_an_estimate_refuses_a_run_directory_with_other_settings(summeval, tmp_path):
    judge = ScriptedJudge(lambda r: "3", name="s")
    assay.evaluate(summeval, method="direct", judge=judge, run_dir=tmp_path, dimensions=["coherence"], limit=1)
    with pytest.raises(ConfigError, match="other settings"):
        assay.evaluate(summeval, method="geval", judge=judge, run_dir=tmp_path, dimensions=["coherence"], limit=1,
                       estimate=True)


def test_a_stated_reask_rate_adds_estimated_rows(summeval):
    from assay.methods import make_method
    from assay.run.estimate import estimate_run
    from assay.run.session import RunPlan

    data = summeval.select(docs=1, limit=2)
    args = (RunPlan(make_method("direct"), data, data.dimensions(["coherence"])), f"openai:m@{closed_port_url()}")
    plain = asyncio.run(estimate_run(*args))
    est = asyncio.run(estimate_run(*args, reask_rate=0.5))
    score, reasks = stage(est, "score"), stage(est, "score (re-asks)")
    assert [s.stage for s in plain.stages] == ["score"]  # 0 by default: the stand-ins' answers are all readable
    assert reasks.calls == 1 and reasks.exact_calls == 0 and "0.5 re-asks per call" in reasks.why
    assert reasks.prompt_tokens > score.prompt_tokens / score.calls  # the prompt, the quoted answer, the follow-up
    assert est.total().calls == 3


# -- prices ----------------------------------------------------------------------------------------------------------


def test_cost_from_the_price_table(summeval):
    prices = PriceTable(prompt_per_m={"m": 2.0}, completion_per_m={"m": 8.0})
    est = assay.evaluate(summeval, method="geval", judge=f"openai:m@{closed_port_url()}", dimensions=["coherence"],
                         docs=1, limit=2, prices=prices, estimate=True)
    total = est.total()
    assert est.cost_usd == pytest.approx((2.0 * total.prompt_tokens + 8.0 * total.completion_tokens) / 1e6)
    assert all(s.cost_usd is not None for s in est.stages)
    with pytest.raises(ConfigError, match="no prompt_per_m or completion_per_m price for model 'm'"):
        assay.evaluate(summeval, method="direct", judge=f"openai:m@{closed_port_url()}", limit=1,
                       prices=PriceTable(), estimate=True)
    with pytest.raises(ConfigError, match="no batch discount"):  # never a batch estimate priced in full
        call_cost(prices, "m", 10, 10, batch=True)
    discounted = prices.model_copy(update={"batch_discount": 0.5})
    assert call_cost(discounted, "m", 10, 10, batch=True) == pytest.approx(call_cost(prices, "m", 10, 10) / 2)
    halved = assay.evaluate(summeval, method="geval", judge=f"openai:m@{closed_port_url()}", dimensions=["coherence"],
                            docs=1, limit=2, prices=discounted, estimate=True, batch=True)
    assert halved.cost_usd == pytest.approx(est.cost_usd / 2)
    assert assay.evaluate(summeval, method="direct", judge=f"openai:m@{closed_port_url()}", limit=1,
                          estimate=True).cost_usd is None


# -- exact counts: the embedded judge's own tokenizer ------------------------------------------------------------


@pytest.mark.parametrize(("method", "options"), [("direct", {"max_tokens": 1}),
                                                  ("checkeval", {"max_tokens": 1, "reask": False})])
def test_exact_prompt_tokens_equal_a_real_runs(summeval, smollm2, tmp_path, method, options):
    """The estimate with the GGUF's vocabulary only (no weights) counts what the embedded judge then reports
    (one-token answers keep the real run short; the prompts are the methods' own)."""
    kw = {"method": method, "options": options, "dimensions": ["coherence"], "docs": 1, "limit": 1}
    est = assay.evaluate(summeval, judge="llamacpp:smollm2", estimate=True, **kw)
    assert est.tokenizer_exact and est.tokenizer.startswith("gguf SmolLM2")
    loaded = assay.evaluate(summeval, judge=smollm2, estimate=True, **kw)  # a judge object: its own tokenizer
    assert loaded.tokenizer_exact and stage(loaded, "score").prompt_tokens == stage(est, "score").prompt_tokens
    real = assay.evaluate(summeval, judge=smollm2, run_dir=tmp_path, **kw)
    paid = real.usage["score"]
    assert stage(est, "score").exact
    assert (stage(est, "score").calls, stage(est, "score").prompt_tokens) == (paid.calls, paid.prompt_tokens)
    assert stage(est, "score").completion_tokens_max >= paid.completion_tokens


# -- the command -------------------------------------------------------------------------------------------------------


def test_cli_estimate_prints_rows_and_exits_0(cli, tmp_path):
    prices = tmp_path / "prices.yaml"
    prices.write_text("prompt_per_m: {m: 1.0}\ncompletion_per_m: {m: 4.0}\n")
    run = tmp_path / "run"
    code, out, _ = cli("run", "-m", "direct", "-d", "summeval", "--docs", "1", "--limit", "2", "--dimension",
                       "coherence", "--judge", f"openai:m@{closed_port_url()}", "-o", str(run), "--prices",
                       str(prices), "--estimate")
    assert code == 0
    row = next(line for line in out.splitlines() if line.strip("│ ").startswith("score"))
    assert row.split("│")[2].strip() == "2"  # calls
    assert "tokenizer: approximate chars/4" in " ".join(out.split()) and "USD" in out
    assert not run.exists()
