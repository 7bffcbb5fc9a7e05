"""``assay meta --labels/--human``, ``assay labels plan/pick``, ``assay jury`` and the calibrated export column,
end to end on run directories of a scripted judge (what the pipeline guarantees, not how good the judge is)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import assay
from assay.judges.scripted import ScriptedJudge
from assay.meta.inputs import load_scores
from assay.meta.trust import simulate_labels

pytest.importorskip("ppi_py")

DIMS = ["coherence", "consistency", "fluency", "relevance"]


def _answer(salt: str):
    def answer(request):
        h = int(hashlib.sha256((salt + request.messages[-1].content).encode()).hexdigest(), 16)
        return "I cannot say" if h % 11 == 0 else str(1 + h % 5)  # some unparseable answers
    return answer


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> list[Path]:
    """Two run directories of the direct method on SummEval's expert slice (6 articles x 12 systems)."""
    base = tmp_path_factory.mktemp("trust-runs")
    dirs = []
    for salt in ("a", "b"):
        d = base / f"direct-{salt}"
        assay.evaluate("summeval-experts", method="direct", judge=ScriptedJudge(_answer(salt), name=f"hash-{salt}"),
                       docs=6, run_dir=d)
        dirs.append(d)
    return dirs


def test_meta_labels_json_carries_the_issue_keys(runs, tmp_path, cli):
    out = tmp_path / "t.json"
    code, stdout, _ = cli("meta", str(runs[0]), "--labels", "30", "--seed", "4", "--json", str(out))
    assert code == 0, stdout
    data = json.loads(out.read_text())
    table = load_scores(runs[0])
    chosen = simulate_labels(table, 30, seed=4)
    for dim in DIMS:
        row = data["trust"][dim]
        assert set(row["human_only"]) == {"estimate", "low", "high"} and set(row["ppi"]) == {"estimate", "low", "high"}
        assert set(row["judge_only"]) == {"estimate"}
        assert row["n_labelled"] == 30 and row["n_unlabelled"] == 72 - 30 and 0 <= row["lambda"] <= 1
        assert row["human_only"]["estimate"] == pytest.approx(np.mean(list(chosen.ratings[dim].values())))
        frame = table.dim(dim)
        assert row["all_labels"] == pytest.approx(frame["human"].mean())
        assert row["judge_only"]["estimate"] == pytest.approx(frame["score"].mean())  # SummEval: same 1-5 scale
        assert set(row["systems"]) == set(frame["system_id"])
        assert "warning" not in row  # 30 labels for the dimension: not few
        for cell in row["systems"].values():
            assert "all_labels" in cell and ("ppi" in cell or "error" in cell)
            assert "error" in cell or "fewer than 30 labels" in cell["warning"]  # a handful per system: said
    assert "PPI++" in stdout and "labels only, prediction-powered, judge only" in stdout


