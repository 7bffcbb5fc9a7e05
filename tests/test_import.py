"""``assay import``: external answers become a run, read by each method's own reader, with no judge called."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

import assay
from assay.answers.parsing import parse_rating
from assay.errors import ConfigError, InputError
from assay.importer.readers import make_reader
from assay.importer.write import ImportOptions, import_answers
from assay.judges.middleware import ManagedJudge
from assay.judges.scripted import ScriptedJudge
from assay.meta.inputs import load_scores, read_run
from assay.methods import direct
from assay.methods.checkeval import parse as checkeval
from assay.methods.geval import prompts as geval
from assay.run.store import RunStore

DIMENSION = "coherence"


@pytest.fixture
def no_judge(monkeypatch):
    """Any judge call, or any judge built, during an import fails the test."""
    def refuse(*args, **kwargs):
        raise AssertionError("a judge was called during an import")

    monkeypatch.setattr(ManagedJudge, "generate", refuse)
    monkeypatch.setattr("assay.judges.load_judge", refuse)
    monkeypatch.setattr(ScriptedJudge, "generate", refuse)


@pytest.fixture(scope="module")
def two_docs(summeval):
    return summeval.select(docs=2)


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def rating_for(i: int) -> int:
    return 1 + (i * 7) % 5


def direct_records(samples, text=lambda i, s: f"The summary reads well enough. Final score: {rating_for(i)}."):
    return [{"id": s.id, "rts": text(i, s)} for i, s in enumerate(samples)]


def do_import(path, run_dir, method="direct", **kw):
    opts = {"dataset": "summeval", "dimension": DIMENSION, "answers": "rts", "id": "id", **kw}
    return import_answers(path, ImportOptions(method=method, **opts), run_dir)


def judgments(run_dir) -> dict[tuple[str, str], assay.Judgment]:
    with RunStore(run_dir, readonly=True) as store:
        return {(j.sample_id, j.dimension): j for j in store.judgments()}


# -- every method ---------------------------------------------------------------------------------


def test_direct_import_reads_each_answer_and_calls_no_judge(tmp_path, two_docs, no_judge):
    path = write_jsonl(tmp_path / "gpt.jsonl", direct_records(two_docs.samples))
    res = do_import(path, tmp_path / "run")
    assert res.outcome == "imported" and res.counts["matched"] == len(two_docs.samples)
    got = judgments(tmp_path / "run")
    for i, s in enumerate(two_docs.samples):
        j = got[(s.id, DIMENSION)]
        assert j.score == rating_for(i) and j.method == "direct" and j.judge == "imported:gpt"
        assert j.usage == {} and j.trace["imported"]["record"] == f"line {i + 1}"
    with RunStore(tmp_path / "run", readonly=True) as store:
        m = store.manifest()
    imp = m["imported"][DIMENSION]
    assert imp["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert imp["mapping"]["answers"] == "rts" and imp["mapping"]["id"] == "id"
    assert imp["judge_name"] == "imported:gpt" and imp["counts"]["scored"] == len(two_docs.samples)
    assert m["units"]["asked"] == len(two_docs.samples) and m["units"]["undone"] == 0


def test_match_on_fields_trims_whitespace_and_maps_names(tmp_path, two_docs, no_judge):
    recs = [{"article": f"  {s.doc_id} ", "model": s.system_id, "rts": "Score: 3"} for s in two_docs.samples]
    path = write_jsonl(tmp_path / "a.jsonl", recs)
    res = import_answers(path, ImportOptions(method="direct", dataset="summeval", dimension=DIMENSION, answers="rts",
                                             match="article=doc_id,model=system_id"), tmp_path / "run")
    assert res.counts["matched"] == len(two_docs.samples)
    assert {j.score for j in judgments(tmp_path / "run").values()} == {3.0}


def test_match_on_source_text_with_other_line_breaks(tmp_path, two_docs, no_judge):
    """The issue's own command matches on the article text: a copy with other line breaks still finds its sample."""
    recs = [{"source": "\n" + s.source.replace(" ", "\n", 3) + "  ", "system_id": s.system_id,
             "all_responses": ["- Coherence: 4", "3"]} for s in two_docs.samples]
    path = write_jsonl(tmp_path / "a.jsonl", recs)
    res = import_answers(path, ImportOptions(method="geval", dataset="summeval", dimension=DIMENSION, mode="sampling",
                                             answers="all_responses", match="source,system_id"), tmp_path / "run")
    assert res.counts["matched"] == len(two_docs.samples) and res.counts["unmatched"] == 0
    assert {j.score for j in judgments(tmp_path / "run").values()} == {3.5}


