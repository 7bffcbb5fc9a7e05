"""SEAL's paper preset with a scripted judge: Table 21's prompts verbatim, one fact call per triple, the manifest,
and a reference identical to the source (QAGS) never treated as a reference."""

from __future__ import annotations

import dataclasses
import html
import json
import re
from collections import Counter

import assay
from assay.answers.fence import MATERIAL_NOTE
from assay.judges.base import Request
from assay.judges.scripted import ScriptedJudge
from assay.methods.seal.paper import NO_REFERENCE, normalised_sha256, paper_prompts
from assay.methods.seal.units import split_sentences
from published import shared_path

SPLIT_START = "You will be given a source text and a summary."
FACTS_START = "You will be provided with a Source text, a Reference text and a Summary."
ASSAY_FACTS_INTRO = "You will rewrite a text as a list of monadic facts."


def seed_rows() -> dict[str, str]:
    """Table 21's two rows as the seed file gives them (HTML entities decoded)."""
    seed = shared_path("seeds", "003_3d3b607d1b0b5349.txt")
    rows = {}
    for line in seed.read_text(encoding="utf-8").splitlines():
        for key, name in (("split", "Sentence Split\t"), ("facts", "Monadic Fact Generation\t")):
            if line.startswith(name):
                rows[key] = html.unescape(re.sub(r"^<p>|</p>$", "", line[len(name):]))
    assert set(rows) == {"split", "facts"}
    return rows


def fenced(prompt: str, label: str) -> str:
    return re.search(rf"<<<{label}>>>\n(.*?)\n<<<END {label}>>>", prompt, re.S).group(1)


def example_of(req: Request) -> str:
    return re.findall(r"Example: (.*)", req.messages[-1].content)[-1]


def ids(prefix: str, text: str) -> list[str]:
    return [f"{prefix}{i}:{s}" for i, s in enumerate(split_sentences(text), 1)]


def careful(req: Request) -> str:
    """Splits and fact lists as a careful judge would give them (facts = the texts' sentences, with ids);
    every consistency fact supported by c1; anything else answered with the prompt's own example."""
    prompt = req.messages[0].content
    if prompt.startswith(SPLIT_START):
        return json.dumps({"sentence": split_sentences(fenced(prompt, "SUMMARY"))})
    if prompt.startswith(FACTS_START):
        ref = fenced(prompt, "REFERENCE TEXT") if "<<<REFERENCE TEXT>>>" in prompt else "A stray fact."
        return json.dumps({"source text monadic facts": ids("c", fenced(prompt, "SOURCE TEXT")),
                           "reference text monadic facts": ids("r", ref),
                           "summary monadic facts": ids("s", fenced(prompt, "SUMMARY"))})
    if '"supporting source facts"' in prompt:
        n = len(re.findall(r"^s\d+: ", fenced(prompt, "SUMMARY FACTS"), re.M))
        return json.dumps({"supporting source facts": [["c1"]] * n})
    return example_of(req)


def paper_judge() -> ScriptedJudge:
    return ScriptedJudge(careful)


def kinds(judge: ScriptedJudge) -> Counter:
    out: Counter = Counter()
    for r in judge.requests:
        p = r.messages[0].content
        out["split" if p.startswith(SPLIT_START) else "joint facts" if p.startswith(FACTS_START)
            else "assay facts" if p.startswith(ASSAY_FACTS_INTRO) else "other"] += 1
    return out


def test_shipped_prompts_are_table_21_verbatim():
    rows, shipped = seed_rows(), paper_prompts()
    assert " ".join(shipped.split.split()) == " ".join(rows["split"].split())
    assert " ".join(shipped.facts.split()) == " ".join(rows["facts"].split())
    assert shipped.hashes == {"split": normalised_sha256(rows["split"]), "facts": normalised_sha256(rows["facts"])}
    assert shipped.split_key == "sentence"
    assert set(shipped.fact_keys.values()) == {"source text monadic facts", "reference text monadic facts",
                                               "summary monadic facts"}


