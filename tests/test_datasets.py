"""Loaders on the bundled benchmarks and on malformed files: errors name the file, the record and the field."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest

from assay.datasets import list_datasets, load_dataset
from assay.errors import ConfigError, InputError


def bundled_text(filename: str) -> str:
    """A bundled benchmark file's text (the package ships them gzipped)."""
    import gzip
    from importlib import resources

    return gzip.decompress((resources.files("assay.datasets") / "data" / f"{filename}.gz").read_bytes()).decode()


@pytest.mark.parametrize(("name", "count", "docs"), [
    ("summeval", 1600, 100), ("summeval-experts", 1200, 100), ("topical-chat", 360, 60),
    ("usr-persona-chat", 300, 60), ("qags-cnndm", 235, None), ("qags-xsum", 239, None),
    ("helpsteer2", 1038, None), ("sumpubmed", 49, 49),
])
def test_bundled_sets_load_with_human_ratings(name, count, docs):
    ds = load_dataset(name)
    assert len(ds.samples) == count
    if docs is not None:
        assert len({s.doc_id for s in ds.samples}) == docs
    for dim in ds.info.default_dimensions:
        assert sum(dim in s.human for s in ds.samples) == count, dim
    assert len(ds.sha256) == 64


def test_every_catalog_entry_loads_and_defaults_exist():
    for info in list_datasets():
        names = {d.name for d in info.dimensions}
        assert set(info.default_dimensions) <= names
        assert info.level in ("sample", "system", "dataset")


def test_summeval_layouts_agree_on_expert_means():
    flat = {s.id: s for s in load_dataset("summeval").samples}
    experts = load_dataset("summeval-experts").samples
    assert len(experts) == 1200
    for s in experts:
        assert len(s.annotators["coherence"]) == 3
        for dim in ("coherence", "consistency", "fluency", "relevance"):
            assert s.human[dim] == pytest.approx(flat[s.id].human[dim], abs=1e-6)


def test_topical_chat_keeps_context_and_groups():
    ds = load_dataset("topical-chat")
    s = ds.samples[0]
    assert s.context and s.source and s.output and s.doc_id == "ctx000"
    assert len(ds.select(docs=20).samples) == 120
    assert len(load_dataset("summeval").select(docs=10).samples) == 160


def test_user_copy_in_a_public_layout(tmp_path):
    path = tmp_path / "tc.json"
    path.write_text(json.dumps(json.loads(bundled_text("topical_chat.json"))[:12]))
    ds = load_dataset(f"topical-chat:{path}")
    assert len(ds.samples) == 12 and ds.path == str(path)


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_missing_field_names_file_record_field(tmp_path):
    recs = [{"doc_id": "d1", "system_id": "M1", "source": "a", "reference": "r", "system_output": "o",
             "scores": {"coherence": 3}},
            {"doc_id": "d1", "system_id": "M2", "source": "a", "reference": "r", "scores": {"coherence": 3}}]
    p = write(tmp_path, "se.json", json.dumps(recs))
    with pytest.raises(InputError) as err:
        load_dataset(f"summeval:{p}")
    msg = str(err.value)
    assert str(p) in msg and "record 1" in msg and "system_output" in msg and "missing" in msg


def test_mistyped_rating_is_named(tmp_path):
    recs = [{"doc_id": "d1", "system_id": "M1", "source": "a", "system_output": "o",
             "scores": {"coherence": "high"}}]
    p = write(tmp_path, "se.json", json.dumps(recs))
    with pytest.raises(InputError, match=r"record 0.*field 'coherence'.*expected a number"):
        load_dataset(f"summeval:{p}")


def test_bad_jsonl_line_is_named(tmp_path):
    good = bundled_text("summeval_annotations_12_systems.jsonl").splitlines()[0] + "\n"
    p = write(tmp_path, "ann.jsonl", good + "{broken\n")
    with pytest.raises(InputError, match=r"ann.jsonl, record line 2: invalid JSON"):
        load_dataset(f"summeval:{p}")


