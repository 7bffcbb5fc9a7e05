"""Checklist generation: prompts, parsing generated questions, the remove-only filter, the builder's logic."""

from __future__ import annotations

import asyncio
import json

import pytest

import assay
from assay.judges.base import Request
from assay.judges.middleware import ManagedJudge
from assay.judges.scripted import ScriptedJudge
from assay.methods.checkeval.build import (
    EXAMPLE_QUESTIONS,
    BuildSettings,
    apply_filter,
    augmentation_2024_prompt,
    build_checklist,
    copied_example_words,
    diversification_prompt,
    elaboration_prompt,
    filter_prompt,
    parse_generated,
    read_filter_answer,
    seed_layout,
)
from assay.methods.checkeval.checklist import Question, dump_checklist, parse_checklist, stage_counts
from assay.methods.checkeval.shipped import load_checklist

INFO = assay.load_dataset("topical-chat").info


@pytest.fixture()
def coherence():
    return load_checklist("topical-chat").dimension("coherence")


def test_diversification_prompt_has_figure_4_parts(coherence):
    p = diversification_prompt(INFO, coherence)
    for part in ("# 1) Benchmark", "Name: topical-chat", "# 2) Dimension", coherence.definition,
                 "# 3) Sub-dimensions and seed questions", "1. Logical Flow:", "3-2. Does the response integrate",
                 "# Conditions", "# Constraints", "A 'yes' means the response is better", "1-1-1."):
        assert part in p


def test_elaboration_prompt_is_about_one_sub_dimension(coherence):
    p = elaboration_prompt(INFO, coherence, "Continuity")
    assert "'Continuity'" in p and "into 4 narrower sub-questions" in p  # the released pools' count per seed
    assert "1-1. Does the response stay consistent" in p and "1-2. Does the response integrate" in p
    assert "Logical Flow" not in p and "directly relevant" not in p
    assert all(q in p for q in EXAMPLE_QUESTIONS)


def test_2024_prompt_follows_table_3(coherence):
    sub = coherence.sub_dimensions[0]
    p = augmentation_2024_prompt(INFO, coherence, sub, sub.questions[0])
    assert "- Logical Flow: Does the response logically follow" in p
    assert "'Yes' is the positive answer" in p and p.rstrip().endswith("Sub-questions:")


def test_parse_generated_attaches_to_sub_dimension_and_seed(coherence):
    layout = seed_layout(coherence)
    known = {"does the response stay consistent with the topic discussed in the previous dialogue"}
    text = "\n".join([
        "1. Logical Flow:",
        "1-1-1. Does the response answer the last question that was asked?",
        "3-2-1. **Does the response build on the previous turn?**",
        "3-1. Does the response stay consistent with the topic discussed in the previous dialogue?",
        "- Does the response keep the same subject as the last two turns?",
        "- DOES the response keep the same subject as the last two turns?",  # repeat
        "4-1-1. Does the response mention the weather forecast today?",  # no seed 4-1
        "2-1-1. The response is relevant.",  # not a question
        "- Is it ok?",  # too short
        f"1-1-2. {EXAMPLE_QUESTIONS[0]}",
        "3-1-2. Does the response stay consistent with the topic discussed in the previous dialogue?",  # a seed
    ])
    got = parse_generated(text, layout, known)
    assert [(g.sub_dimension, g.seed) for g in got.accepted] == [("Logical Flow", "coh-1"), ("Continuity", "coh-4"),
                                                                 ("Continuity", "coh-3")]
    assert got.accepted[1].text == "Does the response build on the previous turn?"
    reasons = [r["reason"] for r in got.rejected]
    assert reasons == ["repeats a question already in the pool", "numbered 4-1-…, but there is no seed 4-1",
                       "not a question (no '?')", "too short to be a checklist question",
                       "copies the prompt's example (another task) (words: cups, grams, ingredient)",
                       "repeats a question already in the pool"]


def test_questions_rewritten_from_the_prompts_example_are_rejected(coherence):
    # SmolLM2 rewrote the recipe example instead of the seeds; the words give it away
    text = "1-1-1. Are oven temperatures given in degrees Celsius or degrees Fahrenheit?\n" \
           "1-1-2. Does the response follow on from what the other speaker said about cooking?"
    got = parse_generated(text, seed_layout(coherence), set())
    assert not got.accepted
    assert [r["reason"] for r in got.rejected] == [
        "copies the prompt's example (another task) (words: oven, temperatures)",
        "copies the prompt's example (another task) (words: cooking)"]
    # a word the checklist itself uses is its own, not the example's
    assert copied_example_words("Is the recipe complete?", "Recipe clarity: the recipe is easy to follow") == []
    assert copied_example_words("Is the recipe complete?", "Logical flow of a dialogue") == ["recipe"]


