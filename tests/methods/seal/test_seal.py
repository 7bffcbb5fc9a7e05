"""SEAL's driver with a scripted judge: re-asking, fallbacks, gating, ablations, stage-1 sharing, the trace."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

import assay
from assay.errors import ConfigError
from assay.judges.base import Request
from assay.judges.scripted import ScriptedJudge
from assay.methods.seal.aggregate import rescore
from assay.methods.seal.units import split_sentences

FACTS_INTRO = "You will rewrite a text as a list of monadic facts."


def fenced(prompt: str, label: str) -> str:
    return re.search(rf"<<<{label}>>>\n(.*?)\n<<<END {label}>>>", prompt, re.S).group(1)


def facts_answer(req: Request) -> str | None:
    """Facts = the text's sentences (deterministic), as a well-behaved judge would list them."""
    prompt = req.messages[0].content
    if not prompt.startswith(FACTS_INTRO):
        return None
    label = re.search(r"<<<([A-Z ]+)>>>", prompt).group(1)
    return json.dumps({"facts": split_sentences(fenced(prompt, label))})


def example_of(req: Request) -> str:
    """The example answer the prompt itself shows (a judge that copies it)."""
    return re.findall(r"Example: (.*)", req.messages[-1].content)[-1]


def run(dataset, judge, **kw):
    return assay.evaluate(dataset, method="seal", judge=judge, **kw)


def by_dim(result):
    return {(j.sample_id, j.dimension): j for j in result.judgments}


# ---------------------------------------------------------------- single-unit dimensions (Tables 23-25)


def test_dialogue_decisions_and_weights_from_one_answer():
    answer = '{"engagingness": "1,1,1,0,1", "engagingness_weight": "0.25,0.20,0.20,0.15,0.20"}'
    judge = ScriptedJudge(lambda r: answer)
    res = run("topical-chat", judge, dimensions=["engagingness"], limit=1)
    j = res.judgments[0]
    assert j.score == pytest.approx(0.25 + 0.20 + 0.20 + 0.20)
    assert j.trace["granularity"] == "single" and [u["id"] for u in j.trace["units"]] == ["u1"]
    assert j.trace["decisions"] == [{"unit": "u1", "interest": 1, "emotional resonance": 1, "initiative": 1,
                                     "personalization": 0, "coherence with interest flow": 1}]
    assert j.trace["weights"]["source"].startswith("judge") and not j.trace["weights"]["renormalised"]
    assert j.usage["verify"].calls == 1 and "weights" not in j.usage and "decompose" not in j.usage
    prompt = judge.requests[0].messages[0].content
    assert "<<<KNOWLEDGE FACT>>>" in prompt and "<<<CONVERSATION HISTORY>>>" in prompt
    assert prompt.index("<<<RESPONSE>>>") < prompt.index("Q1 (interest)")


def test_misaligned_answer_is_reasked_then_used():
    answers = iter(['{"consistency": "1,0", "consistency_weight": "0.2,0.2,0.2,0.2,0.2"}',
                    '{"consistency": "1,0,1,1,1", "consistency_weight": "0.2,0.2,0.2,0.2,0.2"}'])
    judge = ScriptedJudge(lambda r: next(answers))
    res = run("qags-xsum", judge, limit=1)
    j = res.judgments[0]
    assert j.score == pytest.approx(0.8)
    attempts = j.trace["calls"][0]["attempts"]
    assert [a["error"] for a in attempts] == ["expected exactly 5 answers (one per question), got 2", None]
    reask = judge.requests[1]
    assert [m.role for m in reask.messages] == ["user", "assistant", "user"]
    assert "expected exactly 5 answers" in reask.messages[2].content and "Example:" in reask.messages[2].content
    assert j.usage["verify"].calls == 2
    assert any(n["kind"] == "reask" for n in res.notes)


def test_answers_that_stay_malformed_give_no_score_never_zeros():
    judge = ScriptedJudge(lambda r: '{"consistency": "1,0"}')
    res = run("qags-xsum", judge, limit=1, options={"reasks": 1})
    j = res.judgments[0]
    assert j.score is None
    assert "unusable after 2 attempt(s)" in j.error and "expected exactly 5" in j.error
    assert "matrix" not in j.trace and len(j.trace["calls"][0]["attempts"]) == 2
    assert rescore(j.trace) is None
    assert any(n["kind"] == "unusable" for n in res.notes)


