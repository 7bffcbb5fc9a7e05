"""Loaders on the bundled benchmarks and on malformed files: errors name the file, the record and the field."""

from __future__ import annotations

import json

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