def test_geval_sampling_n_answers_per_item(tmp_path, two_docs, no_judge):
    s = two_docs.samples[0]
    recs = [{"id": s.id, "rts": ["- Coherence: 4", "4", "Coherence: 2", "I cannot rate this."]}]
    res = do_import(write_jsonl(tmp_path / "g.jsonl", recs), tmp_path / "run", method="geval", mode="sampling")
    j = judgments(tmp_path / "run")[(s.id, DIMENSION)]
    assert res.counts["scored"] == 1
    assert j.score == pytest.approx((4 + 4 + 2) / 3)
    assert j.trace["distribution"] == {"2": pytest.approx(1 / 3, abs=1e-6), "4": pytest.approx(2 / 3, abs=1e-6)}
    assert j.trace["samples"] == 4 and j.trace["parsed"] == 3 and j.trace["unparseable"] == 1
    assert j.trace["mode"] == "sampling" and j.trace["ratings"] == [4.0, 4.0, 2.0, None]


def test_geval_greedy_refuses_a_list(tmp_path, two_docs, no_judge):
    recs = [{"id": two_docs.samples[0].id, "rts": ["4", "5"]}]
    with pytest.raises(InputError, match=r"g.jsonl, record line 1, field 'rts': expected one answer text"):
        do_import(write_jsonl(tmp_path / "g.jsonl", recs), tmp_path / "run", method="geval", mode="greedy")


def openai_logprobs(table: dict[str, float]) -> list[dict]:
    top = sorted(table.items(), key=lambda kv: -kv[1])
    return [{"token": top[0][0], "logprob": math.log(top[0][1]),
             "top_logprobs": [{"token": t, "logprob": math.log(p)} for t, p in top]}]


def test_geval_logprobs_from_openai_shape(tmp_path, two_docs, no_judge):
    s, t = two_docs.samples[:2]
    recs = [{"id": s.id, "rts": "4", "lp": openai_logprobs({"4": 0.6, "3": 0.3, "the": 0.1})},
            {"id": t.id, "rts": "2", "lp": {"content": openai_logprobs({"2": 0.5, "1": 0.5})}}]
    do_import(write_jsonl(tmp_path / "g.jsonl", recs), tmp_path / "run", method="geval", logprobs="lp")
    got = judgments(tmp_path / "run")
    assert got[(s.id, DIMENSION)].score == pytest.approx((0.6 * 4 + 0.3 * 3) / 0.9)
    assert got[(s.id, DIMENSION)].trace["invalid_mass"] == pytest.approx(0.1)
    assert got[(t.id, DIMENSION)].score == pytest.approx(1.5)
    with RunStore(tmp_path / "run", readonly=True) as store:
        assert store.manifest()["method_settings"]["mode"] == "logprobs"


def test_geval_logprobs_bad_shape_names_record_and_field(tmp_path, two_docs, no_judge):
    recs = [{"id": two_docs.samples[0].id, "rts": "4", "lp": [{"token": "4"}]}]
    with pytest.raises(InputError, match=r"record line 1, field 'lp': position 0"):
        do_import(write_jsonl(tmp_path / "g.jsonl", recs), tmp_path / "run", method="geval", logprobs="lp")