def helpsteer_line(**changes) -> str:
    rec = {"prompt": "Why?", "response": "Because.", "helpfulness": 3, "correctness": 3, "coherence": 4,
           "complexity": 1, "verbosity": 2} | changes
    return json.dumps({k: v for k, v in rec.items() if v is not None})


@pytest.mark.parametrize(("bad_line", "message"), [
    (helpsteer_line(response=None), "hs.jsonl, record line 3, field 'response': missing field"),
    (helpsteer_line(prompt=["a", "list"]), "hs.jsonl, record line 3, field 'prompt': expected str, got list"),
    (helpsteer_line(helpfulness="lots"), "hs.jsonl, record line 3, field 'helpfulness': expected a number"),
    ('{"prompt": "Why?", "response": ', "hs.jsonl, record line 3: invalid JSON"),
])
def test_jsonl_user_copy_errors_name_file_line_and_field(tmp_path, bad_line, message):
    """A user's JSONL copy of a named benchmark: the error gives the file's line (blank lines count)."""
    p = write(tmp_path, "hs.jsonl", helpsteer_line() + "\n\n" + bad_line + "\n")
    with pytest.raises(InputError) as err:
        load_dataset(f"helpsteer2:{p}")
    assert str(err.value).startswith(str(p)) and message in str(err.value)


def test_jsonl_duplicate_names_both_lines(tmp_path):
    good = bundled_text("summeval_annotations_12_systems.jsonl").splitlines()[0]
    p = write(tmp_path, "ann.jsonl", good + "\n" + good + "\n")
    with pytest.raises(InputError, match=r"record line 2, field 'id': duplicate id .* \(first at record line 1\)"):
        load_dataset(f"summeval:{p}")


def test_csv_errors_name_the_line(tmp_path):
    p = write(tmp_path, "hs.csv", "prompt,response,helpfulness\nWhy?,Because.,3\nHow?,Thus.,many\n")
    with pytest.raises(InputError, match=r"hs.csv, record line 3, field 'helpfulness': expected a number"):
        load_dataset(f"helpsteer2:{p}")


def test_jsonl_error_is_one_clear_line_in_the_cli(tmp_path):
    import subprocess
    import sys

    p = write(tmp_path, "hs.jsonl", helpsteer_line() + "\n" + helpsteer_line(response=None) + "\n")
    res = subprocess.run([sys.executable, "-m", "assay.cli", "run", "--dataset", f"helpsteer2:{p}",
                          "--run-dir", str(tmp_path / "run")], capture_output=True, text=True, timeout=120)
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert "record line 2, field 'response': missing field" in " ".join(res.stderr.split())


def test_duplicate_id_is_refused(tmp_path):
    rec = {"doc_id": "d1", "system_id": "M1", "source": "a", "system_output": "o", "scores": {"coherence": 3}}
    p = write(tmp_path, "dup.json", json.dumps([rec, rec]))
    with pytest.raises(InputError, match=r"record 1, field 'id': duplicate id 'd1:M1'"):
        load_dataset(f"summeval:{p}")


def test_unreadable_and_missing_files(tmp_path):
    with pytest.raises(InputError, match="file not found"):
        load_dataset(f"qags-xsum:{tmp_path / 'nope.json'}")
    p = tmp_path / "bin.json"
    p.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(InputError, match="bin.json"):
        load_dataset(f"qags-xsum:{p}")


def test_unknown_names_get_did_you_mean():
    with pytest.raises(ConfigError, match="did you mean 'topical-chat'".replace("did", "Did")):
        load_dataset("topical_chat")
    with pytest.raises(ConfigError, match="no dimension 'coherance'.*'coherence'"):
        load_dataset("summeval").dimensions(["coherance"])


