"""The checklist schema: shipped files, validation errors that name the line, round trips, stage counts."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from assay.errors import ConfigError
from assay.methods.checkeval.checklist import (
    Checklist,
    ChecklistError,
    checklist_hash,
    dump_checklist,
    normalise_question,
    parse_checklist,
    stage_counts,
)
from assay.methods.checkeval.shipped import default_checklist, load_checklist, shipped_checklists

SMALL = """\
schema_version: 1
name: tiny
source: test
dimensions:
  - name: fluency
    definition: Sentences are well formed.
    sub_dimensions:
      - name: Grammar
        questions:
          - id: g1
            text: Are all sentences grammatical?
          - id: g1.e1
            origin: elaboration
            seed: g1
            text: Do subjects and verbs agree?
      - name: Spelling
        questions:
          - text: Are all words spelled correctly?
"""


def _line_of(text: str, needle: str) -> int:
    """The last line holding ``needle`` (a duplicate is reported where it repeats)."""
    return [i for i, line in enumerate(text.splitlines(), start=1) if needle in line][-1]


def test_shipped_checklists_match_the_papers_tables():
    assert {"summeval", "topical-chat", "qags"} <= set(shipped_checklists())
    summeval = stage_counts(load_checklist("summeval"))
    # CheckEval 2025, table 5: seed questions per dimension.
    assert {d: c["seed"] for d, c in summeval.items()} == {"coherence": 3, "consistency": 3, "fluency": 4,
                                                           "relevance": 5}
    topical = stage_counts(load_checklist("topical-chat"))
    # Table 6: naturalness 5, coherence 4, engagingness 4, groundedness 5.
    assert {d: c["seed"] for d, c in topical.items()} == {"naturalness": 5, "coherence": 4, "engagingness": 4,
                                                          "groundedness": 5}
    for name in shipped_checklists():
        cl = load_checklist(name)
        assert "Lee et al." in cl.source or "assay project" in cl.source
        assert all(q.text.endswith("?") for d in cl.dimensions for _, q in d.questions())


def test_default_checklist_per_dataset():
    assert default_checklist("summeval-experts") == "summeval"
    assert default_checklist("qags-cnndm") == "qags"
    with pytest.raises(ConfigError, match="no checklist is shipped"):
        default_checklist("helpsteer2")


def test_ids_are_assigned_and_the_file_round_trips():
    cl = parse_checklist(SMALL)
    spelling = cl.dimension("fluency").sub_dimensions[1].questions[0]
    assert spelling.id == "fluency-2-1"
    again = parse_checklist(dump_checklist(cl))
    assert again == cl
    assert checklist_hash(again) == checklist_hash(cl)


def test_hash_changes_with_a_question_but_not_with_the_build_record():
    cl = parse_checklist(SMALL)
    other = parse_checklist(SMALL.replace("Do subjects and verbs agree?", "Do verbs agree with subjects?"))
    assert checklist_hash(other) != checklist_hash(cl)


@pytest.mark.parametrize(("change", "needle", "message"), [
    (("origin: elaboration", "origin: invented"), "origin: invented", "Input should be 'seed'"),
    (("seed: g1", "seed: g9"), "seed: g9", "is not a seed question"),
    (("            seed: g1\n", ""), "origin: elaboration", "must name the seed question"),
    (("          - text: Are all words", "          - id: g1\n            text: Are all words"), "id: g1",
     "already used"),
    (("      - name: Spelling", "      - nme: Spelling"), "nme: Spelling", "Extra inputs"),
    (("  - name: fluency\n", "  - name: [fluency\n"), "name: [fluency", "not valid YAML"),
])
def test_validation_errors_name_the_line(change, needle, message):
    text = SMALL.replace(*change)
    with pytest.raises(ChecklistError) as info:
        parse_checklist(text, "mine.yaml")
    err = str(info.value)
    assert "mine.yaml" in err and message in err
    lines = [p[0] for p in info.value.problems]
    expected = _line_of(text, needle)
    # A problem inside a mapping item may be reported on the item's first line; YAML reports a syntax
    # error where the parser noticed it (the next line) and names the line where the construct began.
    assert any(line is not None and expected - 2 <= line <= expected + 1 for line in lines), (lines, expected, err)


def test_removed_question_needs_a_reason():
    text = SMALL.replace("            text: Do subjects and verbs agree?",
                         "            text: Do subjects and verbs agree?\n            kept: false")
    with pytest.raises(ChecklistError, match="removed_because"):
        parse_checklist(text)


def test_python_construction_checks_references_too():
    data = {"name": "x", "source": "s", "dimensions": [{"name": "d", "definition": "def", "sub_dimensions": [
        {"name": "s", "questions": [{"text": "Is it?", "origin": "diversification", "seed": "nope"}]}]}]}
    with pytest.raises(ValueError, match="not a seed question"):
        Checklist.model_validate(data)


def test_stage_counts_add_up():
    text = SMALL.replace("            text: Do subjects and verbs agree?",
                         "            text: Do subjects and verbs agree?\n            kept: false\n"
                         "            removed_because: redundancy")
    counts = stage_counts(parse_checklist(text))["fluency"]
    assert counts == {"seed": 2, "diversification": 0, "elaboration": 1, "manual": 0, "filtered out": 1, "final": 2}
    assert counts["final"] == counts["seed"] + counts["elaboration"] - counts["filtered out"]


def test_unknown_checklist_name_suggests():
    with pytest.raises(ConfigError, match="Did you mean 'summeval'"):
        load_checklist("sumeval")


def test_normalise_question_ignores_form_not_words():
    assert normalise_question("1-1-2. **Is the Summary  clear?**") == normalise_question("is the summary clear")
    assert normalise_question("- “Is it clear?”") == normalise_question("Is it clear?")
    assert normalise_question("Is the summary clear?") != normalise_question("Is the summary very clear?")


def test_show_prints_tree_and_counts(tmp_path):
    from assay.cli.main import app

    path = tmp_path / "tiny.yaml"
    path.write_text(SMALL.replace("            text: Do subjects and verbs agree?",
                                  "            text: Do subjects and verbs agree?\n            kept: false\n"
                                  "            removed_because: 'LLM filter: redundancy'"))
    result = CliRunner().invoke(app, ["checklist", "show", str(path)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "Are all sentences grammatical?" in result.output
    assert "removed: LLM filter: redundancy" in result.output
    assert "filtered out" in result.output and "final checklist" in result.output
    shipped = CliRunner().invoke(app, ["checklist", "show", "summeval"], env={"COLUMNS": "200"})
    assert shipped.exit_code == 0 and "Table 15" in shipped.output
