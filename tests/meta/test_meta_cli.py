"""``assay meta``, ``compare`` and ``report`` end to end: UniEval's published table and real run directories."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import assay
from assay.cli.main import app
from assay.judges.scripted import ScriptedJudge
from published import TESTS

FIXTURES = TESTS / "fixtures" / "meta"
UNIEVAL = FIXTURES / "topical_chat.unieval_predictions.json"
# UniEval's published turn-level correlations on Topical-Chat (Zhong et al. 2022): (Pearson r, Spearman rho).
PUBLISHED = {"naturalness": (0.444, 0.514), "coherence": (0.595, 0.613), "engagingness": (0.557, 0.605),
             "groundedness": (0.536, 0.575)}


def _invoke(*args: str):
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})
    assert result.exit_code == 0, (result.output, result.exception)
    return result


def test_unieval_published_table_reproduced(tmp_path):
    out = tmp_path / "unieval.json"
    dims = [a for d in PUBLISHED for a in ("--dimension", d)]
    res = _invoke("meta", str(UNIEVAL), "--level", "turn", *dims, "--measure", "pearson", "--measure", "spearman",
                  "--json", str(out))
    data = json.loads(out.read_text())
    assert data["level"] == "dataset"
    rows = {r["dimension"]: r for r in data["rows"]}
    for dim, (r, rho) in PUBLISHED.items():
        assert round(rows[dim]["pearson"], 3) == r, dim
        assert round(rows[dim]["spearman"], 3) == rho, dim
        assert rows[dim]["coverage"] == 1.0 and rows[dim]["paired"] == 360
        assert f"{r:.3f}" in res.output and f"{rho:.3f}" in res.output
    assert set(rows) == {*PUBLISHED, "average"}


def _answer(salt: str):
    def answer(request):
        h = int(hashlib.sha256((salt + request.messages[-1].content).encode()).hexdigest(), 16)
        return "I cannot say" if h % 13 == 0 else str(1 + h % 5)  # some unparseable answers
    return answer


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> list[Path]:
    """Three real run directories of the direct method on SummEval's expert-annotated slice."""
    base = tmp_path_factory.mktemp("runs")
    dirs = []
    for salt in ("a", "b", "c"):
        d = base / f"direct-{salt}"
        assay.evaluate("summeval-experts", method="direct", judge=ScriptedJudge(_answer(salt), name=f"hash-{salt}"),
                       docs=4, run_dir=d)
        dirs.append(d)
    return dirs


def test_meta_on_a_run_directory(runs, tmp_path):
    out = tmp_path / "meta.json"
    res = _invoke("meta", str(runs[0]), "--bootstrap", "200", "--seed", "3", "--split", "--json", str(out))
    data = json.loads(out.read_text())
    assert data["level"] == "sample" and "summeval-experts" in data["level_reason"]
    assert data["table"]["method"] == "direct" and data["table"]["judge"] == "scripted:hash-a"
    rows = {r["dimension"]: r for r in data["rows"]}
    assert set(rows) == {"coherence", "consistency", "fluency", "relevance", "average"}
    assert rows["average"]["items"] == 4 * 12 * 4
    assert 0 < rows["average"]["coverage"] < 1  # the scripted judge's unparseable answers are counted, not scored
    assert rows["coherence"]["spearman_ci"] is not None and data["bootstrap"]["seed"] == 3
    assert data["bootstrap"]["unit"] == "document" and data["bootstrap"]["n_units"] == 4
    assert [h["dimension"] for h in data["human_agreement"]] == ["coherence", "consistency", "fluency", "relevance"]
    assert all(h["n_raters"] == 3 for h in data["human_agreement"])
    assert data["unscored_reasons"] and data["quality_split"]
    assert "human annotators' agreement" in res.output and "rho" in res.output


def test_run_summary_uses_the_dataset_level(runs):
    from assay.meta.correlation import sample_level
    from assay.meta.inputs import read_run
    from assay.report.summary import run_summary

    s = run_summary(runs[0])
    assert s["columns"] == ["dimension", "judged", "coverage", "mean score", "spearman", "kendall"]
    assert [r[0] for r in s["rows"]] == ["coherence", "consistency", "fluency", "relevance", "average"]
    assert "sample-level" in s["level_note"]
    table = read_run(runs[0])
    assert s["rows"][0][4] == pytest.approx(sample_level(table.dim("coherence"), "spearman")["value"])


def test_compare_and_report_on_run_directories(runs, tmp_path):
    groups = tmp_path / "groups.json"
    groups.write_text(json.dumps({"ab": ["scripted:hash-a", "scripted:hash-b"], "all": [str(r.name) for r in runs]}))
    out = tmp_path / "cmp.json"
    res = _invoke("compare", *map(str, runs), "--groups", str(groups), "--json", str(out))
    data = json.loads(out.read_text())
    assert [r["judge"] for r in data["runs"]] == ["scripted:hash-a", "scripted:hash-b", "scripted:hash-c"]
    by_group = {(r["group"], r["dimension"]): r for r in data["agreement"]}
    assert by_group[("ab", "coherence")]["n_raters"] == 2 and by_group[("all", "coherence")]["n_raters"] == 3
    stab = next(r for r in data["stability"] if r["dimension"] == "average" and r["measure"] == "spearman")
    assert stab["n"] == 3
    assert "agreement among judges" in res.output and "stability" in res.output
    html = tmp_path / "report.html"
    _invoke("report", *map(str, runs), "-o", str(html))
    page = html.read_text()  # the viewer's static export: its data inline, each run labelled apart
    data = json.loads(page.split("id='assay-data'>", 1)[1].split("</script>", 1)[0])
    assert [r["label"] for r in data["runs"]] == [f"direct-{s} · direct · scripted:hash-{s}" for s in "abc"]
    assert data["compare"]["agreement"] and data["compare"]["human_agreement"]


@pytest.mark.parametrize("args", [["--level", "corpus"], ["--kendall", "z"], ["--measure", "cosine"],
                                  ["--dimension", "nope"]])
def test_meta_rejects_bad_options_with_a_message(args, capsys, monkeypatch):
    import sys

    from assay.cli.main import main

    monkeypatch.setattr(sys, "argv", ["assay", "meta", str(UNIEVAL), *args])
    with pytest.raises(SystemExit) as exc:
        main()
    assert exc.value.code == 1
    assert "error:" in capsys.readouterr().err


METHOD_OPTIONS = {"geval": {}, "checkeval": {"checklist": "topical-chat"}, "seal": {},
                  "gereval": {"rubric": "human:topical-chat", "max_tokens": 64, "reasks": 0}}  # keep it cheap


@pytest.mark.parametrize("method", sorted(METHOD_OPTIONS))
def test_meta_reads_a_run_of_every_method(method, smollm2, topical_chat, tmp_path):
    """`assay meta` needs nothing method-specific: a real embedded-judge run of each method goes straight in."""
    result = assay.evaluate(topical_chat, method=method, judge=smollm2, dimensions=["engagingness"], docs=1,
                            options=METHOD_OPTIONS[method], run_dir=tmp_path / method)
    assert len(result.judgments) == 6
    out = tmp_path / "meta.json"
    _invoke("meta", str(result.run_dir), "--json", str(out))
    data = json.loads(out.read_text())
    assert data["table"]["method"] == method and data["level"] == "dataset"
    row = next(r for r in data["rows"] if r["dimension"] == "engagingness")
    assert row["items"] == 6
    assert row["coverage"] == pytest.approx(sum(j.score is not None for j in result.judgments) / 6)