def test_generic_spec_file(tmp_path):
    data = tmp_path / "d.csv"
    data.write_text("uid,art,summ,model,coh\n1,article one,sum one,A,4\n2,article one,sum two,B,2\n")
    spec = write(tmp_path, "spec.yaml", """
name: mine
file: d.csv
level: sample
fields: {id: uid, doc_id: art, system_id: model, source: art, output: summ}
human: {coherence: coh}
dimensions:
  - {name: coherence, definition: "reads as a whole", scale: {low: 1, high: 5}}
""")
    ds = load_dataset(str(spec))
    assert [s.human["coherence"] for s in ds.samples] == [4.0, 2.0]
    assert ds.info.level == "sample" and ds.samples[1].system_id == "B"


def test_generic_spec_errors_name_the_field(tmp_path):
    spec = write(tmp_path, "bad.yaml", "name: x\nfile: d.csv\nfields: {}\ndimensions: []\n")
    with pytest.raises(InputError, match=r"bad.yaml, field 'fields.output'"):
        load_dataset(str(spec))
    spec = write(tmp_path, "worse.yaml", "name: [unclosed\n")
    with pytest.raises(InputError, match=r"worse.yaml, record line"):
        load_dataset(str(spec))


# -- dataset cards (issue 15): one YAML file per dataset, loaded by one registry ---------------------

def _card(tmp_path, text, name="card.yaml"):
    (tmp_path / "data.jsonl").write_text(json.dumps({"out": "a summary", "coh": 4}) + "\n")
    return write(tmp_path, name, text)


CARD = """
name: tiny
file: data.jsonl
fields: {output: out}
human: {coherence: coh}
dimensions:
  - {name: coherence, definition: "Reads as one whole.", scale: {low: 1, high: 5}}
"""


def test_every_shipped_card_names_artifacts_its_methods_have():
    from assay.datasets.catalog import cards_dir
    from assay.methods.checkeval.shipped import shipped_checklists
    from assay.methods.gereval.rubric import _human_table, _task_table
    from assay.methods.geval.paper import paper_prompt
    from assay.methods.geval.prompts import shipped_criteria
    from assay.methods.seal.spec import load_spec

    assert sorted(p.stem for p in cards_dir().glob("*.yaml")) == sorted(i.name for i in list_datasets())
    spec, _ = load_spec()
    for info in list_datasets():
        a = info.artifacts
        assert a.gereval in _task_table() and a.gereval in _human_table(), info.name  # every card has a GER-Eval task
        assert a.checkeval is None or a.checkeval in shipped_checklists(), info.name
        assert a.checkeval_paper is None or a.checkeval_paper in shipped_checklists(), info.name
        assert a.seal is None or a.seal in spec.datasets, info.name
        assert a.geval is None or a.geval in shipped_criteria()["tasks"], info.name
        if a.geval_paper:
            assert paper_prompt(info, info.default_dimensions[0]).file == a.geval_paper


def test_sumpubmed_file_number_column_is_not_a_rated_dimension():
    ds = load_dataset("sumpubmed")
    rows = list(csv.DictReader(io.StringIO(bundled_text("sumpubmed.csv"))))
    assert all(r["FN"] == r["filename_text"] for r in rows)  # the column copies the file number
    assert "FN" not in {d.name for d in ds.info.dimensions} and "FN" not in ds.info.default_dimensions
    assert not any("FN" in s.human for s in ds.samples)
    assert ds.info.default_dimensions == ("Non-Re", "Coh", "Read", "IOF")


def test_cards_say_the_scale_of_their_human_ratings():
    for info in list_datasets():
        ds = load_dataset(info.name)
        for d in info.dimensions:
            scale = info.human_scale(d.name)
            ratings = [s.human[d.name] for s in ds.samples if d.name in s.human]
            assert all(scale.low <= r <= scale.high for r in ratings), (info.name, d.name)
    for name in ("qags-cnndm", "qags-xsum"):
        info = load_dataset(name).info
        human = info.human_scale("consistency")
        assert (human.low, human.high, human.integer) == (0, 1, False)  # a share of consistent sentences
        assert info.dimension("consistency").scale.label() == "1-5"  # the judge still rates 1-5 (G-Eval's criteria)