def test_negative_weights_fall_back_to_uniform_and_are_recorded():
    judge = ScriptedJudge(lambda r: '{"consistency": "1,1,0,0,0", "consistency_weight": "0.9,0.5,-0.2,-0.1,-0.1"}')
    res = run("qags-xsum", judge, limit=1)
    j = res.judgments[0]
    assert j.score == pytest.approx(0.4)  # uniform weights: 2 of 5
    w = j.trace["weights"]
    assert w["source"] == "uniform (fallback)" and w["fallback_reason"] == "negative weight"
    assert w["raw"] == [0.9, 0.5, -0.2, -0.1, -0.1]
    assert any(n["kind"] == "fallback" and "uniform weights" in n["message"] for n in res.notes)
    assert len(judge.requests) == 1  # usable decisions are not re-asked for the sake of the weights


def test_missing_weights_fall_back_to_uniform():
    judge = ScriptedJudge(lambda r: '{"consistency": "1,1,1,1,0"}')
    j = run("qags-xsum", judge, limit=1).judgments[0]
    assert j.score == pytest.approx(0.8)
    assert j.trace["weights"]["source"] == "uniform (fallback)"
    assert "consistency_weight" in j.trace["weights"]["fallback_reason"]


def test_weights_not_summing_to_one_are_renormalised_and_recorded():
    judge = ScriptedJudge(lambda r: '{"consistency": "1,0,0,0,0", "consistency_weight": "2,1,1,0,0"}')
    res = run("qags-xsum", judge, limit=1)
    w = res.judgments[0].trace["weights"]
    assert w["renormalised"] and w["raw_sum"] == 4 and w["values"] == pytest.approx([0.5, 0.25, 0.25, 0, 0])
    assert res.judgments[0].score == pytest.approx(0.5)
    assert any(n["kind"] == "renormalised" for n in res.notes)


def test_uniform_weights_ablation_asks_no_weights_and_is_in_the_manifest():
    judge = ScriptedJudge(lambda r: '{"consistency": "1,1,0,1,1"}')
    res = run("qags-xsum", judge, limit=1, options={"uniform_weights": True})
    j = res.judgments[0]
    assert "_weight" not in judge.requests[0].messages[0].content
    assert j.trace["weights"]["source"] == "uniform (ablation w/o weighting)" and j.score == pytest.approx(0.8)
    assert res.manifest["method_settings"]["uniform_weights"] is True
    assert res.manifest["artifacts"]["seal_ablations"]["w/o weighting (uniform_weights)"] is True


def test_reference_identical_to_source_is_not_repeated():
    judge = ScriptedJudge(lambda r: '{"consistency": "1,1,1,1,1", "consistency_weight": "0.2,0.2,0.2,0.2,0.2"}')
    j = run("qags-xsum", judge, limit=1).judgments[0]
    prompt = judge.requests[0].messages[0].content
    assert prompt.count("<<<NEWS ARTICLE>>>") == 1 and "REFERENCE" not in prompt
    assert j.trace["text_notes"] == ["reference identical to the source: shown once, as the source"]


# ---------------------------------------------------------------- multi-unit dimensions (Table 22)


def summeval_judge(support=None, relevance=None):
    """Facts = sentences; consistency support and relevance decisions from the given functions."""
    def respond(req: Request) -> str:
        got = facts_answer(req)
        if got is not None:
            return got
        prompt = req.messages[0].content
        if '"supporting source facts"' in prompt:
            n = len(re.findall(r"^s\d+: ", fenced(prompt, "SUMMARY FACTS"), re.M))
            return json.dumps({"supporting source facts": [support(i) for i in range(n)]})
        if '"relevant summary facts"' in prompt:
            n = len(re.findall(r"^s\d+: ", fenced(prompt, "SUMMARY FACTS"), re.M))
            return json.dumps({"relevant summary facts": ",".join(relevance(i) for i in range(n))})
        return example_of(req)
    return ScriptedJudge(respond)