def test_pick_sheet_read_back_with_human_calibrate_and_export(runs, tmp_path, cli):
    sheet = tmp_path / "sheet.csv"
    code, stdout, _ = cli("labels", "pick", str(runs[0]), "-n", "24", "-o", str(sheet), "--strategy", "stratified")
    assert code == 0, stdout
    picked = pd.read_csv(sheet)
    assert len(picked) == 24 and {"source", "output", "inclusion_probability", *DIMS} <= set(picked.columns)
    assert picked[DIMS].isna().all().all()  # empty rating columns
    human = load_scores(runs[0]).frame.pivot_table(index="sample_id", columns="dimension", values="human")
    for dim in ("coherence", "fluency"):  # a person rates two dimensions, and skips one sample's fluency
        picked[dim] = picked["sample_id"].map(human[dim])
    picked.loc[0, "fluency"] = None
    picked.to_csv(sheet, index=False)
    out = tmp_path / "h.json"
    code, stdout, _ = cli("meta", str(runs[0]), "--human", str(sheet), "--calibrate", "linear", "--json", str(out))
    assert code == 0, stdout
    data = json.loads(out.read_text())
    assert set(data["trust"]) == {"coherence", "fluency"} and data["labels"]["weighted"]
    assert data["trust"]["coherence"]["n_labelled"] == 24 and data["trust"]["fluency"]["n_labelled"] == 23
    assert "all_labels" not in data["trust"]["coherence"]
    cal = data["calibration"]["coherence"]
    assert set(cal["before"]) >= {"mae", "spearman"} and cal["improved"] == (cal["after"]["mae"] < cal["before"]["mae"])
    export = tmp_path / "e.csv"
    code, stdout, _ = cli("export", str(runs[0]), "-f", "csv", "-o", str(export))
    assert code == 0 and "score_calibrated" in stdout
    rows = pd.read_csv(export)
    judged = load_scores(runs[0]).frame
    merged = rows.merge(judged, on=["sample_id", "dimension"], suffixes=("", "_t"))
    assert np.allclose(merged["score"].fillna(-1), merged["score_t"].fillna(-1))  # the judge's own score untouched
    coh = rows[(rows["dimension"] == "coherence") & rows["score"].notna()]
    assert coh["score_calibrated"].notna().all()
    assert rows.loc[rows["dimension"] == "consistency", "score_calibrated"].isna().all()
    (runs[0] / "calibration.json").unlink()


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d.assign(coherence=[7.0] + [None] * (len(d) - 1)), "off the human scale 1-5"),
    (lambda d: d.assign(coherence=["good"] + [None] * (len(d) - 1)), "expected a rating"),
    (lambda d: pd.concat([d, d.iloc[:1]]), "several records"),
    (lambda d: d.assign(sample_id=["nope", *d["sample_id"][1:]]), "match no sample"),
])
def test_bad_labels_are_refused_naming_file_record_and_field(runs, tmp_path, cli, edit, message):
    ids = load_scores(runs[0]).frame["sample_id"].drop_duplicates()[:5]
    sheet = tmp_path / "bad.csv"
    edit(pd.DataFrame({"sample_id": list(ids), "coherence": [3.0] * 5})).to_csv(sheet, index=False)
    out = tmp_path / "never.json"
    code, _, err = cli("meta", str(runs[0]), "--human", str(sheet), "--json", str(out))
    assert code == 1 and message in err and "bad.csv" in err and not out.exists()
    if "rating" in message or "scale" in message:
        assert "line 2" in err and "coherence" in err


def test_rating_field_for_one_dimension(runs, tmp_path, cli):
    ids = load_scores(runs[0]).frame["sample_id"].drop_duplicates()[:10]
    labels = tmp_path / "l.jsonl"
    labels.write_text("".join(json.dumps({"sid": s, "r": 1 + i % 5}) + "\n" for i, s in enumerate(ids)))
    out = tmp_path / "r.json"
    code, stdout, _ = cli("meta", str(runs[0]), "--human", str(labels), "--id", "sid", "--dimension", "fluency",
                          "--rating", "r", "--no-systems", "--json", str(out))
    assert code == 0, stdout
    row = json.loads(out.read_text())["trust"]["fluency"]
    assert row["n_labelled"] == 10 and row["human_only"]["estimate"] == pytest.approx(np.mean([1 + i % 5
                                                                                             for i in range(10)]))


def test_interval_is_chosen_on_the_cli_named_in_the_json_and_shown(runs, tmp_path, cli):
    got = {}
    for kind in ("auto", "normal", "t", "bootstrap-t", "hall"):
        out = tmp_path / f"{kind}.json"
        code, stdout, _ = cli("meta", str(runs[0]), "--labels", "40", "--interval", kind, "--json", str(out))
        assert code == 0, stdout
        data = json.loads(out.read_text())
        used = "bootstrap-t" if kind == "auto" else kind  # 40 labels: auto is bootstrap-t
        assert data["interval"] == kind
        for row in data["trust"].values():
            assert row["interval"] == used
            for cell in row["systems"].values():
                assert "error" in cell or cell["interval"] == used
            for diff in row["differences"]:
                assert diff["interval"] == used
        assert used in stdout and f"--interval {kind}" in stdout
        got[kind] = data["trust"]["coherence"]["human_only"]
    assert got["auto"] == got["bootstrap-t"]
    assert got["normal"]["estimate"] == got["t"]["estimate"] == got["hall"]["estimate"]
    assert got["t"]["high"] - got["t"]["low"] > got["normal"]["high"] - got["normal"]["low"]
    code, _, err = cli("meta", str(runs[0]), "--labels", "40", "--interval", "wald")
    assert code != 0 and "--interval 'wald'" in err