def test_a_human_rating_off_the_cards_human_scale_is_refused(tmp_path):
    path = tmp_path / "q.json"
    recs = json.loads(bundled_text("qags_xsum.json"))[:3]
    recs[1]["scores"]["consistency"] = 3  # a 1-5 rating in a 0-1 file: a mislabelled column
    path.write_text(json.dumps(recs))
    with pytest.raises(InputError, match=r"q.json, record 1, field 'consistency': human rating 3 for 'consistency' "
                                         r"is off its scale 0-1$"):
        load_dataset(f"qags-xsum:{path}")


@pytest.mark.parametrize(("extra", "field", "message"), [
    ("reader: summeval\n", "reader", "not both"),
    ("artifacts: {chekeval: mine.yaml}\n", "artifacts.chekeval", "Extra inputs"),
    ("default_dimensions: [coherense]\n", "default_dimensions", "'coherense' is not a dimension"),
    ("contrast_field: fluency\n", "contrast_field", "'fluency' is not a dimension"),
    ("level: turn\n", "level", "sample"),
])
def test_bad_card_errors_name_the_file_and_field(tmp_path, extra, field, message):
    card = _card(tmp_path, CARD + extra)
    with pytest.raises(InputError) as err:
        load_dataset(str(card))
    assert err.value.file == str(card) and err.value.field == field and message in str(err.value)


def test_card_reader_must_be_a_known_layout(tmp_path):
    card = _card(tmp_path, CARD.replace("fields: {output: out}\nhuman: {coherence: coh}\n", "reader: sumeval\n"))
    with pytest.raises(InputError, match="unknown reader 'sumeval'") as err:
        load_dataset(str(card))
    assert err.value.field == "reader" and "summeval" in str(err.value)


def test_todays_user_spec_files_still_load(tmp_path):
    """A spec in the format of earlier versions (generic.py's example) is a card: it loads unchanged."""
    (tmp_path / "summaries.jsonl").write_text("".join(json.dumps(
        {"uid": f"u{i}", "ticket_id": f"t{i // 2}", "model": "AB"[i % 2], "ticket": f"ticket {i // 2}",
         "summary": f"summary {i}", "coh_mean": 1 + i}) + "\n" for i in range(4)))
    spec = write(tmp_path, "my_data.yaml", """
name: my-summaries
file: summaries.jsonl
task: Summarisation of support tickets.
input_name: ticket
output_name: summary
level: sample
fields: {id: uid, doc_id: ticket_id, system_id: model, source: ticket, output: summary}
human: {coherence: coh_mean}
dimensions:
  - {name: coherence, definition: "The summary reads as one organised whole.", scale: {low: 1, high: 5}}
""")
    ds = load_dataset(str(spec))
    assert [s.id for s in ds.samples] == ["u0", "u1", "u2", "u3"] and ds.samples[3].human == {"coherence": 4}
    assert ds.info.default_dimensions == ("coherence",) and ds.info.contrast_field == "coherence"
    assert ds.info.provenance == f"user data from {spec}" and ds.info.level == "sample"
    assert ds.info.file == str(tmp_path / "summaries.jsonl")