def test_paper_preset_splits_with_table_21_and_extracts_all_facts_in_one_call():
    ds = assay.load_dataset("summeval").select(docs=1, limit=2)
    judge = paper_judge()
    res = assay.evaluate(ds, method="seal", judge=judge, options={"preset": "paper", "threshold_facts": 2})
    # per sample: one split (coherence and fluency share it), one joint fact call (consistency and relevance)
    assert kinds(judge) == {"split": 2, "joint facts": 2, "other": 8}
    for req in judge.requests:
        prompt = req.messages[0].content
        if prompt.startswith(SPLIT_START):
            assert prompt.startswith(paper_prompts().split + f"\n\n{MATERIAL_NOTE}\n\n<<<SOURCE TEXT>>>")
            assert prompt.index("<<<SOURCE TEXT>>>") < prompt.index("<<<SUMMARY>>>")
        if prompt.startswith(FACTS_START):
            assert prompt.startswith(paper_prompts().facts + f"\n\n{MATERIAL_NOTE}\n\n<<<SOURCE TEXT>>>")
            assert [prompt.index(f"<<<{x}>>>") for x in ("SOURCE TEXT", "REFERENCE TEXT", "SUMMARY")] == \
                sorted(prompt.index(f"<<<{x}>>>") for x in ("SOURCE TEXT", "REFERENCE TEXT", "SUMMARY"))
    by = {(j.sample_id, j.dimension): j for j in res.judgments}
    for s in ds.samples:
        flu, cons, rel = by[(s.id, "fluency")], by[(s.id, "consistency")], by[(s.id, "relevance")]
        assert flu.trace["stage1"]["output_sentences"]["how"] == "llm"
        assert flu.trace["stage1"]["output_sentences"]["items"] == split_sentences(s.output)
        out_facts = cons.trace["stage1"]["output_facts"]
        assert out_facts["how"] == "llm (one call per triple)"
        assert [f["text"] for f in out_facts["items"]] == split_sentences(s.output)
        assert cons.trace["stage1"]["source_facts"]["items"][0] == {"id": "c1", "text": split_sentences(s.source)[0]}
        assert rel.trace["stage1"]["reference_facts"]["items"][0]["id"] == "r1"
        assert [cons.trace["stage1"]["output_facts"]["paid_here"],
                rel.trace["stage1"]["output_facts"]["paid_here"]].count(True) == 1
        assert cons.score == 1.0  # every summary fact supported by c1
    settings = res.manifest["method_settings"]
    assert (settings["preset"], settings["sentence_splitter"], settings["decomposition"]) == ("paper", "llm", "joint")
    preset = res.manifest["artifacts"]["seal_preset"]
    assert preset["name"] == "paper" and preset["overridden"] == {}
    assert preset["sets"] == {"sentence_splitter": "llm", "decomposition": "joint", "temperature": 0.0}
    assert preset["stage1_prompts"]["sha256"] == paper_prompts().hashes
    assert preset["stage1_prompts"]["used"] == {"split": True, "facts": True}


def test_default_stays_assay_and_explicit_options_override_the_preset_on_record():
    ds = assay.load_dataset("summeval").select(docs=1, limit=1)
    default = assay.evaluate(ds, method="seal", judge=(j0 := paper_judge()), dimensions=["fluency"])
    assert default.manifest["artifacts"]["seal_preset"] == {"name": "assay", "sets": {}}
    assert kinds(j0)["split"] == 0  # pysbd
    judge = paper_judge()
    res = assay.evaluate(ds, method="seal", judge=judge, dimensions=["fluency", "consistency"],
                         options={"preset": "paper", "sentence_splitter": "pysbd", "threshold_facts": 1})
    assert kinds(judge)["split"] == 0 and kinds(judge)["joint facts"] == 1 and kinds(judge)["assay facts"] == 0
    preset = res.manifest["artifacts"]["seal_preset"]
    assert preset["overridden"] == {"sentence_splitter": "pysbd"}
    assert preset["stage1_prompts"]["used"] == {"split": False, "facts": True}