def test_labels_plan_json(runs, tmp_path, cli):
    out = tmp_path / "p.json"
    code, stdout, _ = cli("labels", "plan", str(runs[0]), "--labels", "30", "--width", "0.2", "--price", "1.5",
                          "--json", str(out))
    assert code == 0, stdout
    plans = json.loads(out.read_text())["plans"]
    for plan in plans.values():
        assert plan["ppi"]["labels"] <= plan["human_only"]["labels"] <= 72
        assert plan["human_only"]["cost"] == 1.5 * plan["human_only"]["labels"]
        assert plan["interval"] == "t" and "no closed-form width" in plan["notes"][0]  # auto, below 200: bootstrap-t
    code, stdout, _ = cli("labels", "plan", str(runs[0]), "--labels", "30", "--width", "0.2", "--interval", "normal",
                          "--json", str(out))
    assert code == 0 and "planned with the normal quantile" in stdout
    normal = json.loads(out.read_text())["plans"]
    assert all(normal[d]["human_only"]["labels"] <= plans[d]["human_only"]["labels"] for d in plans)


def test_jury_run_is_a_run_with_members_failures_explicit(runs, tmp_path, cli):
    jury = tmp_path / "jury"
    code, stdout, _ = cli("jury", str(runs[0]), str(runs[1]), "-o", str(jury))
    assert code == 0, stdout
    assert "scripted:hash-a" in stdout and "jury" in stdout
    a, b, j = (load_scores(p) for p in (runs[0], runs[1], jury))
    merged = a.frame.merge(b.frame, on=["sample_id", "dimension"]).merge(j.frame, on=["sample_id", "dimension"])
    both = merged["score_x"].notna() & merged["score_y"].notna()
    assert np.allclose(merged.loc[both, "score"], (merged.loc[both, "score_x"] + merged.loc[both, "score_y"]) / 2)
    assert merged.loc[~both, "score"].isna().all() and (~both).any()  # never a silent mean of fewer judges
    assert all("jury: no score from" in j.errors[(r.sample_id, r.dimension)]
               for r in merged.loc[~both].itertuples())
    from assay.run.store import RunStore

    with RunStore(jury, readonly=True) as store:
        manifest = store.manifest()
        js = {(x.sample_id, x.dimension): x for x in store.iter_judgments()}
    assert [m["judge"] for m in manifest["jury"]["members"]] == ["scripted:hash-a", "scripted:hash-b"]
    sid, dim = merged.loc[both].iloc[0][["sample_id", "dimension"]]
    assert set(js[(sid, dim)].trace["members"]) == {"scripted:hash-a", "scripted:hash-b"}
    for command in (["meta", str(jury)], ["compare", str(jury), str(runs[0])], ["export", str(jury)]):
        code, stdout, err = cli(*command)
        assert code == 0, (command, stdout, err)
    partial = tmp_path / "partial"
    code, _, _ = cli("jury", str(runs[0]), str(runs[1]), "-o", str(partial), "--missing", "mean")
    assert code == 0
    p = load_scores(partial).frame.merge(merged.loc[~both, ["sample_id", "dimension", "score_x", "score_y"]],
                                         on=["sample_id", "dimension"])
    assert np.allclose(p["score"], p[["score_x", "score_y"]].mean(axis=1), equal_nan=True)
    with RunStore(partial, readonly=True) as store:
        traces = {(x.sample_id, x.dimension): x.trace for x in store.iter_judgments()}
    one = p[p["score"].notna()].iloc[0]
    assert traces[(one["sample_id"], one["dimension"])]["partial_mean_without"]  # the missing member is named
    learned = tmp_path / "learned"
    code, stdout, _ = cli("jury", str(runs[0]), str(runs[1]), "-o", str(learned), "--weights", "learned",
                          "--labels", "30")
    assert code == 0, stdout
    code, _, err = cli("jury", str(runs[0]), str(runs[1]), "-o", str(learned))
    assert code == 1 and "already holds a run" in err


def test_a_scores_file_with_the_judge_scale_given(tmp_path, cli):
    from published import TESTS

    unieval = TESTS / "fixtures" / "meta" / "topical_chat.unieval_predictions.json"
    out = tmp_path / "u.json"
    code, stdout, _ = cli("meta", str(unieval), "--dataset", "topical-chat", "--labels", "60", "--dimension",
                          "coherence", "--judge-scale", "coherence=0,1", "--no-systems", "--json", str(out))
    assert code == 0, stdout
    row = json.loads(out.read_text())["trust"]["coherence"]
    predicted = load_scores(unieval, dataset="topical-chat").dim("coherence")["score"]
    assert row["judge_only"]["estimate"] == pytest.approx((1 + 2 * predicted).mean())  # 0-1 moved onto 1-3
    assert not any("taken as on the human scale" in n for n in row["notes"])
    code, _, err = cli("meta", str(unieval), "--labels", "60", "--judge-scale", "coherence=1")
    assert code == 1 and "DIMENSION=LOW,HIGH" in err