def test_a_user_card_names_its_checklist_and_checkeval_uses_it(tmp_path, monkeypatch):
    import assay
    from assay.judges.scripted import ScriptedJudge

    text = (Path(assay.__file__).parent / "methods" / "checkeval" / "checklists" / "qags.yaml").read_text()
    (tmp_path / "mine.yaml").write_text(text)
    (tmp_path / "data.jsonl").write_text(json.dumps({"doc": "An article.", "out": "A summary.", "c": 0.5}) + "\n")
    card = write(tmp_path, "card.yaml", """
name: my-faithfulness
file: data.jsonl
fields: {source: doc, output: out}
human: {consistency: c}
dimensions:
  - name: consistency
    definition: Only facts the article supports.
    scale: {low: 1, high: 5}
    human_scale: {low: 0, high: 1, integer: false}
artifacts: {checkeval: mine.yaml}
""")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # the card's checklist is found beside the card, not in the working directory
    judge = ScriptedJudge(lambda r: "\n".join(f"Q{i}: yes" for i in range(1, r.messages[-1].content.count("\nQ") + 1)))
    res = assay.evaluate(str(card), method="checkeval", judge=judge, run_dir=tmp_path / "run")
    assert res.manifest["artifacts"]["checklist"]["path"] == str(tmp_path / "mine.yaml")
    assert [j.score for j in res.judgments] == [1.0] and judge.requests


def test_how_to_add_a_dataset_is_one_card(tmp_path):
    """docs/architecture.md, "How to add a dataset": one card beside the data, no code; run with `direct`."""
    import assay
    from assay.judges.scripted import ScriptedJudge
    from assay.meta import meta_evaluate

    rows = [{"q": f"question {i // 2}", "a": f"answer-{i}", "bot": "xy"[i % 2], "clear": 1 + i % 4} for i in range(8)]
    (tmp_path / "answers.csv").write_text("q,a,bot,clear\n" + "".join(
        f"{r['q']},{r['a']},{r['bot']},{r['clear']}\n" for r in rows))
    card = write(tmp_path, "faq-answers.yaml", """
name: faq-answers
file: answers.csv
provenance: written for this test
licence: CC0-1.0
task: A help bot answers a customer's question.
input_name: question
output_name: answer
level: system
fields: {doc_id: q, system_id: bot, source: q, output: a}
human: {clarity: clear}
dimensions:
  - {name: clarity, definition: "The answer is easy to follow.", scale: {low: 1, high: 4}}
""")
    ds = load_dataset(str(card))
    assert (ds.name, ds.info.level, ds.info.licence, len(ds.samples)) == ("faq-answers", "system", "CC0-1.0", 8)

    def judge_answer(req):  # a judge that agrees with the human ratings, read from the answer it is shown
        prompt = req.messages[-1].content
        i = int(re.search(r"answer-(\d+)", prompt).group(1))
        return str(rows[i]["clear"])

    judge = ScriptedJudge(judge_answer)
    result = assay.evaluate(str(card), method="direct", judge=judge, run_dir=tmp_path / "run")
    prompt = judge.requests[0].messages[-1].content
    assert "Task: A help bot answers a customer's question." in prompt and "clarity (1-4)" in prompt
    assert "Clarity: The answer is easy to follow." in prompt
    assert [j.score for j in result.judgments] == [float(r["clear"]) for r in rows]
    assert result.manifest["dataset_level"] == "system"
    meta = meta_evaluate(str(tmp_path / "run"), level="sample")
    assert {r["dimension"]: r["coverage"] for r in meta["rows"]}["clarity"] == 1.0


def test_a_run_parses_its_own_card_only(monkeypatch):
    """Naming the shipped datasets reads no card; loading one parses that card alone (each is read on first use)."""
    from assay.datasets import catalog

    parsed: list[str] = []
    real = catalog.parse_card
    monkeypatch.setattr(catalog, "parse_card", lambda path: parsed.append(path.stem) or real(path))
    catalog.shipped_card.cache_clear()
    try:
        assert "summeval" in list(catalog.CATALOG) and parsed == []
        assert catalog.get_info("summeval").name == "summeval"
        assert "nosuchset" not in catalog.CATALOG
        assert parsed == ["summeval"]
        assert [c.name for c in catalog.CATALOG.values()] == list(catalog.CATALOG)  # every card, when all are asked
    finally:
        catalog.shipped_card.cache_clear()
