"""GER-Eval's task texts and human rubrics: what the task-only condition may see, and where human items come from."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

import assay
from assay.cli.main import app
from assay.judges import ManagedJudge
from assay.judges.scripted import ScriptedJudge
from assay.methods.gereval.generate import GenerationSettings, generate_rubric
from assay.methods.gereval.method import validate_score
from assay.methods.gereval.rubric import CategoricalScale, human_rubric, load_rubric
from published import shared_path

# Words that name a rated dimension or paraphrase it, by dimension; matched at a word start, any case.
# The synonyms are the ones found in the task texts shipped before this test (e.g. HelpSteer2's
# "is correct, is clearly expressed, uses a suitable level of complexity and a suitable length").
SYNONYMS = {
    "coherence": ["coheren", "well-organi", "organi[sz]ed", "fits what", "follows? on", "structure"],
    "consistency": ["consisten", "faithful", "support", "hallucinat", "factual", "unsupported"],
    "fluency": ["fluen", "grammat"],
    "relevance": ["relevan", "important", "key content", "main points"],
    "naturalness": ["natural", "sounds? like", "a person would"],
    "natural": ["natural", "sounds? like", "a person would"],
    "engagingness": ["engag", "interest", "dull"],
    "engaging": ["engag", "interest", "dull"],
    "groundedness": ["grounded", "knowledge", "use of the fact", "makes sensible use"],
    "uses_knowledge": ["knowledge", "true to the persona", "uses the persona"],
    "understandability": ["understand"],
    "understandable": ["understand"],
    "maintains_context": ["maintain", "keeps? the context", "fits what"],
    "helpfulness": ["help", "useful"],
    "correctness": ["correct", "accura", "error", "mistake"],
    "complexity": ["complex", "depth", "expertise", "simple"],
    "verbosity": ["verbos", "length", "concise", "succinct", "detail", "brief"],
    "FN": ["fluen", "natural"],
    "Non-Re": ["redundan", "repetit", "repeat", "repeats"],
    "Coh": ["coheren", "logically"],
    "Read": ["readab", "readable", "easy to read"],
    "IOF": ["informativ", "overlap", "focus", "key findings", "main findings", "accurately"],
}


def forbidden_terms(info) -> list[str]:
    """Every rated dimension's name (and its words) and synonyms, as regexes."""
    terms = []
    for d in info.dimensions:
        if d.name == "overall":
            continue
        terms += SYNONYMS[d.name]
        if len(d.name) > 4:  # the abbreviations (Coh, Read, IOF, FN) are covered by their synonyms
            terms += [re.escape(w) for w in re.split(r"[_\-]", d.name) if len(w) > 3]
    return terms


async def task_condition_prompt(name: str) -> str:
    """The criteria prompt `assay rubric generate --condition task` sends for a bundled dataset."""
    judge = ScriptedJudge(lambda r: "no JSON")
    ds = assay.load_dataset(name)
    await generate_rubric(ds, ManagedJudge(judge), GenerationSettings(condition="task", reasks=0))
    return judge.requests[0].messages[-1].content


@pytest.mark.parametrize("info", assay.datasets.list_datasets(), ids=lambda i: i.name)
async def test_task_condition_prompt_names_no_target_dimension(info):
    prompt = await task_condition_prompt(info.name)
    found = sorted({m.group(0) for t in forbidden_terms(info)
                    for m in re.finditer(rf"\b{t}", prompt, flags=re.IGNORECASE)})
    assert found == [], f"{info.name}: the task-only prompt names target dimensions: {found}"
    assert "Task description:" in prompt and "Example" not in prompt


# -- human rubrics from the datasets' own annotation items ------------------------------------------

HELPSTEER_CARD = {  # the HelpSteer2 data card's attribute definitions (README, CC-BY-4.0)
    "helpfulness": "Overall helpfulness of the response to the prompt.",
    "correctness": "Inclusion of all pertinent facts without errors.",
    "coherence": "Consistency and clarity of expression.",
    "complexity": "Intellectual depth required to write response (i.e. whether the response can be written by "
                  "anyone with basic language competency or requires deep domain expertise).",
    "verbosity": "Amount of detail included in the response, relative to what is asked for in the prompt.",
}


