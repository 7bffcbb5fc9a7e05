"""GER-Eval end to end with the embedded judge on Topical-Chat: rubrics written under each condition,
their statistics, applied zero- and few-shot, and compared with the human rubric applied the same way.

SmolLM2-135M is a weak judge: what is asserted is the pipeline (every answer validated, kept or discarded
with its reason, provenance recorded, scores on the scale or recorded failures, resumable runs), not the
quality of the rubrics. Its text changes with the CPU's instruction set, so whether it writes a valid criterion
is not something a test may count on (issue 23): the rubric applied afterwards is written by a scripted judge
through the same generation code, and the embedded model keeps the stages it can do whatever it answers
(writing a rubric, scoring with one).
"""

from __future__ import annotations

import asyncio
import json

import pytest

import assay
from assay.judges import ManagedJudge
from assay.judges.scripted import ScriptedJudge
from assay.meta.inputs import load_transfer_runs as load_runs
from assay.meta.transfer import transfer_tables
from assay.methods.gereval.generate import GenerationSettings, generate_rubric
from assay.methods.gereval.rubric import load_rubric, save_rubric
from assay.methods.gereval.stats import rubric_stats

CONDITIONS = ("task", "contexts", "contrastive")


def _check_scores(result, rubric) -> None:
    scales = {c.name: c.scale.to_scale() for c in rubric.criteria}
    for j in result.judgments:
        assert j.trace["attempts"], "every judgment keeps the judge's answers"
        if j.score is None:
            assert j.error  # a recorded failure, never a zero
        else:
            assert scales[j.dimension].contains(j.score)


def _generate(smollm2, topical_chat, condition: str, tmp_path):
    settings = GenerationSettings(condition=condition, k=2, max_criteria=3, max_tokens=384,
                                  instruction_max_tokens=160, reasks=1, max_chars=300)
    rubric = asyncio.run(generate_rubric(topical_chat, ManagedJudge(smollm2), settings))  # one event loop each
    prov = rubric.provenance
    assert prov.condition == condition and prov.judge["model"] == "smollm2"
    assert prov.settings["temperature"] == 0.7 and prov.settings["json_mode"] is True
    roles = [c["role"] for c in prov.contexts]
    # task: nothing shown; contexts: k inputs; contrastive: each of k inputs with a high- and a low-rated output
    assert roles == {"task": [], "contexts": ["context"] * 2, "contrastive": ["high", "low"] * 2}[condition]
    # every answer is recorded; a criterion is kept only with a valid scoring instruction
    assert prov.responses and all(r["answer"] is not None for r in prov.responses)
    assert all(c.instruction for c in rubric.criteria)
    assert rubric.criteria or prov.discarded
    assert all(d["reason"] and d["stage"] in ("criteria", "instruction") for d in prov.discarded)
    path = save_rubric(rubric, tmp_path / f"rubric-{condition}.yaml")
    assert load_rubric(path).content_hash() == rubric.content_hash()
    stats = rubric_stats(rubric, None, 0.8)
    assert stats["breadth"] == len(rubric.criteria) and stats["unique"] is None  # no embedder here
    return path


SCRIPTED_CRITERIA = {"criteria": [
    {"name": "Engagement", "description": "Whether the response keeps the other speaker interested.", "scale": "1-5"},
    {"name": "Tone", "description": "Whether the response sounds friendly and polite.", "scale": "1-3"},
]}


def _scripted_rubric(topical_chat, tmp_path):
    """A valid rubric written through the same generation code by a scripted judge: the later stages need one,
    and the embedded model's answer on this CPU may have none (issue 23)."""
    def answer(request) -> str:
        last = request.messages[-1].content
        if '"criteria"' in last:
            return json.dumps(SCRIPTED_CRITERIA)
        return json.dumps({"instruction": "Read the conversation and the response, then rate how well it does this."})

    settings = GenerationSettings(condition="task", k=2, max_criteria=3, reasks=0)
    rubric = asyncio.run(generate_rubric(topical_chat, ManagedJudge(ScriptedJudge(answer)), settings))
    assert [c.name for c in rubric.criteria] == ["Engagement", "Tone"] and not rubric.provenance.discarded
    return save_rubric(rubric, tmp_path / "rubric-scripted.yaml")