def test_checkeval_whole_checklist_text_and_per_question_list(tmp_path, two_docs, no_judge):
    reader_q = make_reader("checkeval", two_docs, DIMENSION, "a", checklist="summeval").questions
    n = len(reader_q)
    s, t = two_docs.samples[:2]
    whole = "\n".join(f"Q{k}: {'yes' if k % 3 else 'no'}" for k in range(1, n + 1) if k != 2)  # Q2 unanswered
    per_q = ["Yes." if k % 2 else "No, it does not." for k in range(1, n + 1)]
    recs = [{"id": s.id, "a": whole}, {"id": t.id, "a": per_q}]
    do_import(write_jsonl(tmp_path / "c.jsonl", recs), tmp_path / "run", method="checkeval", answers="a",
              checklist="summeval")
    got = judgments(tmp_path / "run")
    js, jt = got[(s.id, DIMENSION)], got[(t.id, DIMENSION)]
    answered = [k for k in range(1, n + 1) if k != 2]
    assert js.trace["missing"] == 1 and js.trace["answered"] == n - 1
    assert js.score == pytest.approx(sum(1 for k in answered if k % 3) / len(answered))
    assert js.trace["questions"][1]["answer"] is None and js.trace["mode"] == "grouped"
    assert jt.score == pytest.approx(sum(1 for k in range(1, n + 1) if k % 2) / n)
    assert jt.trace["mode"] == "per_question" and len(jt.trace["groups"]) == n


def test_checkeval_list_of_wrong_length_is_refused(tmp_path, two_docs, no_judge):
    recs = [{"id": two_docs.samples[0].id, "a": ["yes", "no"]}]
    with pytest.raises(InputError, match=r"field 'a': expected \d+ answer texts"):
        do_import(write_jsonl(tmp_path / "c.jsonl", recs), tmp_path / "run", method="checkeval", answers="a")


def test_gereval_json_answers_against_the_human_rubric(tmp_path, two_docs, no_judge):
    s, t, u = two_docs.samples[:3]
    recs = [{"id": s.id, "a": '{"reasoning": "Well structured.", "score": 4}'},
            {"id": t.id, "a": 'Here it is: ```json\n{"reasoning": "Choppy.", "score": "2"}\n```'},
            {"id": u.id, "a": '{"reasoning": "Odd.", "score": 9}'}]
    do_import(write_jsonl(tmp_path / "r.jsonl", recs), tmp_path / "run", method="gereval", answers="a",
              rubric="human")
    got = judgments(tmp_path / "run")
    assert got[(s.id, DIMENSION)].score == 4 and got[(s.id, DIMENSION)].trace["reasoning"] == "Well structured."
    assert got[(t.id, DIMENSION)].score == 2
    bad = got[(u.id, DIMENSION)]
    assert bad.status == "parse_failed" and "not on the scale" in bad.error and bad.trace["reasks"] == 0


def test_gereval_needs_a_rubric(tmp_path, two_docs, no_judge):
    path = write_jsonl(tmp_path / "r.jsonl", direct_records(two_docs.samples[:1]))
    with pytest.raises(ConfigError, match="--rubric"):
        do_import(path, tmp_path / "run", method="gereval")


# -- same reader and trace as a live run ------------------------------------------------------------


ANSWERS = {
    "reasoned": lambda p: "The summary flows, though the 3-2 result is repeated. I would give it a score of 4.",
    "echo of the whole prompt": lambda p: p,
    "echo of the judged text, tidied": lambda p: p[p.index("<<<SUMMARY>>>"):].replace("» ", ""),
    "two ratings": lambda p: "Coherence: 2\nFinal score: 4\nOverall score: 3",
    # the judged summary's first line, as a judge copies it: read alone it holds a rating ("Boy , 2 , slipped")
    "echo of a summary line": lambda p: p[p.index("<<<SUMMARY>>>"):].split("\n")[1].replace("» ", ""),
}


