"""Reading score tables: UniEval's layout, the long export layout, mapped files and run directories."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from assay.errors import InputError
from assay.meta.inputs import FieldMap, load_scores, parse_mapping, table_from_records


def test_unieval_layout_needs_no_mapping():
    recs = [{"source": "hello", "system_id": "a", "scores": {"coh": 2, "nat": 3}, "predict_scores": {"coh": 0.5}},
            {"source": "hello", "system_id": "b", "scores": {"coh": 1}, "predict_scores": {"coh": 0.1, "nat": 0.3}},
            {"source": "other", "system_id": "a", "scores": {"coh": 3}, "predict_scores": {"coh": 0.9, "nat": 0.2}}]
    t = table_from_records(recs)
    f = t.frame
    assert t.dimensions() == ["coh", "nat"]
    assert f["doc_id"].nunique() == 2 and set(f["sample_id"]) == {"doc0000:a", "doc0000:b", "doc0001:a"}
    nat_a = f[(f["sample_id"] == "doc0000:a") & (f["dimension"] == "nat")].iloc[0]
    assert math.isnan(nat_a["score"]) and nat_a["human"] == 3  # unscored: coverage will count it
    assert math.isnan(f[(f["sample_id"] == "doc0000:b") & (f["dimension"] == "nat")].iloc[0]["human"])


def test_mapping_pairs_and_csv(tmp_path):
    path = tmp_path / "s.csv"
    pd.DataFrame({"uid": ["x1", "x2", "x3"], "article": ["d1", "d1", "d2"], "sys": ["m1", "m2", "m1"],
                  "pred_rel": [0.1, 0.7, 0.4], "gold_rel": [1, 4, 2]}).to_csv(path, index=False)
    fmap = parse_mapping(["id=uid", "doc_id=article", "system_id=sys", "score.relevance=pred_rel",
                          "human.relevance=gold_rel"])
    assert fmap.score == {"relevance": "pred_rel"}
    t = load_scores(path, fmap, dataset="summeval")
    assert list(t.frame["sample_id"]) == ["x1", "x2", "x3"] and list(t.frame["doc_id"]) == ["d1", "d1", "d2"]
    assert t.frame["score"].tolist() == [0.1, 0.7, 0.4] and t.frame["human"].tolist() == [1, 4, 2]
    assert t.conventional_level() == "sample" and t.scales["relevance"] == (1, 5, True)
    with pytest.raises(InputError, match="KEY=FIELD"):
        parse_mapping(["score"])
    with pytest.raises(InputError, match=r"only score\.DIM"):
        parse_mapping(["doc_id.x=y"])


def test_long_layout_parquet_and_nested_fields(tmp_path):
    path = tmp_path / "long.parquet"
    pd.DataFrame({"sample_id": ["a", "a", "b"], "doc_id": ["d", "d", "d"], "system_id": ["s1", "s1", "s2"],
                  "dimension": ["coh", "flu", "coh"], "score": [1.0, None, 3.0], "human": [2.0, 3.0, 4.0]}
                 ).to_parquet(path)
    t = load_scores(path)
    assert len(t.frame) == 3 and t.frame["score"].isna().sum() == 1
    nested = [{"meta": {"id": "q1", "doc": "n1"}, "out": {"s": 0.2}, "gold": {"s": 5}}]
    t2 = table_from_records(nested, FieldMap(id="meta.id", doc_id="meta.doc", score="out", human="gold"))
    assert t2.frame.iloc[0][["sample_id", "doc_id", "dimension", "score", "human"]].tolist() == ["q1", "n1", "s",
                                                                                                   0.2, 5.0]


def test_bad_inputs_say_what_is_wrong(tmp_path):
    with pytest.raises(InputError, match="mapping"):
        table_from_records([{"a": 1}])
    with pytest.raises(InputError, match="expected a number"):
        table_from_records([{"scores": {"c": 1}, "predict_scores": {"c": "high"}}])
    with pytest.raises(InputError, match="twice"):
        table_from_records([{"id": "x", "scores": {"c": 1}, "predict_scores": {"c": 1}},
                            {"id": "x", "scores": {"c": 2}, "predict_scores": {"c": 2}}])
    (tmp_path / "empty.json").write_text(json.dumps([]))
    with pytest.raises(InputError, match="no records"):
        load_scores(tmp_path / "empty.json")
    (tmp_path / "notrun").mkdir()
    with pytest.raises(Exception, match="not a run directory"):
        load_scores(tmp_path / "notrun")


def test_json_and_jsonl_with_a_mapping_read_like_csv(tmp_path):
    recs = [{"uid": "x1", "article": "d1", "pred": {"rel": 0.1}, "gold": {"rel": 1}},
            {"uid": "x2", "article": "d1", "pred": {"rel": 0.7}, "gold": {"rel": 4}},
            {"uid": "x3", "article": "d2", "pred": {"rel": None}, "gold": {"rel": 2}}]
    (tmp_path / "s.json").write_text(json.dumps(recs))
    (tmp_path / "s.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    fmap = parse_mapping(["id=uid", "doc_id=article", "score=pred", "human=gold"])
    frames = [load_scores(tmp_path / name, fmap).frame for name in ("s.json", "s.jsonl")]
    pd.testing.assert_frame_equal(frames[0], frames[1])
    assert frames[0]["sample_id"].tolist() == ["x1", "x2", "x3"] and frames[0]["doc_id"].tolist() == ["d1", "d1", "d2"]
    assert frames[0]["score"].isna().tolist() == [False, False, True] and frames[0]["human"].tolist() == [1, 4, 2]
    with pytest.raises(InputError, match="mapping"):
        load_scores(tmp_path / "s.jsonl")  # no mapping and not a known layout


def test_judge_groups_from_a_yaml_file(tmp_path):
    from assay.errors import ConfigError
    from assay.meta.compare import load_groups

    (tmp_path / "g.yaml").write_text("Small:\n  - llamacpp:smollm2\n  - ollama:qwen\nTop-3: [gpt-4o]\n")
    assert load_groups(tmp_path / "g.yaml") == {"Small": ["llamacpp:smollm2", "ollama:qwen"], "Top-3": ["gpt-4o"]}
    (tmp_path / "bad.yaml").write_text("- just a list\n")
    with pytest.raises(ConfigError, match="bad.yaml"):
        load_groups(tmp_path / "bad.yaml")


def test_qags_meta_evaluation_reads_its_human_ratings_on_their_0_1_scale(tmp_path):
    """QAGS's human rating is a share of consistent sentences (0-1) while the judge rates 1-5: the quality split
    must cut the ratings at 0.5, not at 3 (which left every item in the low group)."""
    import assay
    from assay.judges.scripted import ScriptedJudge
    from assay.meta import meta_evaluate

    qags = assay.load_dataset("qags-xsum").select(limit=12)
    humans = [s.human["consistency"] for s in qags.samples]
    assert set(humans) == {0.0, 1.0}
    answers = iter(["5" if h else "1" for h in humans])
    assay.evaluate(qags, method="direct", judge=ScriptedJudge(lambda r: next(answers)), run_dir=tmp_path / "run")
    table = load_scores(tmp_path / "run")
    assert table.scales["consistency"] == (0.0, 1.0, False)  # the card's human scale, not the manifest's 1-5
    res = meta_evaluate(tmp_path / "run", split=True)
    split = {r["dimension"]: r for r in res["quality_split"]}["consistency"]
    assert split["threshold"] == 0.5 and "0-1 scale" in split["rule"]
    assert (split["high"]["items"], split["low"]["items"]) == (humans.count(1.0), humans.count(0.0))
    assert {r["dimension"]: r for r in res["rows"]}["consistency"]["pearson"] == pytest.approx(1.0)
    scores = tmp_path / "s.csv"
    pd.DataFrame({"id": range(3), "pred": [1, 5, 3], "gold": [0.0, 1.0, 0.5]}).to_csv(scores, index=False)
    mapped = load_scores(scores, parse_mapping(["id=id", "score.consistency=pred", "human.consistency=gold"]),
                         dataset="qags-cnndm")
    assert mapped.scales["consistency"] == (0.0, 1.0, False)
