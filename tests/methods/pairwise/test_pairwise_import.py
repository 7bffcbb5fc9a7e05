"""``assay import --method pairwise``: FastChat's pair judgments (both games per record) read by the live verdict
reader into a pairwise run that ``assay meta`` reports like a judged one."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import assay
from assay.cli.main import app
from assay.errors import ConfigError, InputError
from assay.importer.write import ImportOptions, import_answers
from assay.meta.pairwise_run import run_report

runner = CliRunner()


def fastchat_records() -> list[dict]:
    """FastChat ``gpt-4_pair.jsonl`` records on two SummEval articles: game 1 shows model_1 as assistant A, game 2
    model_2 as A; ``g*_winner`` as FastChat maps them (model_1, model_2, tie, error)."""
    docs = list(dict.fromkeys(s.doc_id for s in assay.load_dataset("summeval").samples))[:2]
    out = []
    for d in docs:
        out += [
            # consistent: M11 better in both games
            {"question_id": d, "model_1": "M11", "model_2": "M8", "g1_judgment": "A is clearer. [[A]]",
             "g2_judgment": "Assistant B is better. [[B]]", "g1_winner": "model_1", "g2_winner": "model_1",
             "judge": ["gpt-4", "pair-v2"], "turn": 1},
            # inconsistent: the first position wins both games
            {"question_id": d, "model_1": "M11", "model_2": "M9", "g1_judgment": "[[A]]", "g2_judgment": "[[A]]",
             "g1_winner": "model_1", "g2_winner": "model_2", "judge": ["gpt-4", "pair-v2"], "turn": 1},
            # unreadable game 2 (FastChat said error)
            {"question_id": d, "model_1": "M8", "model_2": "M9", "g1_judgment": "[[C]]",
             "g2_judgment": "I cannot decide.", "g1_winner": "tie", "g2_winner": "error",
             "judge": ["gpt-4", "pair-v2"], "turn": 1},
        ]
    out.append({"question_id": "no-such-article", "model_1": "M11", "model_2": "M8", "g1_judgment": "[[A]]",
                "g2_judgment": "[[B]]", "g1_winner": "model_1", "g2_winner": "model_1", "turn": 1})
    return out


def write(tmp_path, records):
    path = tmp_path / "gpt-4_pair.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_fastchat_pairs_import_as_a_pairwise_run(tmp_path):
    path = write(tmp_path, fastchat_records())
    options = ImportOptions(method="pairwise", dataset="summeval", dimension="relevance",
                            answers="g1_judgment,g2_judgment")
    res = import_answers(path, options, tmp_path / "run")
    assert res.counts["matched"] == 6 and res.counts["unmatched"] == 1
    assert res.counts["scored"] == 4 and res.counts["parse_failed"] == 2
    good = next(j for j in res.judgments if j.sample_id.endswith(":M8") and ":M11|" in j.sample_id)
    assert good.score == 1.0 and good.trace["consistent"] is True
    assert good.trace["orders"]["ba"]["verdict"] == "B" and good.trace["disagrees_with_file"] == []
    flip = next(j for j in res.judgments if j.sample_id.endswith(":M9") and ":M11|" in j.sample_id)
    assert flip.score == 0.5 and flip.trace["outcome"] == "inconsistent"
    bad = next(j for j in res.judgments if j.score is None)
    assert "unreadable verdict" in bad.error and bad.status == "parse_failed"
    rep = run_report(tmp_path / "run", n_boot=50)["relevance"]
    assert rep["n_pairs"] == 4 and rep["consistency"] == 0.5 and rep["position_bias"] == 1.0
    assert rep["systems"]["M11"]["win_rate"] == 0.75  # 1 + 0.5 per article


def test_a_verdict_the_file_read_otherwise_is_recorded(tmp_path):
    records = fastchat_records()[:1]
    records[0]["g1_winner"] = "model_2"  # FastChat says model_2 won game 1; the text says [[A]]
    res = import_answers(write(tmp_path, records), ImportOptions(method="pairwise", dataset="summeval",
                                                                 dimension="relevance",
                                                                 answers="g1_judgment,g2_judgment"), tmp_path / "r")
    assert res.judgments[0].trace["disagrees_with_file"] == ["ab"]
    assert res.judgments[0].score == 1.0  # read from the text, with the live rules


def test_bad_pairwise_import_options_and_records_are_clear_errors(tmp_path):
    path = write(tmp_path, fastchat_records())
    with pytest.raises(ConfigError, match="two orders"):
        import_answers(path, ImportOptions(method="pairwise", dataset="summeval", dimension="relevance",
                                           answers="g1_judgment"), tmp_path / "a")
    broken = fastchat_records()
    del broken[1]["model_2"]
    with pytest.raises(InputError, match="model_2"):
        import_answers(write(tmp_path, broken), ImportOptions(method="pairwise", dataset="summeval",
                                                              dimension="relevance",
                                                              answers="g1_judgment,g2_judgment"), tmp_path / "b")


def test_import_pairwise_from_the_command_line(tmp_path):
    path = write(tmp_path, fastchat_records())
    res = runner.invoke(app, ["import", str(path), "--method", "pairwise", "--dataset", "summeval", "--dimension",
                              "relevance", "--answers", "g1_judgment,g2_judgment", "--run-dir", str(tmp_path / "run")],
                        catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert "imported 6 answers" in " ".join(res.output.split())
    meta = runner.invoke(app, ["meta", str(tmp_path / "run"), "--pair-bootstrap", "0"], catch_exceptions=False)
    assert meta.exit_code == 0 and "pairwise: relevance" in meta.output