@pytest.mark.parametrize("kind", list(ANSWERS))
def test_direct_import_reads_exactly_as_a_live_run(tmp_path, summeval, kind, no_judge, monkeypatch):
    one = replace(summeval, samples=[summeval.samples[k] for k in (0, 16, 137)])
    answer_of = ANSWERS[kind]
    monkeypatch.undo()  # the live run needs its (scripted) judge
    live = assay.evaluate(one, method="direct", judge=ScriptedJudge(lambda req: answer_of(req.messages[-1].content)),
                          dimensions=[DIMENSION], run_dir=tmp_path / "live")
    recs = [{"id": s.id, "rts": answer_of(direct.build_prompt(s, one.info.dimension(DIMENSION), one.info))}
            for s in one.samples]
    path = write_jsonl(tmp_path / "a.jsonl", recs)
    monkeypatch.setattr(ManagedJudge, "generate", lambda *a, **k: (_ for _ in ()).throw(AssertionError("called")))
    do_import(path, tmp_path / "imp")
    imported = judgments(tmp_path / "imp")
    for j in live.judgments:
        k = imported[(j.sample_id, j.dimension)]
        assert (k.score, k.status, k.error) == (j.score, j.status, j.error), kind
        assert set(k.trace) == set(j.trace) | {"imported"}
    if kind.startswith("echo"):
        assert all(j.status == "parse_failed" and "echoed" in j.error for j in imported.values())
    if kind == "echo of a summary line":  # only the prompt tells this echo from an answer
        scale = one.info.dimension(DIMENSION).scale
        assert parse_rating(recs[2]["rts"], scale, DIMENSION).value == 2  # "Boy , 2 , slipped" read alone


def test_geval_import_has_the_live_trace_keys(tmp_path, summeval, monkeypatch):
    one = summeval.select(limit=2)
    dim = one.info.dimension(DIMENSION)
    live = assay.evaluate(one, method="geval", judge=ScriptedJudge(lambda req: "- Coherence: 3"),
                          dimensions=[DIMENSION], options={"mode": "sampling", "n": 3, "no_cot": True},
                          run_dir=tmp_path / "live")
    crit = geval.task_criteria(one.info, dim)
    echo = geval.build_prompt(one.samples[1], dim, one.info, crit, None)
    recs = [{"id": one.samples[0].id, "rts": ["- Coherence: 3"] * 3}, {"id": one.samples[1].id, "rts": [echo] * 3}]
    monkeypatch.setattr(ManagedJudge, "generate", lambda *a, **k: (_ for _ in ()).throw(AssertionError("called")))
    do_import(write_jsonl(tmp_path / "g.jsonl", recs), tmp_path / "imp", method="geval", mode="sampling")
    imported = judgments(tmp_path / "imp")
    first = imported[(one.samples[0].id, DIMENSION)]
    live_first = next(j for j in live.judgments if j.sample_id == one.samples[0].id)
    assert first.score == live_first.score == 3
    assert set(first.trace) == set(live_first.trace) | {"imported"}
    echoed = imported[(one.samples[1].id, DIMENSION)]
    assert echoed.status == "parse_failed" and echoed.trace["unparseable"] == 3


def test_checkeval_and_gereval_imports_have_the_live_trace_keys(tmp_path, summeval, monkeypatch):
    one = summeval.select(limit=1)
    s = one.samples[0]
    live_c = assay.evaluate(one, method="checkeval", judge=ScriptedJudge(lambda req: "Q1: yes\nQ2: no\nQ3: yes"),
                            dimensions=[DIMENSION], run_dir=tmp_path / "lc")
    live_g = assay.evaluate(one, method="gereval", judge=ScriptedJudge(lambda req: '{"reasoning": "ok", "score": 3}'),
                            dimensions=[DIMENSION], options={"rubric": "human"}, run_dir=tmp_path / "lg")
    monkeypatch.setattr(ManagedJudge, "generate", lambda *a, **k: (_ for _ in ()).throw(AssertionError("called")))
    write_jsonl(tmp_path / "c.jsonl", [{"id": s.id, "a": "Q1: yes\nQ2: no"}])
    do_import(tmp_path / "c.jsonl", tmp_path / "ic", method="checkeval", answers="a")
    write_jsonl(tmp_path / "g.jsonl", [{"id": s.id, "a": '{"reasoning": "ok", "score": 3}'}])
    do_import(tmp_path / "g.jsonl", tmp_path / "ig", method="gereval", answers="a", rubric="human")
    c, g = judgments(tmp_path / "ic")[(s.id, DIMENSION)], judgments(tmp_path / "ig")[(s.id, DIMENSION)]
    assert set(c.trace) == set(live_c.judgments[0].trace) | {"imported"}
    assert set(g.trace) == set(live_g.judgments[0].trace) | {"imported"}
    assert g.score == live_g.judgments[0].score == 3
    assert c.trace["answered"] == 2 and c.trace["asked"] == live_c.judgments[0].trace["asked"]
    assert checkeval.parse_answers("Q1: yes\nQ2: no", 2).answers[2].yes is False  # the reader used


