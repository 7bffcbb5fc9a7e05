"""The report's tables (``assay.report``) from a small run store made with a scripted judge: the values, the
coverage, and the failed and unreadable units shown, each checked against a computation from the ratings."""

from __future__ import annotations

from pathlib import Path

import pytest
from scipy import stats

import assay
from assay.errors import TransientJudgeError
from assay.judges.base import Request
from assay.judges.middleware import RetryPolicy
from assay.judges.scripted import ScriptedJudge
from assay.meta import meta_evaluate
from assay.report.summary import run_summary
from assay.report.tables import correlation_table, fmt

# the judge's rating per sample (in file order) and dimension; None: an unreadable answer, "fail": no answer at all
RATINGS = {"coherence": [1, 2, 3, 2, 3, 1, 2, None], "naturalness": [3, 3, 2, 1, 2, 3, "fail", 1]}
UNREADABLE = "2 or 3"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, assay.Dataset]:
    dataset = assay.load_dataset("topical-chat").select(limit=8)
    by_output = {s.output.strip(): i for i, s in enumerate(dataset.samples)}

    def answer(request: Request) -> str:
        prompt = request.messages[-1].content
        response = prompt.split("<<<RESPONSE>>>\n", 1)[1].split("\n<<<END RESPONSE>>>", 1)[0]
        dim = "coherence" if "for coherence" in prompt else "naturalness"
        rating = RATINGS[dim][by_output[response.strip()]]
        if rating == "fail":
            raise TransientJudgeError("503 Service Unavailable")
        return UNREADABLE if rating is None else str(rating)

    run_dir = tmp_path_factory.mktemp("report") / "run"
    result = assay.evaluate(dataset, method="direct", judge=ScriptedJudge(answer), run_dir=run_dir,
                            dimensions=["coherence", "naturalness"], retry=RetryPolicy(max_attempts=1))
    assert result.failed == 1 and result.units["parse_failed"] == 1  # the run is what the test means it to be
    return run_dir, dataset


def _expected(dataset: assay.Dataset, dim: str) -> tuple[list[float], list[float]]:
    """The scored units' ratings and the humans' ratings of the same samples."""
    pairs = [(float(r), s.human[dim]) for r, s in zip(RATINGS[dim], dataset.samples, strict=True)
             if isinstance(r, int)]
    return [p for p, _ in pairs], [h for _, h in pairs]


def test_run_summary_values_and_coverage(run: tuple[Path, assay.Dataset]) -> None:
    run_dir, dataset = run
    summary = run_summary(run_dir)
    assert summary["columns"] == ["dimension", "judged", "coverage", "mean score", "pearson", "spearman"]
    rows = {r[0]: r for r in summary["rows"]}
    assert list(rows) == ["coherence", "naturalness", "average"]
    for dim in ("coherence", "naturalness"):
        scores, human = _expected(dataset, dim)
        _, judged, coverage, mean, pearson, spearman = rows[dim]
        assert judged == 8  # failed and unreadable units are counted as asked
        assert coverage == pytest.approx(7 / 8)
        assert mean == pytest.approx(sum(scores) / len(scores))
        assert pearson == pytest.approx(stats.pearsonr(scores, human).statistic)
        assert spearman == pytest.approx(stats.spearmanr(scores, human).statistic)
    average = rows["average"]
    assert average[1] == 16 and average[2] == pytest.approx(14 / 16) and average[3] is None
    assert average[4] == pytest.approx((rows["coherence"][4] + rows["naturalness"][4]) / 2)
    assert "dataset-level" in summary["level_note"]


def test_correlation_table_shows_coverage_and_the_unscored_units(run: tuple[Path, assay.Dataset]) -> None:
    run_dir, dataset = run
    table = correlation_table(meta_evaluate(run_dir))
    assert table["columns"][:3] == ["dimension", "scored", "coverage"]
    rows = {r[0]: r for r in table["rows"]}
    for dim in ("coherence", "naturalness"):
        scores, human = _expected(dataset, dim)
        assert rows[dim][1:3] == ["7/8", "87.5%"]
        assert rows[dim][3] == fmt(stats.pearsonr(scores, human).statistic)
        assert rows[dim][-1] == "7"  # the units entering the correlation
    assert rows["average"][1:3] == ["14/16", "87.5%"]
    notes = "\n".join(table["notes"])
    assert "unscored naturalness: 1x" in notes and "503 Service Unavailable" in notes  # the failed unit
    assert "unscored coherence: 1x" in notes  # the unreadable answer
    assert table["title"] == "direct / scripted:scripted on topical-chat"
