"""SEAL end to end with the embedded SmolLM2 judge on real bundled data, resumed from the store.

SmolLM2-135M is a weak judge: it often fails the JSON formats. These tests therefore assert what
must hold whatever it answers (a score in [0, 1] or None with the reason, the stage-1 facts with ids
or the recorded failure, usage by stage), and that a re-run costs no new call.

The judge is given as a spec string: ``evaluate`` closes the judge it is handed when the run ends,
so a shared judge object could not serve a second run.
"""

from __future__ import annotations

import sqlite3

import pytest

import assay
from assay.run.store import DB_NAME

JUDGE = {"judge": "llamacpp:smollm2", "judge_options": {"n_threads": 2}}


def _check(j, expected_stages):
    if j.score is None:
        assert j.error.startswith("seal: verification answer unusable")
        assert j.trace["calls"][-1]["attempts"][-1]["error"]
    else:
        assert 0.0 <= j.score <= 1.0
        assert j.trace["matrix"] and len(j.trace["unit_scores"]) == len(j.trace["units"])
        assert abs(sum(j.trace["weights"]["values"]) - 1.0) < 1e-9
    assert set(j.usage) <= expected_stages
    assert j.usage["verify"].calls + j.usage["verify"].cached_calls >= 1


def _resume_costs_nothing(data, run_dir, first, **kw):
    """Resuming a finished run makes no call; re-scoring it from the call cache makes none either."""
    again = assay.evaluate(data, method="seal", **JUDGE, run_dir=run_dir, **kw)
    assert again.resumed
    assert sum(u.calls for u in again.usage.values()) == 0
    assert again.scores() == first.scores()
    db = sqlite3.connect(run_dir / DB_NAME)
    db.execute("DELETE FROM judgments")  # forget the judgments, keep the call cache
    db.commit()
    db.close()
    rescored = assay.evaluate(data, method="seal", **JUDGE, run_dir=run_dir, **kw)
    assert sum(u.calls for u in rescored.usage.values()) == 0
    assert sum(u.cached_calls for u in rescored.usage.values()) == sum(
        u.calls for j in first.judgments for u in j.usage.values())
    assert rescored.scores() == first.scores()


def test_qags_xsum_consistency_with_monadic_facts(qags_xsum, tmp_path):
    opts = {"recipe": ["consistency=summary-consistency-facts"], "reasks": 0, "fact_max_tokens": 96,
            "source_fact_max_tokens": 160}
    data = qags_xsum.select(limit=1)
    res = assay.evaluate(data, method="seal", **JUDGE, run_dir=tmp_path, options=opts)
    [j] = res.judgments
    _check(j, {"decompose", "verify"})
    facts = j.trace["stage1"]["output_facts"]
    assert facts["paid_here"] and j.usage["decompose"].calls >= 1
    if "items" in facts:
        assert [f["id"] for f in facts["items"]] == [f"s{i}" for i in range(1, len(facts["items"]) + 1)]
        assert j.trace["gate"]["counted"] == "facts" and j.trace["gate"]["threshold"] == 6
    else:
        assert facts["error"] and j.trace["granularity"] == "holistic"
    assert res.manifest["artifacts"]["seal_recipes"]["consistency"]["recipe"] == "summary-consistency-facts"
    _resume_costs_nothing(data, tmp_path, res, options=opts)


def test_topical_chat_engagingness(topical_chat, tmp_path):
    opts = {"reasks": 0}
    data = topical_chat.select(limit=1)
    res = assay.evaluate(data, method="seal", **JUDGE, run_dir=tmp_path, dimensions=["engagingness"],
                         options=opts)
    [j] = res.judgments
    _check(j, {"verify"})
    assert j.trace["granularity"] == "single" and len(j.trace["subdimensions"]) == 5
    _resume_costs_nothing(data, tmp_path, res, dimensions=["engagingness"], options=opts)


@pytest.mark.slow
def test_slow_summeval_all_dimensions_and_rerun_from_cache(summeval, tmp_path):
    """All four SummEval dimensions on two summaries; a fresh run over the same call cache is free."""
    data = summeval.select(docs=1, limit=2)
    res = assay.evaluate(data, method="seal", **JUDGE, run_dir=tmp_path, options={"reasks": 1})
    assert len(res.judgments) == 8
    for j in res.judgments:
        _check(j, {"decompose", "verify", "weights"})
    _resume_costs_nothing(data, tmp_path, res, options={"reasks": 1})