# -- bad files and matching --------------------------------------------------------------------------


def test_malformed_jsonl_names_file_and_line(tmp_path, two_docs, cli, no_judge):
    path = tmp_path / "bad.jsonl"
    good = json.dumps(direct_records(two_docs.samples[:1])[0])
    path.write_text(f"{good}\n{{\"id\": \"x\", \"rts\": \n{good}\n", encoding="utf-8")
    code, _out, err = cli("import", str(path), "--dataset", "summeval", "--dimension", DIMENSION, "--answers", "rts",
                         "--id", "id", "--run-dir", str(tmp_path / "run"))
    assert code == 1 and f"{path}, record line 2: invalid JSON" in err
    assert not (tmp_path / "run").exists()


def test_unmatched_records_are_reported_skipped_and_counted(tmp_path, two_docs, cli, no_judge):
    recs = direct_records(two_docs.samples[:4]) + [{"id": f"nope:{k}", "rts": "4"} for k in range(7)]
    path = write_jsonl(tmp_path / "a.jsonl", recs)
    code, out, err = cli("import", str(path), "--dataset", "summeval", "--dimension", DIMENSION, "--answers", "rts",
                         "--id", "id", "--run-dir", str(tmp_path / "run"))
    assert code == 0, err
    flat = " ".join((out + err).split())
    assert "imported 4 answers" in flat and "7 unmatched" in flat
    assert "7 record(s) matched no sample and were skipped (first: line 5, line 6, line 7, line 8, line 9)" in flat
    with RunStore(tmp_path / "run", readonly=True) as store:
        m = store.manifest()
    assert m["imported"][DIMENSION]["counts"]["unmatched"] == 7 and m["units"]["asked"] == 4


def test_a_file_matching_nothing_is_an_error(tmp_path, no_judge):
    path = write_jsonl(tmp_path / "a.jsonl", [{"id": "nope", "rts": "4"}])
    with pytest.raises(InputError, match="no record matched a sample"):
        do_import(path, tmp_path / "run")


def test_duplicates_refused_unless_an_option_says_otherwise(tmp_path, two_docs, no_judge):
    s, t = two_docs.samples[:2]
    recs = [{"id": s.id, "rts": "2"}, {"id": t.id, "rts": "3"}, {"id": s.id, "rts": "5"}]
    path = write_jsonl(tmp_path / "d.jsonl", recs)
    with pytest.raises(InputError, match=rf"1 sample\(s\) matched by several records \(2 records\): sample {s.id}: "
                                         r"records line 1, line 3"):
        do_import(path, tmp_path / "run")
    assert not (tmp_path / "run" / "run.sqlite").exists() or not judgments(tmp_path / "run")
    res = do_import(path, tmp_path / "first", duplicates="first")
    assert judgments(tmp_path / "first")[(s.id, DIMENSION)].score == 2 and res.counts["skipped"] == 1
    res = do_import(path, tmp_path / "skip", duplicates="skip")
    assert set(judgments(tmp_path / "skip")) == {(t.id, DIMENSION)} and res.counts["skipped"] == 2


def test_ambiguous_records_refused_or_skipped(tmp_path, two_docs, no_judge):
    s = two_docs.samples[0]
    recs = [{"doc": s.doc_id, "rts": "4"}]  # a document has many summaries: doc_id alone names none of them
    path = write_jsonl(tmp_path / "a.jsonl", [*recs, {"doc": "x", "rts": "1"}])
    opts = {"method": "direct", "dataset": "summeval", "dimension": DIMENSION, "answers": "rts", "match": "doc=doc_id"}
    with pytest.raises(InputError, match=r"1 record\(s\) match several samples: record line 1 matches \d+ samples"):
        import_answers(path, ImportOptions(**opts), tmp_path / "run")
    with pytest.raises(InputError, match="no record matched"):
        import_answers(path, ImportOptions(**opts, ambiguous="skip"), tmp_path / "run")