def test_parse_generated_needs_a_seed_to_attach_to(coherence):
    got = parse_generated("- Does the response greet the other speaker by name?", seed_layout(coherence), set())
    assert not got.accepted and got.rejected[0]["reason"] == "cannot tell which seed question it grew from"
    single = seed_layout(coherence, only="Relevance")
    got = parse_generated("1. Does the response greet the other speaker by name?", single, set())
    assert got.accepted[0].seed == "coh-2"


def _pool():
    def q(i: str, text: str) -> Question:
        return Question(id=i, text=text)
    return {"A": [q("a1", "Is the response polite?"), q("a2", "Is the response friendly?")],
            "B": [q("b1", "Does the response use the fact?"), q("b2", "Is the fact stated correctly?")],
            "C": [q("c1", "Is the response short?")]}


def test_filter_may_only_remove():
    keep = {"A": ["is the response POLITE", "Is the response friendly and warm?"],  # 2nd: rewritten
            "B": ["1. Does the response use the fact?", "Does the response cite its source?"],  # 2nd: new
            "C": []}
    removed = [{"question": "Is the fact stated correctly?", "criterion": "Redundancy"}]
    out = apply_filter(_pool(), keep, removed)
    assert out.removed == {"a2": "LLM filter (no criterion given)", "b2": "LLM filter: redundancy",
                           "c1": "LLM filter (no criterion given)"}
    assert [r["text"] for r in out.rejected] == ["Is the response friendly and warm?",
                                                 "Does the response cite its source?"]
    assert all("may only remove" in r["reason"] for r in out.rejected)


def test_filter_keeps_sub_dimensions_the_answer_left_out_and_notes_moves():
    out = apply_filter(_pool(), {"A": ["Is the response polite?", "Is the response short?"]}, [])
    assert set(out.removed) == {"a2"}
    assert any("no key for 'B'" in n for n in out.notes) and any("c1 was listed under 'A'" in n for n in out.notes)


def test_filter_answer_forms():
    keep, removed, err = read_filter_answer('Sure!\n```json\n{"keep": {"A": ["x?"]}, "removed": []}\n```')
    assert keep == {"A": ["x?"]} and removed == [] and not err
    keep, _, err = read_filter_answer('{"A": ["x?"], "B": []}')  # figure 6's bare form
    assert keep == {"A": ["x?"], "B": []}
    assert read_filter_answer("I removed the bad ones.")[0] is None
    assert read_filter_answer('{"A": "x?"}')[2].startswith("the JSON does not map")


def test_filter_prompt_lists_the_pool_and_the_rules(coherence):
    p = filter_prompt(INFO, coherence, {"Relevance": ["Is it relevant?"]})
    assert '"Relevance": [' in p and "Do not write new questions." in p
    assert "naturalness, engagingness, groundedness" in p and "Redundancy" in p


def _scripted(filter_answers: list[str]):
    answers = iter(filter_answers)

    def respond(req: Request) -> str:
        p = req.messages[0].content  # the step's prompt (a re-ask is a follow-up turn after it)
        if "widen the coverage" in p:
            return "1-1-1. Does the response pick up the last thing the other speaker said?\n" \
                   "3-1-1. Does the response avoid jumping to an unrelated subject?"
        if "Break each seed question" in p:
            if "'Continuity'" in p:
                return "Sorry, I cannot help."  # malformed every time
            if "'Relevance'" in p:
                return "1-1-1. Does the response talk about the same thing as the history?\n" \
                       "1-1-2. Does the response answer the question that was just asked?"  # Logical Flow has it
            return "1-1. (seed)\n1-1-1. Does the response answer the question that was just asked?\n" \
                   "1-1-2. Does the response refer to something said in the history?"
        if "Remove the questions that fail" in p:
            return next(answers)
        raise AssertionError(p[:80])

    return ScriptedJudge(respond)


def _build(judge, **settings):
    seeds = load_checklist("topical-chat")
    managed = ManagedJudge(judge)
    return asyncio.run(build_checklist(seeds, INFO, managed, BuildSettings(reasks=1, **settings),
                                       ["coherence"], name="tc-coh"))


