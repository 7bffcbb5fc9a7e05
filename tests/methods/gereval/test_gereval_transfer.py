"""GER-Eval consistency and transfer tables, and the ``assay rubric`` commands (scripted judges, in process)."""

from __future__ import annotations

import json
import sys
import zlib

import numpy as np
import pytest
from typer.testing import CliRunner

import assay
from assay.cli.main import app
from assay.errors import ConfigError
from assay.judges.scripted import ScriptedJudge
from assay.meta.agreement import fleiss_kappa, icc, krippendorff_alpha
from assay.meta.inputs import load_transfer_runs as load_runs
from assay.meta.transfer import criterion_matrix, pair_stats, transfer_tables
from assay.methods.gereval.rubric import CategoricalScale, Criterion, Provenance, Rubric

runner = CliRunner()


def _base_score(request) -> int:
    """A deterministic 1-3 score from the judged response (the last fenced RESPONSE block)."""
    text = request.messages[0].content.rsplit("<<<RESPONSE>>>", 1)[1]
    return zlib.crc32(text.encode()) % 3 + 1


def _judge(name: str, flip_every: int | None = None) -> ScriptedJudge:
    counter = {"n": 0}

    def answer(request):
        score = _base_score(request)
        counter["n"] += 1
        if flip_every and counter["n"] % flip_every == 0:
            score = score % 3 + 1  # a different value on the same scale
        return json.dumps({"reasoning": "because", "score": score})

    return ScriptedJudge(answer, name=name)


@pytest.fixture(scope="module")
def runs(tmp_path_factory, topical_chat):
    base = tmp_path_factory.mktemp("runs")
    opts = {"rubric": "human:topical-chat"}
    dims = ["naturalness", "coherence"]
    a = assay.evaluate(topical_chat, method="gereval", judge=_judge("a"), options=opts, docs=4, dimensions=dims,
                       run_dir=base / "a", concurrency=1)
    b = assay.evaluate(topical_chat, method="gereval", judge=_judge("b", flip_every=4), options=opts, docs=4,
                       dimensions=dims, run_dir=base / "b", concurrency=1)
    c = assay.evaluate(topical_chat, method="gereval", judge=_judge("a"), options=opts | {"shots": 1}, docs=4,
                       dimensions=dims, run_dir=base / "a-few", concurrency=1)
    return a.run_dir, b.run_dir, c.run_dir


def test_pair_stats_by_hand():
    a = np.array([1, 2, 3, 3, np.nan, 2])
    b = np.array([1, 2, 2, 3, 1, np.nan])
    got = pair_stats(a, b)
    assert got["n"] == 4 and got["agreement"] == pytest.approx(3 / 4)
    assert got["pearson"] == pytest.approx(np.corrcoef([1, 2, 3, 3], [1, 2, 2, 3])[0, 1])
    assert pair_stats(np.array([1.0, 1.0, 1.0]), np.array([1.0, 2.0, 3.0]))["pearson"] is None  # constant run


def test_transfer_tables_use_the_meta_agreement_functions(runs):
    a, b, few = runs
    loaded = load_runs([a, b])
    assert loaded.criteria() == ["naturalness", "coherence"]
    tables = transfer_tables(loaded)
    m = criterion_matrix(loaded, "naturalness")
    assert m.shape == (2, 24)
    row = next(r for r in tables["reliability"] if r["criterion"] == "naturalness")
    assert row["icc2_1"] == pytest.approx(icc(m)["icc2_1"])
    assert row["alpha"] == pytest.approx(krippendorff_alpha(m, "interval"))
    assert row["kappa"] == pytest.approx(fleiss_kappa(m, categories=[1, 2, 3]))
    # judge b changes every 4th answer, so agreement with a is 3/4 overall
    agree = [r["agreement"] * r["n"] for r in tables["pairwise"]]
    assert sum(agree) / sum(r["n"] for r in tables["pairwise"]) == pytest.approx(0.75)
    # the same judge zero-shot and few-shot answers alike here: full agreement and alpha 1
    same = transfer_tables(load_runs([a, few]))
    assert all(r["agreement"] == 1.0 for r in same["pairwise"])
    assert all(r["alpha"] == pytest.approx(1.0) for r in same["reliability"])


