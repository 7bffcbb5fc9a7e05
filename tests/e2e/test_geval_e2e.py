"""G-Eval end to end with the embedded SmolLM2 judge on real Topical-Chat samples."""

from __future__ import annotations

from pathlib import Path

import pytest

import assay
from assay.datasets import Dataset


def test_logprobs_scores_are_probability_weighted_and_the_run_resumes(topical_chat: Dataset, tmp_path: Path) -> None:
    data = topical_chat.select(limit=4)
    kwargs = dict(method="geval", judge="llamacpp:smollm2", judge_options={"n_threads": 2},
                  dimensions=["naturalness", "engagingness"], run_dir=tmp_path / "run",
                  options={"steps_max_tokens": 96})
    first = assay.evaluate(data, **kwargs)
    assert first.manifest["artifacts"]["mode"] == "logprobs"
    assert len(first.judgments) == 8  # every unit stored, scored or with its reason
    # what the pipeline guarantees, whatever SmolLM2 answers on this CPU (issue 23): a score is sum p(s) * s over
    # the renormalised distribution of the ratings read from the log-probabilities; no score carries its error
    for j in first.judgments:
        if j.score is None:
            assert j.error and j.trace["mode"] == "logprobs"
            continue
        dist = j.trace["distribution"]
        assert 1.0 <= j.score <= 3.0 and set(dist) <= {"1", "2", "3"}
        assert sum(dist.values()) == pytest.approx(1.0, abs=1e-4)
        assert j.score == pytest.approx(sum(int(k) * v for k, v in dist.items()), abs=1e-4)
        assert j.trace["top_tokens"] and j.trace["mode"] == "logprobs"
    assert first.units["asked"] == 8 and first.units["scored"] + first.units["parse_failed"] == 8
    steps = first.manifest["artifacts"]["dimensions"]["naturalness"]
    assert steps["steps_source"] in ("generated", "none (failed)")
    assert first.usage["score"].calls == 8

    again = assay.evaluate(data, **kwargs)
    assert again.resumed and again.progress.total == 0
    assert sum(u.calls for u in again.usage.values()) == 0  # steps come from the call cache
    assert again.scores() == first.scores()
