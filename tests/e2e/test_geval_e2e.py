"""G-Eval end to end with the embedded SmolLM2 judge on real Topical-Chat samples."""

from __future__ import annotations

from pathlib import Path

import pytest

import assay
from assay.datasets import Dataset


def test_logprobs_scores_are_continuous_and_the_run_resumes(topical_chat: Dataset, tmp_path: Path) -> None:
    data = topical_chat.select(limit=4)
    kwargs = dict(method="geval", judge="llamacpp:smollm2", judge_options={"n_threads": 2},
                  dimensions=["naturalness", "engagingness"], run_dir=tmp_path / "run",
                  options={"steps_max_tokens": 96})
    first = assay.evaluate(data, **kwargs)
    assert first.manifest["artifacts"]["mode"] == "logprobs"
    assert len(first.judgments) == 8
    scored = [j for j in first.judgments if j.score is not None]
    assert len(scored) >= 4, [j.error for j in first.judgments]
    for j in scored:
        assert 1.0 <= j.score <= 3.0
        assert sum(j.trace["distribution"].values()) == pytest.approx(1.0, abs=1e-4)
        assert j.trace["top_tokens"] and j.trace["mode"] == "logprobs"
    assert any(not float(j.score).is_integer() for j in scored)  # probability-weighted, not integers
    assert len({round(j.score, 6) for j in scored}) > 1
    for j in first.judgments:
        assert j.score is not None or j.error  # an unscored judgment says why
    steps = first.manifest["artifacts"]["dimensions"]["naturalness"]
    assert steps["steps_source"] in ("generated", "none (failed)")
    assert first.usage["score"].calls == 8

    again = assay.evaluate(data, **kwargs)
    assert again.resumed and again.progress.total == 0
    assert sum(u.calls for u in again.usage.values()) == 0  # steps come from the call cache
    assert again.scores() == first.scores()