def test_csv_and_parquet_files(tmp_path, two_docs, no_judge):
    recs = direct_records(two_docs.samples[:3])
    pd.DataFrame(recs).to_csv(tmp_path / "a.csv", index=False)
    pd.DataFrame(recs).to_parquet(tmp_path / "a.parquet", index=False)
    do_import(tmp_path / "a.csv", tmp_path / "csv")
    do_import(tmp_path / "a.parquet", tmp_path / "pq")
    assert {k: j.score for k, j in judgments(tmp_path / "csv").items()} == \
        {k: j.score for k, j in judgments(tmp_path / "pq").items()}
    sampled = [{"id": s.id, "rts": ["Coherence: 2", "Coherence: 3"]} for s in two_docs.samples[:2]]
    pd.DataFrame(sampled).to_parquet(tmp_path / "n.parquet", index=False)  # lists come back as arrays
    do_import(tmp_path / "n.parquet", tmp_path / "npq", method="geval", mode="sampling")
    assert {j.score for j in judgments(tmp_path / "npq").values()} == {2.5}


# -- several imports into one run -----------------------------------------------------------------------


def test_reimport_is_a_noop_other_file_refused_other_dimension_added(tmp_path, two_docs, cli, no_judge):
    path = write_jsonl(tmp_path / "a.jsonl", direct_records(two_docs.samples))
    args = ["--dataset", "summeval", "--answers", "rts", "--id", "id", "--judge-name", "gpt-4",
            "--run-dir", str(tmp_path / "run")]
    assert cli("import", str(path), "--dimension", DIMENSION, *args)[0] == 0
    code, out, _ = cli("import", str(path), "--dimension", DIMENSION, *args)
    assert code == 0 and "already imported" in " ".join(out.split())
    assert len(judgments(tmp_path / "run")) == len(two_docs.samples)
    other = write_jsonl(tmp_path / "b.jsonl", direct_records(two_docs.samples, lambda i, s: "Score: 1"))
    code, _, err = cli("import", str(other), "--dimension", DIMENSION, *args)
    flat = " ".join(err.split())
    old_sha = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    new_sha = hashlib.sha256(other.read_bytes()).hexdigest()[:16]
    assert code == 1 and old_sha in flat and new_sha in flat
    assert cli("import", str(other), "--dimension", "fluency", *args)[0] == 0
    with RunStore(tmp_path / "run", readonly=True) as store:
        m = store.manifest()
        assert [d["name"] for d in m["dimensions"]] == [DIMENSION, "fluency"]
        assert set(m["imported"]) == {DIMENSION, "fluency"} and m["judge"]["model"] == "gpt-4"
        assert store.unit_counts()["asked"] == 2 * len(two_docs.samples)
    code, _, err = cli("import", str(other), "--dimension", "relevance", *args[:-2], "--method", "geval",
                       "--run-dir", str(tmp_path / "run"))
    assert code == 1 and "method: stored 'direct' | now 'geval'" in err


def test_import_into_a_live_run_is_refused(tmp_path, two_docs, no_judge, monkeypatch):
    monkeypatch.undo()
    assay.evaluate(two_docs.select(limit=1), method="direct", judge=ScriptedJudge(["4"]), dimensions=[DIMENSION],
                   run_dir=tmp_path / "run")
    path = write_jsonl(tmp_path / "a.jsonl", direct_records(two_docs.samples[:1]))
    with pytest.raises(ConfigError, match="other settings"):
        do_import(path, tmp_path / "run", dimension="fluency")


# -- the imported run works like any other ------------------------------------------------------------


