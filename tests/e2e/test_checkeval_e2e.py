"""CheckEval end to end with the embedded judge (SmolLM2-135M) on real bundled data.

Build a checklist for one Topical-Chat dimension, show it, evaluate Topical-Chat samples with it
and QAGS samples with the shipped QAGS checklist, then resume both runs from the store.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest
from typer.testing import CliRunner

import assay
from assay.cli.main import app
from assay.judges.middleware import ManagedJudge
from assay.methods.checkeval.build import BuildSettings, build_checklist
from assay.methods.checkeval.checklist import dump_checklist, stage_counts
from assay.methods.checkeval.shipped import load_checklist

JUDGE = "llamacpp:smollm2"
JUDGE_OPTS = {"n_threads": 2}


def _shortest(name: str, n: int = 1) -> assay.Dataset:
    """The n samples with the shortest prompts among the first 30 (keeps the embedded model fast)."""
    ds = assay.load_dataset(name)
    picked = sorted(ds.samples[:30], key=lambda s: len(s.source) + len(s.context or "") + len(s.output))[:n]
    return replace(ds, samples=picked)


def _check_judgment(j, asked: int) -> None:
    tr = j.trace
    assert tr["asked"] == asked == len(tr["questions"])
    assert tr["answered"] + tr["missing"] == asked
    if j.score is None:
        assert tr["answered"] == 0 and j.error
    else:
        assert 0.0 <= j.score <= 1.0 and tr["binary_score"] == tr["yes"] / tr["answered"]
        assert j.score == (tr["soft_score"] if tr["score_kind"] == "soft" else tr["binary_score"])
    for q in tr["questions"]:
        assert q["answer"] in ("yes", "no", None)
        assert q["answer"] is not None or q.get("note")  # a missing answer says why
    assert sum(u.calls + u.cached_calls for u in j.usage.values()) == len(tr["groups"]) + len(tr["reasks"])


def test_evaluate_topical_chat_and_qags_then_resume(tmp_path):
    """The fast path: shipped checklists, one sample each, soft on QAGS, and a resume with zero new calls."""
    tc = _shortest("topical-chat")
    run_tc = tmp_path / "tc"
    res = assay.evaluate(tc, method="checkeval", judge=JUDGE, judge_options=JUDGE_OPTS, dimensions=["naturalness"],
                         run_dir=run_tc, options={"group_size": 5})
    (j,) = res.judgments
    _check_judgment(j, 5)
    assert j.trace["checklist"]["name"] == "topical-chat"
    qags = _shortest("qags-cnndm")
    run_q = tmp_path / "qags"
    res_q = assay.evaluate(qags, method="checkeval", judge=JUDGE, judge_options=JUDGE_OPTS, run_dir=run_q,
                           options={"soft": True, "group_size": 7})
    (jq,) = res_q.judgments
    _check_judgment(jq, 7)
    if jq.trace["answered"]:
        assert jq.trace["score_kind"] == "soft" and jq.score == jq.trace["soft_score"]
        assert all(q["p_yes"] is not None for q in jq.trace["questions"] if q["answer"] is not None)
    again = assay.evaluate(tc, method="checkeval", judge=JUDGE, judge_options=JUDGE_OPTS, dimensions=["naturalness"],
                           run_dir=run_tc, options={"group_size": 5})
    again_q = assay.evaluate(qags, method="checkeval", judge=JUDGE, judge_options=JUDGE_OPTS, run_dir=run_q,
                             options={"soft": True, "group_size": 7})
    assert again.resumed and again_q.resumed
    assert sum(u.calls for u in again.usage.values()) == sum(u.calls for u in again_q.usage.values()) == 0
    assert again.judgments[0].score == j.score and again_q.judgments[0].score == jq.score


@pytest.mark.slow
def test_build_show_evaluate_and_resume(smollm2, tmp_path):
    """The whole path: build a Topical-Chat coherence checklist with the embedded judge, show it, use it."""
    tc = assay.load_dataset("topical-chat")
    settings = BuildSettings(temperature=0.0, max_tokens=80, filter_max_tokens=200, reasks=0)
    built = asyncio.run(build_checklist(load_checklist("topical-chat"), tc.info, ManagedJudge(smollm2), settings,
                                        ["coherence"], name="tc-coherence"))
    path = tmp_path / "tc-coherence.yaml"
    path.write_text(dump_checklist(built))
    loaded = load_checklist(str(path))
    dim = loaded.dimension("coherence")
    counts = stage_counts(loaded)["coherence"]
    assert counts["seed"] == 4
    grown = sum(counts[s] for s in ("seed", "diversification", "elaboration"))
    assert counts["final"] == grown - counts["filtered out"]
    assert {q.seed for _, q in dim.questions() if q.seed} <= {"coh-1", "coh-2", "coh-3", "coh-4"}
    calls = loaded.build.calls
    assert [c.stage for c in calls] == ["diversification", "elaboration", "elaboration", "elaboration", "filter"]
    assert all(c.response is not None and c.prompt_sha256 for c in calls)
    assert loaded.build.judge["model"] == "smollm2"

    shown = CliRunner().invoke(app, ["checklist", "show", str(path)], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert "final checklist" in shown.output and "generation calls" in shown.output

    kept = sum(len(s.kept()) for s in dim.sub_dimensions)
    run_tc = tmp_path / "run-tc"
    opts = {"checklist": str(path)}
    tc2 = _shortest("topical-chat", 2)
    res = assay.evaluate(tc2, method="checkeval", judge=JUDGE, judge_options=JUDGE_OPTS, dimensions=["coherence"],
                         run_dir=run_tc, options=opts)
    assert len(res.judgments) == 2
    for j in res.judgments:
        _check_judgment(j, kept)
        assert j.trace["checklist"]["name"] == "tc-coherence"

    qags = _shortest("qags-cnndm")
    run_q = tmp_path / "run-qags"
    res_q = assay.evaluate(qags, method="checkeval", judge=JUDGE, judge_options=JUDGE_OPTS, run_dir=run_q,
                           options={"soft": True})
    (jq,) = res_q.judgments
    _check_judgment(jq, 7)
    if jq.trace["answered"]:
        assert jq.trace["score_kind"] == "soft" and jq.score == jq.trace["soft_score"]
        assert all(q["p_yes"] is not None for q in jq.trace["questions"] if q["answer"] is not None)

    again = assay.evaluate(tc2, method="checkeval", judge=JUDGE, judge_options=JUDGE_OPTS, dimensions=["coherence"],
                           run_dir=run_tc, options=opts)
    again_q = assay.evaluate(qags, method="checkeval", judge=JUDGE, judge_options=JUDGE_OPTS, run_dir=run_q,
                             options={"soft": True})
    assert again.resumed and again_q.resumed
    assert sum(u.calls for u in again.usage.values()) == 0 and sum(u.calls for u in again_q.usage.values()) == 0
    assert [j.score for j in again.judgments] == [j.score for j in res.judgments]