def test_builder_grows_filters_and_records(coherence):
    keep = {"Logical Flow": ["Does the response logically follow from the earlier part of the conversation, "
                             "maintaining a clear flow of ideas?",
                             "Does the response answer the question that was just asked?",
                             "Does the response pick up the last thing the other speaker said?"],
            "Relevance": ["Is the response directly relevant to the content and context of the previous dialogue?",
                          "Does the response talk about the same thing as the history?",
                          "Is the response about sports?"],
            "Continuity": ["Does the response stay consistent with the topic discussed in the previous dialogue?",
                           "Does the response integrate smoothly with the ongoing conversation, ensuring a "
                           "coherent progression?"]}
    judge = _scripted(["not json", json.dumps({"keep": keep, "removed": []})])
    cl = _build(judge)
    dim = cl.dimension("coherence")
    by_text = {q.text: q for _, q in dim.questions()}
    div = by_text["Does the response pick up the last thing the other speaker said?"]
    assert div.origin == "diversification" and div.seed == "coh-1" and div.kept
    div2 = by_text["Does the response avoid jumping to an unrelated subject?"]
    assert div2.seed == "coh-3" and not div2.kept and div2.removed_because.startswith("LLM filter")
    elab = [q for q in by_text.values() if q.origin == "elaboration"]
    assert [q.seed for q in elab] == ["coh-1", "coh-1", "coh-2"]  # each sub-dimension's prompt had one seed
    assert [q.kept for q in elab] == [True, False, True]
    counts = stage_counts(cl)["coherence"]
    assert counts == {"seed": 4, "diversification": 2, "elaboration": 3, "manual": 0, "filtered out": 2, "final": 7}
    relevance = next(c for c in cl.build.calls if c.sub_dimension == "Relevance")
    assert relevance.accepted == 1 and relevance.rejected[0]["reason"] == "repeats a question already in the pool"
    calls = cl.build.calls
    assert [c.stage for c in calls].count("elaboration") == 1 + 1 + 2  # Continuity re-asked, then given up
    filt = [c for c in calls if c.stage == "filter"]
    assert [c.attempt for c in filt] == [1, 2] and filt[0].error == "no JSON object in the answer"
    assert any(r["text"] == "Is the response about sports?" for r in filt[1].rejected)
    assert any("elaboration of coherence/Continuity" in f for f in cl.build.failures)
    assert "Sorry, I cannot help." in [c.response for c in calls]
    elab_prompts = [r.messages[-1].content for r in judge.requests if "Break each seed" in r.messages[-1].content]
    assert not any("pick up the last thing" in p for p in elab_prompts)  # independent of diversification
    again = parse_checklist(dump_checklist(cl))
    assert again.build.calls[0].response == calls[0].response and again == cl


def test_builder_gives_up_on_a_filter_that_never_answers_and_keeps_everything():
    cl = _build(_scripted(["nope", "still nope"]))
    dim = cl.dimension("coherence")
    assert all(q.kept for _, q in dim.questions())
    assert any("filter of coherence" in f and "unfiltered" in f for f in cl.build.failures)


def test_filter_that_removes_everything_is_refused():
    cl = _build(_scripted([json.dumps({"keep": {"Logical Flow": [], "Relevance": [], "Continuity": []}})] * 2))
    assert all(q.kept for _, q in cl.dimension("coherence").questions())
    assert any("remove every question" in (c.error or "") for c in cl.build.calls)


def test_no_filter_and_2024_style():
    cl = _build(_scripted([]), filter=False)
    assert not any(c.stage == "filter" for c in cl.build.calls) and "by hand" in cl.build.filter
    seen: list[str] = []

    def respond(req: Request) -> str:
        seen.append(req.messages[-1].content)
        return f"- Does the response refer back to turn {len(seen)} of the other speaker?"

    cl24 = _build(ScriptedJudge(respond), style="2024")
    assert all("# Key component and its key question" in p for p in seen)
    assert [c.stage for c in cl24.build.calls] == ["augmentation-2024"] * 4  # one call per seed question
    grown = [q for _, q in cl24.dimension("coherence").questions() if q.origin == "elaboration"]
    assert [q.seed for q in grown] == ["coh-1", "coh-2", "coh-3", "coh-4"] and all(q.kept for q in grown)