def test_summeval_fact_units_support_ids_and_stage1_reuse():
    ds = assay.load_dataset("summeval").select(docs=1, limit=3)
    judge = summeval_judge(support=lambda i: [] if i == 1 else ["c1", "c2"], relevance=lambda i: "01"[i % 2])
    res = run(ds, judge, dimensions=["consistency", "relevance"], options={"threshold_facts": 2})
    facts_calls = Counter(re.search(r"<<<([A-Z ]+)>>>", r.messages[0].content).group(1)
                          for r in judge.requests if r.messages[0].content.startswith(FACTS_INTRO))
    # one extraction per summary (shared by consistency and relevance), one per source and reference
    assert facts_calls == {"SUMMARY": 3, "NEWS ARTICLE": 1, "REFERENCE SUMMARY": 1}
    judged = by_dim(res)
    for s in ds.samples:
        cons, rel = judged[(s.id, "consistency")], judged[(s.id, "relevance")]
        n = len(split_sentences(s.output))
        assert cons.trace["granularity"] == "fine" and len(cons.trace["units"]) == n
        assert cons.trace["support"]["s1"] == ["c1", "c2"] and cons.trace["support"]["s2"] == []
        assert cons.score == pytest.approx((n - 1) / n)
        assert rel.score == pytest.approx((n // 2) / n)
        assert cons.trace["stage1"]["output_facts"]["items"] == rel.trace["stage1"]["output_facts"]["items"]
        assert [cons.trace["stage1"]["output_facts"]["paid_here"], rel.trace["stage1"]["output_facts"]["paid_here"]] \
            .count(True) == 1
        assert cons.trace["stage1"]["source_facts"]["items"][0]["id"] == "c1"
    paid = sum(j.usage["decompose"].calls for j in res.judgments if "decompose" in j.usage)
    assert paid == sum(facts_calls.values())  # each shared extraction is charged to exactly one judgment
    for j in res.judgments:  # and its trace says so: what the judgment paid is what its stage-1 entries cost
        here = [e["usage"]["calls"] for e in j.trace["stage1"].values() if e["paid_here"]]
        assert sum(here) == (j.usage["decompose"].calls if "decompose" in j.usage else 0)
        assert all(c == 1 for c in here)


def test_sentence_units_and_adjacent_pairs_end_to_end():
    ds = assay.load_dataset("summeval").select(docs=1, limit=1)
    out = ds.samples[0].output
    n = len(split_sentences(out))
    assert n >= 3
    judge = ScriptedJudge(example_of)  # copies the example: 1,1,0,1,1,...
    res = by_dim(run(ds, judge, dimensions=["coherence", "fluency"]))
    coh, flu = res[(ds.samples[0].id, "coherence")], res[(ds.samples[0].id, "fluency")]
    assert [u["id"] for u in coh.trace["units"]] == [f"p{i}" for i in range(1, n)]
    assert [u["id"] for u in flu.trace["units"]] == [f"s{i}" for i in range(1, n + 1)]
    expected = [int("110"[i % 3]) for i in range(n)]
    assert flu.score == pytest.approx(sum(expected) / n)
    assert coh.score == pytest.approx(sum(expected[: n - 1]) / (n - 1))
    assert coh.trace["gate"] == {"counted": "sentences", "count": n, "threshold": 3}
    assert all("decompose" not in j.usage for j in res.values())  # pysbd: no call


def test_threshold_gates_short_outputs_into_one_holistic_unit():
    ds = assay.load_dataset("summeval").select(docs=1, limit=1)
    judge = ScriptedJudge(lambda r: '{"coherence": "0"}')
    j = run(ds, judge, dimensions=["coherence"], options={"threshold_sentences": 50}).judgments[0]
    assert j.trace["granularity"] == "holistic" and "fewer than n = 50" in j.trace["holistic_reason"]
    assert j.score == 0.0 and j.trace["units"][0]["id"] == "u1"
    prompt = judge.requests[0].messages[0].content
    assert "as a whole" in prompt and "<<<SUMMARY>>>" in prompt and "SENTENCES" not in prompt


def test_failed_fact_extraction_is_recorded_and_judged_holistically():
    def respond(req):
        if req.messages[0].content.startswith(FACTS_INTRO):
            return "I cannot do that."
        return '{"consistency": "1"}'
    judge = ScriptedJudge(respond)
    ds = assay.load_dataset("summeval").select(docs=1, limit=1)
    res = run(ds, judge, dimensions=["consistency"], options={"reasks": 1})
    j = res.judgments[0]
    assert j.score == 1.0 and j.trace["granularity"] == "holistic"
    assert j.trace["holistic_reason"] == "output fact extraction failed: no JSON object found"
    assert len(j.trace["stage1"]["output_facts"]["attempts"]) == 2
    assert any(n["kind"] == "fallback" and "fact extraction" in n["message"] for n in res.notes)


# ---------------------------------------------------------------- ablations and options


def test_no_units_ablation_skips_decomposition():
    ds = assay.load_dataset("summeval").select(docs=1, limit=1)
    judge = ScriptedJudge(example_of)
    res = run(ds, judge, options={"no_units": True})
    assert not any(r.messages[0].content.startswith(FACTS_INTRO) for r in judge.requests)
    assert len(judge.requests) == 4
    for j in res.judgments:
        assert j.trace["granularity"] == "holistic" and j.trace["holistic_reason"].startswith("ablation w/o SD")


def test_no_subdims_ablation_rates_each_unit():
    ds = assay.load_dataset("summeval").select(docs=1, limit=1)
    n = len(split_sentences(ds.samples[0].output))
    judge = ScriptedJudge(lambda r: json.dumps({"sentence fluency ratings": ",".join(["5", "3"] * n)[: 2 * n - 1]}))
    j = run(ds, judge, dimensions=["fluency"], options={"no_subdims": True}).judgments[0]
    ratings = ([5, 3] * n)[:n]
    assert j.trace["ratings"] == ratings and j.trace["subdimensions"] == ["scalar judgment (w/o SV)"]
    assert j.score == pytest.approx(sum((r - 1) / 4 for r in ratings) / n)
    assert "1 (worst) to 5 (best)" in judge.requests[0].messages[0].content


def test_llm_sentence_split_is_validated_with_a_recorded_pysbd_fallback():
    ds = assay.load_dataset("summeval").select(docs=1, limit=1)
    out = ds.samples[0].output

    def good(req):
        if '"sentences"' in req.messages[0].content and "split a text" in req.messages[0].content:
            return json.dumps({"sentences": [out]})  # one sentence: valid, if unhelpful
        return example_of(req)

    j = run(ds, ScriptedJudge(good), dimensions=["fluency"], options={"sentence_splitter": "llm",
                                                                      "threshold_sentences": 1}).judgments[0]
    assert j.trace["stage1"]["output_sentences"]["how"] == "llm" and len(j.trace["units"]) == 1
    assert j.usage["decompose"].calls == 1

    def bad(req):
        if "split a text" in req.messages[0].content:
            return json.dumps({"sentences": ["Something else entirely."]})
        return example_of(req)

    res = run(ds, ScriptedJudge(bad), dimensions=["fluency"], options={"sentence_splitter": "llm",
                                                                       "reasks": 0})
    j = res.judgments[0]
    assert j.trace["stage1"]["output_sentences"]["how"].startswith("pysbd (llm split failed")
    assert len(j.trace["units"]) == len(split_sentences(out))
    assert any("pysbd sentences used" in n["message"] for n in res.notes)


def test_recipe_override_judges_qags_fact_by_fact():
    judge = summeval_judge(support=lambda i: ["c1"], relevance=lambda i: "1")
    res = run("qags-xsum", judge, limit=1, options={"recipe": ["consistency=summary-consistency-facts"],
                                                    "threshold_facts": 1})
    j = res.judgments[0]
    assert j.trace["recipe"] == "summary-consistency-facts" and j.trace["granularity"] == "fine"
    assert j.score == 1.0
    assert res.manifest["artifacts"]["seal_recipes"]["consistency"]["unit"] == "monadic_fact"


def test_unmapped_dimension_fails_before_any_call():
    judge = ScriptedJudge([])
    with pytest.raises(ConfigError, match="no recipe for dimension 'helpfulness'"):
        run("helpsteer2", judge, limit=1, dimensions=["helpfulness"])
    assert judge.requests == []


def test_same_answers_give_the_same_scores():
    ds = assay.load_dataset("summeval").select(docs=1, limit=2)
    a = run(ds, summeval_judge(lambda i: ["c1"] if i % 2 else [], lambda i: "1"), options={"threshold_facts": 2})
    b = run(ds, summeval_judge(lambda i: ["c1"] if i % 2 else [], lambda i: "1"), options={"threshold_facts": 2})
    assert a.scores() == b.scores()
    assert a.manifest["artifacts"]["seal_spec"]["sha256"] == b.manifest["artifacts"]["seal_spec"]["sha256"]


# ---------------------------------------------------------------- --decisions logprobs (assay's small-judge mode)


def _lp_judge(decide, importance=None):
    """A log-probability judge: yes/no tables from ``decide(prompt)``, importance digit tables likewise."""
    from assay.judges.scripted import logprob_response

    def respond(req):
        prompt = req.messages[0].content
        if "from 0 (not at all) to 9 (essential)" in prompt:
            return logprob_response("x", [importance(prompt)])
        table = decide(prompt)
        return logprob_response(max(table, key=table.get), [table])
    return ScriptedJudge(respond, logprobs=True)


def test_logprob_decisions_and_importance_weights():
    def decide(prompt):
        return {"0": 0.7, "1": 0.2} if "(personalization)" in prompt else {" Yes": 0.5, "no": 0.1, "The": 0.3}

    def importance(prompt):
        return {"8": 0.5, "6": 0.5} if "(interest)" in prompt else {"4": 1.0}

    judge = _lp_judge(decide, importance)
    res = run("topical-chat", judge, dimensions=["engagingness"], limit=1, options={"decisions": "logprobs"})
    j = res.judgments[0]
    raw = [7.0, 4.0, 4.0, 4.0, 4.0]  # interest: mean of 8 and 6
    w = [x / sum(raw) for x in raw]
    assert j.trace["weights"]["values"] == pytest.approx(w) and j.trace["weights"]["renormalised"]
    assert j.trace["decisions"][0]["personalization"] == 0 and j.trace["matrix"] == [[1, 1, 1, 0, 1]]
    assert j.score == pytest.approx(1 - w[3])
    assert j.trace["p_yes"][0][3] == pytest.approx(0.2 / 0.9, abs=1e-4)
    assert j.usage["verify"].calls == 5 and j.usage["weights"].calls == 5
    assert all(r.max_tokens == 1 and r.top_logprobs == 20 for r in judge.requests)
    assert res.manifest["artifacts"]["seal_decisions"] == "logprobs"


def test_logprob_mode_asks_every_unit_and_fails_on_an_undecided_one():
    ds = assay.load_dataset("summeval").select(docs=1, limit=1)
    n = len(split_sentences(ds.samples[0].output))

    def decide(prompt):
        return {"1": 0.9} if "about sentence s1:" in prompt else {"0": 0.6, "1": 0.4}

    j = run(ds, _lp_judge(decide), dimensions=["fluency"], options={"decisions": "logprobs"}).judgments[0]
    assert j.trace["matrix"] == [[1]] + [[0]] * (n - 1) and j.score == pytest.approx(1 / n)

    def undecided(prompt):
        return {"<<": 0.9} if "about sentence s2:" in prompt else {"1": 0.9}

    j = run(ds, _lp_judge(undecided), dimensions=["fluency"], options={"decisions": "logprobs"}).judgments[0]
    assert j.score is None and "neither yes nor no" in j.error


def test_logprob_mode_needs_a_logprob_judge():
    with pytest.raises(ConfigError, match="log-probabilities"):
        run("qags-xsum", ScriptedJudge([]), limit=1, options={"decisions": "logprobs"})


def test_cli_flags_map_onto_the_options():
    from assay.cli.options import flags_to_options
    from assay.methods.seal.method import Seal, SealOptions

    flags = ["--no-units", "--uniform-weights", "--recipe", "consistency=summary-consistency-facts",
             "--threshold-facts", "5", "--decisions", "logprobs", "--reasks", "1"]
    settings = Seal(flags_to_options(flags, SealOptions, "seal")).settings()
    assert settings["no_units"] and settings["uniform_weights"] and not settings["no_subdims"]
    assert settings["recipe"] == ["consistency=summary-consistency-facts"]
    assert (settings["threshold_facts"], settings["decisions"], settings["reasks"]) == (5, "logprobs", 1)
    with pytest.raises(ConfigError):
        Seal({"recipe": ["no-equals-sign"]})


# ---------------------------------------------------------------- the re-ask option's old name (issue 15)


def test_old_option_name_is_accepted_recorded_under_the_new_one_and_an_old_run_resumes(tmp_path):
    from assay.cli.options import flags_to_options
    from assay.methods.seal.method import Seal, SealOptions
    from assay.run.store import RunStore

    assert Seal({"max_reasks": 1}).settings()["reasks"] == 1 and "max_reasks" not in Seal({"max_reasks": 1}).settings()
    assert Seal(flags_to_options(["--max-reasks", "0"], SealOptions, "seal")).options.reasks == 0
    with pytest.raises(ConfigError, match="max_reasks"):
        Seal({"max_reasks": 1, "reasks": 2})
    answers = '{"consistency": "1,0,1,1,1", "consistency_weight": "0.2,0.2,0.2,0.2,0.2"}'
    first = run("qags-xsum", ScriptedJudge(lambda r: answers), limit=1, run_dir=tmp_path, options={"reasks": 1})
    with RunStore(tmp_path) as store:  # the manifest as the code before the rename wrote it
        manifest = store.manifest()
        settings = manifest["method_settings"]
        settings["max_reasks"] = settings.pop("reasks")
        store.set_meta("manifest", manifest)
    again = run("qags-xsum", ScriptedJudge([]), limit=1, run_dir=tmp_path, options={"max_reasks": 1})
    assert again.resumed and [j.score for j in again.judgments] == [j.score for j in first.judgments]
    with pytest.raises(ConfigError, match="reasks"):  # another value is another run, under either name
        run("qags-xsum", ScriptedJudge([]), limit=1, run_dir=tmp_path, options={"reasks": 2})