def test_transfer_needs_two_runs_sharing_criteria(runs, tmp_path, topical_chat):
    with pytest.raises(ConfigError, match="at least two"):
        load_runs([runs[0]])
    other = assay.evaluate(topical_chat, method="gereval", judge=_judge("a"), docs=1, run_dir=tmp_path / "o",
                           options={"rubric": "human:topical-chat"}, dimensions=["groundedness"])
    with pytest.raises(ConfigError, match="share no criterion"):
        load_runs([runs[0], other.run_dir])


def test_cli_transfer_prints_both_tables(runs, tmp_path):
    out = tmp_path / "t.json"
    result = runner.invoke(app, ["rubric", "transfer", str(runs[0]), str(runs[1]), str(runs[2]), "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert "Krippendorff" in result.output and "agreement" in result.output
    data = json.loads(out.read_text())
    assert len(data["pairwise"]) == 2 * 3 and len(data["reliability"]) == 2


def test_cli_human_and_show(tmp_path):
    path = tmp_path / "h.json"
    result = runner.invoke(app, ["rubric", "human", "summeval", "-o", str(path)])
    assert result.exit_code == 0, result.output
    assert json.loads(path.read_text())["provenance"]["source"] == "human"
    shown = runner.invoke(app, ["rubric", "show", str(path)])
    assert shown.exit_code == 0 and "consistency" in shown.output and "1-5" in shown.output


def test_cli_stats_without_the_embed_extra_says_uniqueness_was_not_computed(tmp_path):
    out = tmp_path / "s.json"
    result = runner.invoke(app, ["rubric", "stats", "human:summeval", "--embedder", "none", "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert "not computed" in result.output
    data = json.loads(out.read_text())
    assert data["embedder"] is None
    [stats] = data["rubrics"]
    assert stats["breadth"] == 4 and stats["unique"] is None and stats["merged"] is None


def _main(monkeypatch, capsys, *args: str) -> tuple[int, str]:
    """Run the real entry point (with its error printing) in process; return exit code and stderr."""
    from assay.cli.main import main

    monkeypatch.setattr("sys.argv", ["assay", *args])
    with pytest.raises(SystemExit) as exc:
        main()
    return exc.value.code, " ".join(capsys.readouterr().err.split())


def test_missing_embed_extra_is_a_clear_error_naming_it(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # as if not installed
    code, err = _main(monkeypatch, capsys, "rubric", "stats", "human:summeval")
    assert code == 1
    assert "pip install 'assay[embed]'" in err and "--embedder none" in err and "Traceback" not in err


def test_square_brackets_in_messages_are_printed_not_taken_as_markup(monkeypatch, capsys, tmp_path):
    code, err = _main(monkeypatch, capsys, "judges", "llamacpp:smollm2", "--judge-opt", "[/x]")
    assert code == 1 and "--judge-opt '[/x]' must be KEY=VALUE" in err  # '[/x]' used to crash rich
    tone = Criterion(name="Tone [v2]", description="[b]warm[/b] words", scale=CategoricalScale(labels=("bad", "ok")))
    rubric = Rubric(dataset="topical-chat", task="t", criteria=(tone,),
                    provenance=Provenance(source="generated", dataset="topical-chat", condition="task",
                                          judge={"backend": "scripted", "model": "x"},
                                          notes=["pip install 'assay[embed]'"]))
    path = tmp_path / "r.json"
    path.write_text(rubric.to_json(), encoding="utf-8")
    shown = runner.invoke(app, ["rubric", "show", str(path)])
    assert shown.exit_code == 0, shown.output
    assert "Tone [v2]" in shown.output and "[b]warm[/b]" in shown.output and "'assay[embed]'" in shown.output