def test_meta_compare_export_report_on_imported_runs(tmp_path, two_docs, cli, no_judge):
    for name, shift in (("judge-a", 0), ("judge-b", 1)):
        path = write_jsonl(tmp_path / f"{name}.jsonl", direct_records(
            two_docs.samples, lambda i, s, k=shift: f"Final score: {min(5, round(s.human[DIMENSION]) + k)}"))
        do_import(path, tmp_path / name, judge_name=name)
    table = read_run(tmp_path / "judge-a")
    assert table.method == "direct" and table.judge == "imported:judge-a" and table.dataset == "summeval"
    code, _, err = cli("meta", str(tmp_path / "judge-a"), "--json", str(tmp_path / "m.json"))
    assert code == 0, err
    res = json.loads((tmp_path / "m.json").read_text())
    row = next(r for r in res["rows"] if r["dimension"] == DIMENSION)
    assert res["level"] == "sample" and row["coverage"] == 1.0 and row["spearman"] > 0.5
    code, _out, err = cli("compare", str(tmp_path / "judge-a"), str(tmp_path / "judge-b"), "--json",
                         str(tmp_path / "c.json"))
    assert code == 0, err
    comp = json.loads((tmp_path / "c.json").read_text())
    assert {r["judge"] for r in comp["runs"]} == {"imported:judge-a", "imported:judge-b"}
    assert comp["agreement"] and comp["agreement"][0]["method"] == "direct"
    assert cli("export", str(tmp_path / "judge-a"), "--format", "csv", "-o", str(tmp_path / "a.csv"))[0] == 0
    exported = pd.read_csv(tmp_path / "a.csv")
    assert len(exported) == len(two_docs.samples) and set(exported["judge"]) == {"imported:judge-a"}
    assert cli("report", str(tmp_path / "judge-a"), str(tmp_path / "judge-b"), "-o", str(tmp_path / "r.html"))[0] == 0
    assert "imported:judge-a" in (tmp_path / "r.html").read_text()


# -- score files: the long layout's error column, --dataset and mapping for compare ---------------------


def test_long_layout_keeps_error_method_and_judge(tmp_path):
    rows = [{"sample_id": f"d{k // 3}:s{k % 3}", "doc_id": f"d{k // 3}", "system_id": f"s{k % 3}",
             "dimension": DIMENSION, "score": None if k == 4 else k % 5 + 1, "human": (k * 3) % 5 + 1,
             "error": "unparseable answer: no rating found" if k == 4 else "", "method": "direct",
             "judge": "openai:gpt-4"} for k in range(9)]
    path = tmp_path / "scores.jsonl"
    write_jsonl(path, rows)
    table = load_scores(path, dataset="summeval")
    assert table.errors == {("d1:s1", DIMENSION): "unparseable answer: no rating found"}
    assert table.method == "direct" and table.judge == "openai:gpt-4" and table.conventional_level() == "sample"


def test_compare_on_files_takes_dataset_and_mapping(tmp_path, cli):
    for name in ("a", "b"):
        rows = [{"item": f"d{k // 3}:s{k % 3}", "doc": f"d{k // 3}", "sys": f"s{k % 3}", "pred": (k * 7 + len(name))
                 % 5 + 1, "gold": (k * 3) % 5 + 1, "who": f"judge-{name}", "how": "geval"} for k in range(12)]
        pd.DataFrame(rows).to_csv(tmp_path / f"{name}.csv", index=False)
    code, _out, err = cli("compare", str(tmp_path / "a.csv"), str(tmp_path / "b.csv"), "--dataset", "summeval",
                         "--map", "id=item", "--map", "doc_id=doc", "--map", "system_id=sys",
                         "--map", f"score.{DIMENSION}=pred", "--map", f"human.{DIMENSION}=gold",
                         "--map", "judge=who", "--map", "method=how", "--json", str(tmp_path / "c.json"))
    assert code == 0, err
    comp = json.loads((tmp_path / "c.json").read_text())
    assert comp["level"] == "sample" and "dataset unknown" not in comp["level_reason"]
    assert [(r["method"], r["judge"]) for r in comp["runs"]] == [("geval", "judge-a"), ("geval", "judge-b")]