def _apply_and_compare(smollm2, topical_chat, generated, tmp_path, limit: int) -> None:
    data = topical_chat.select(limit=limit)
    human = load_rubric("human:topical-chat")
    runs = {}
    for name, options, dims in (("generated-0", {"rubric": str(generated)}, None),
                                ("human-0", {"rubric": "human:topical-chat"}, ["coherence"]),
                                ("human-1", {"rubric": "human:topical-chat", "shots": 1}, ["coherence"])):
        res = assay.evaluate(data, method="gereval", judge=smollm2, dimensions=dims, run_dir=tmp_path / name,
                             options=options | {"max_tokens": 96, "reasks": 1})
        _check_scores(res, load_rubric(generated) if name == "generated-0" else human)
        runs[name] = res
    docs = {s.id: s.doc_id for s in topical_chat.samples}
    for j in runs["human-1"].judgments:  # one demonstration each, never from the judged dialogue
        (demo,) = j.trace["demonstrations"]
        assert docs[demo["sample_id"]] != docs[j.sample_id]

    again = assay.evaluate(data, method="gereval", judge=smollm2, dimensions=["coherence"],
                           run_dir=tmp_path / "human-1",
                           options={"rubric": "human:topical-chat", "shots": 1, "max_tokens": 96, "reasks": 1})
    assert again.resumed and sum(u.calls for u in again.usage.values()) == 0

    tables = transfer_tables(load_runs([tmp_path / "human-0", tmp_path / "human-1"]))
    (row,) = tables["pairwise"]
    assert row["criterion"] == "coherence" and row["n"] <= limit
    assert row["agreement"] is None or 0.0 <= row["agreement"] <= 1.0


def test_generate_apply_zero_and_few_shot_and_compare_with_the_human_rubric(smollm2, topical_chat, tmp_path):
    """The cheap path: the embedded judge writes a rubric from the task description (kept or discarded with its
    reasons, whatever it answers); a valid rubric is applied by it to one response next to the human rubric."""
    _generate(smollm2, topical_chat, "task", tmp_path)
    _apply_and_compare(smollm2, topical_chat, _scripted_rubric(topical_chat, tmp_path), tmp_path, limit=1)


@pytest.mark.slow
def test_every_condition_then_apply_and_compare(smollm2, topical_chat, tmp_path):
    paths = {c: _generate(smollm2, topical_chat, c, tmp_path) for c in CONDITIONS}
    generated = next((p for p in paths.values() if load_rubric(p).criteria), None)  # the model's own, if valid
    rubric = generated or _scripted_rubric(topical_chat, tmp_path)
    _apply_and_compare(smollm2, topical_chat, rubric, tmp_path, limit=3)


@pytest.mark.slow
@pytest.mark.parametrize("condition", ["task"])
def test_cli_generate_show_and_stats(condition, tmp_path):
    """The commands a user runs: rubric generate (embedded judge), show, stats without an embedder."""
    from typer.testing import CliRunner

    from assay.cli.main import app

    runner = CliRunner()
    out = tmp_path / "rubric.yaml"
    res = runner.invoke(app, ["rubric", "generate", "--dataset", "topical-chat", "--condition", condition,
                              "--max-criteria", "3", "--max-tokens", "384", "--instruction-max-tokens", "160",
                              "--reasks", "1", "--judge-opt", "n_threads=2", "-o", str(out)],
                        env={"COLUMNS": "200"})
    assert out.exists(), res.output
    rubric = load_rubric(out)
    if rubric.criteria:
        assert res.exit_code == 0, res.output
        shown = runner.invoke(app, ["rubric", "show", str(out)], env={"COLUMNS": "200"})
        assert shown.exit_code == 0 and rubric.criteria[0].name in shown.output
        stats = runner.invoke(app, ["rubric", "stats", str(out), "--embedder", "none"], env={"COLUMNS": "200"})
        assert stats.exit_code == 0 and "not computed" in stats.output
    else:  # no valid criteria: a clear error, with the discarded answers in the file
        assert res.exit_code == 1 and "no valid criteria" in res.output and rubric.provenance.discarded