def test_a_joint_answer_without_a_list_is_reasked():
    answers = iter([json.dumps({"summary monadic facts": ["s1:x"]})])

    def respond(req: Request) -> str:
        if req.messages[0].content.startswith(FACTS_START) and len(req.messages) == 1:
            return next(answers)
        return careful(req)

    ds = assay.load_dataset("summeval").select(docs=1, limit=1)
    judge = ScriptedJudge(respond)
    j = assay.evaluate(ds, method="seal", judge=judge, dimensions=["consistency"],
                       options={"preset": "paper", "threshold_facts": 1}).judgments[0]
    attempts = j.trace["stage1"]["output_facts"]["attempts"]
    assert 'no "source text monadic facts" field' in attempts[0]["error"] and attempts[1]["error"] is None
    assert "summary monadic facts" in judge.requests[1].messages[-1].content  # the re-ask repeats the format
    assert j.score == 1.0


def test_qags_reference_identical_to_the_source_is_not_a_reference():
    ds = assay.load_dataset("qags-xsum").select(limit=1)
    s = ds.samples[0]
    assert s.reference.strip() == s.source.strip()  # the UniEval release's QAGS: reference = source
    judge = paper_judge()
    res = assay.evaluate(ds, method="seal", judge=judge,
                         options={"preset": "paper", "recipe": ["consistency=summary-relevance-facts"],
                                  "threshold_facts": 1})
    j = res.judgments[0]
    prompt = next(r.messages[0].content for r in judge.requests if r.messages[0].content.startswith(FACTS_START))
    assert "<<<REFERENCE TEXT>>>" not in prompt and NO_REFERENCE in prompt and prompt.count("<<<SOURCE TEXT>>>") == 1
    assert j.trace["reference"] == "identical to the source"
    assert "reference_facts" not in j.trace["stage1"]
    assert j.trace["evidence_notes"] == ["no distinct reference text (identical to the source): its facts left out"]
    assert {"role": "reference", "text": "1 fact(s)", "reason": "no reference text was given"} in \
        j.trace["stage1"]["output_facts"]["dropped"]
    assert any(n["kind"] == "input" and "identical to its source" in n["message"] for n in res.notes)
    # the default recipe (Table 25's triple) shows the article once and records the same
    judge = ScriptedJudge(example_of)
    res = assay.evaluate(ds, method="seal", judge=judge)
    assert res.judgments[0].trace["reference"] == "identical to the source"
    assert any(n["kind"] == "input" for n in res.notes)


def test_cli_preset_flag():
    from assay.cli.options import flags_to_options
    from assay.methods.seal.method import Seal, SealOptions

    settings = Seal(flags_to_options(["--preset", "paper"], SealOptions, "seal")).settings()
    assert (settings["preset"], settings["sentence_splitter"], settings["decomposition"]) == ("paper", "llm", "joint")
    settings = Seal(flags_to_options(["--decomposition", "joint"], SealOptions, "seal")).settings()
    assert (settings["preset"], settings["sentence_splitter"], settings["decomposition"]) == \
        ("assay", "pysbd", "joint")


def test_a_distinct_qags_reference_is_used():
    ds = assay.load_dataset("qags-xsum").select(limit=1)
    ref = "Armed men robbed a security van in Glasgow city centre."
    ds = dataclasses.replace(ds, samples=[ds.samples[0].model_copy(update={"reference": ref})])
    judge = ScriptedJudge(example_of)
    res = assay.evaluate(ds, method="seal", judge=judge)
    prompt = judge.requests[0].messages[0].content
    assert res.judgments[0].trace["reference"] == "distinct" and fenced(prompt, "REFERENCE SUMMARY") == ref
    assert not any(n["kind"] == "input" for n in res.notes)
    judge = paper_judge()
    j = assay.evaluate(ds, method="seal", judge=judge, options={
        "preset": "paper", "recipe": ["consistency=summary-relevance-facts"], "threshold_facts": 1}).judgments[0]
    facts_prompt = next(r.messages[0].content for r in judge.requests if r.messages[0].content.startswith(FACTS_START))
    assert fenced(facts_prompt, "REFERENCE TEXT") == ref and NO_REFERENCE not in facts_prompt
    assert j.trace["stage1"]["reference_facts"]["items"] == [{"id": "r1", "text": ref}]
