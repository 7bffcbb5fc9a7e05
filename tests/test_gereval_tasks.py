"""GER-Eval's task texts and human rubrics: what the task-only condition may see, and where human items come from."""

from __future__ import annotations

import re

import pytest

import assay
from assay.judges import ManagedJudge
from assay.judges.scripted import ScriptedJudge
from assay.rubrics.generate import GenerationSettings, generate_rubric

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