def table12_items(dataset_row: str) -> list[str]:
    """GER-Eval's Table 12 items of one dataset, read from the seed paper (skipped when it is absent)."""
    seed = shared_path("seeds", "004_a92a4f33056234a5.txt")
    text = seed.read_text(encoding="utf-8")
    table = text[text.index("| Dataset | Task-specific rubrics |"):]
    row = re.search(rf"^\| {re.escape(dataset_row)} \| (.*?) \|$", table, re.M)
    return [x.strip() for x in row.group(1).split(",")]


def test_helpsteer2_human_rubric_has_its_annotation_items_as_categorical_labels():
    rubric = human_rubric("helpsteer2")
    assert [c.name for c in rubric.criteria] == list(HELPSTEER_CARD)
    for c in rubric.criteria:
        assert isinstance(c.scale, CategoricalScale) and c.scale.labels == ("0", "1", "2", "3", "4")
        assert c.description.startswith(HELPSTEER_CARD[c.name]) and c.scale.anchors
        assert c.scale.anchors in c.instruction
    verbosity = rubric.criterion("verbosity")
    assert "succinct" in verbosity.scale.describe() and "worst to best" not in verbosity.scale.describe()
    items = table12_items("HelpSteer2")
    described = " ".join(c.description for c in rubric.criteria) + " ".join(rubric.provenance.notes)
    assert [i for i in items if i not in described] == []  # every Table 12 item is a criterion's or noted
    notes = " ".join(rubric.provenance.notes)
    assert "huggingface.co/datasets/nvidia/HelpSteer2" in notes and "Table 12" in notes
    assert "Safe, Unsafe" in notes and "levels 1, 2 and 3" in notes
    assert rubric.provenance.settings["items"]["coherence"] == ["Clarity"]


def test_categorical_number_labels_read_numbers_and_strings():
    crit = human_rubric("helpsteer2").criterion("complexity")
    assert validate_score({"reasoning": "plain words", "score": 3}, crit).value == 4.0  # label "3" is 4th of 5
    assert validate_score({"reasoning": "plain words", "score": "0"}, crit).value == 1.0
    with pytest.raises(ValueError, match="one of the labels"):
        validate_score({"reasoning": "x", "score": 5}, crit)


def test_cli_rubric_human_dataset_helpsteer2(tmp_path):
    path = tmp_path / "h.json"
    result = CliRunner().invoke(app, ["rubric", "human", "--dataset", "helpsteer2", "-o", str(path)],
                                terminal_width=300)
    assert result.exit_code == 0, result.output
    for word in ("Understanding", "Completeness", "Clarity", "Complex Language", "Verbose Language", "0 < 1 < 2"):
        assert word in result.output
    data = json.loads(path.read_text())
    assert data["criteria"][0]["scale"] == {"kind": "categorical", "labels": ["0", "1", "2", "3", "4"],
                                            "anchors": "0 = least helpful, 4 = most helpful"}
    assert load_rubric(path) == human_rubric("helpsteer2")
    assert CliRunner().invoke(app, ["rubric", "human"]).exit_code != 0  # no dataset given


def test_sumpubmed_human_rubric_leaves_out_the_file_number_column():
    rubric = human_rubric("sumpubmed")
    assert [c.name for c in rubric.criteria] == ["Non-Re", "Coh", "Read", "IOF"]
    assert any(n.startswith("FN left out: a copy of the article's file number") for n in rubric.provenance.notes)
    assert "Informativeness, Overlap and Focus" in rubric.criterion("IOF").description


def test_categorical_scale_without_anchors_keeps_its_file_form_and_hash():
    scale = CategoricalScale(labels=("poor", "fair", "good"))
    assert scale.model_dump(mode="json") == {"kind": "categorical", "labels": ["poor", "fair", "good"]}
    assert scale.describe().endswith("(from worst to best)")
    anchored = CategoricalScale(labels=("0", "1"), anchors="0 = succinct, 1 = verbose")
    assert anchored.describe().endswith("(0 = succinct, 1 = verbose)")
    assert CategoricalScale.model_validate(anchored.model_dump(mode="json")) == anchored
