"""Building a CheckEval checklist from seed questions: diversification, elaboration, remove-only filtering.

CheckEval 2025 (section 3.2, appendix C figures 4-6): seed questions are grown by two
independent augmentations, *diversification* (new angles on each sub-dimension) and
*elaboration* (narrower questions inside each seed), then an LLM filter removes questions that
fail alignment ('yes' must mean better), dimension consistency, redundancy or style. The
filter may only remove: this module checks every question the judge returns against the pool
and rejects (and records) anything new or rewritten. The 2024 variant (table 3: one
augmentation prompt per key question, filtering by people) is ``style="2024"``; ``filter=False``
skips the LLM filter so that a person edits the file instead.

Prompt builders and parsers are pure; :func:`build_checklist` sequences them around judge calls.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from pydantic import ConfigDict, Field

from assay.answers.parsing import extract_json
from assay.datasets import Dataset
from assay.datasets.catalog import DatasetInfo
from assay.errors import ConfigError
from assay.judges.ask import Read, ask
from assay.judges.base import Request, Response
from assay.judges.middleware import ManagedJudge
from assay.methods.base import Build, Built, Renamable, reasks_from_attempts
from assay.methods.checkeval.checklist import (
    BuildRecord,
    CallRecord,
    Checklist,
    ChecklistDimension,
    Question,
    SubDimension,
    checklist_hash,
    normalise_question,
)

FILTER_CRITERIA = ("alignment", "dimension consistency", "redundancy", "style")
# The elaboration prompt's worked example is from another task; a question copied from it is rejected.
EXAMPLE_QUESTIONS = (
    "Is every ingredient's amount stated with a unit such as grams or cups?",
    "Are oven temperatures given with a unit?",
    "Are cooking times given in minutes or hours?",
)
_EXAMPLES = {normalise_question(q) for q in (*EXAMPLE_QUESTIONS, "Are all quantities given with units?")}
# Words of the example's task (recipes). A weak judge rewrites the example instead of the seeds ("Are oven
# temperatures given in degrees Celsius?"); a generated question with one of these words is rejected as copied,
# unless the word is the checklist's own (it occurs in its seed questions or sub-dimension definitions).
EXAMPLE_WORDS = frozenset({"ingredient", "ingredients", "oven", "ovens", "temperature", "temperatures", "cooking",
                           "recipe", "recipes", "grams", "cups", "baking"})


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


def copied_example_words(question: str, own_text: str) -> list[str]:
    """The example-task words in a generated question that the checklist itself never uses (sorted)."""
    return sorted((_words(question) & EXAMPLE_WORDS) - _words(own_text))


# New questions per seed question in the CheckEval authors' released pools (summeval-paper and
# topical-chat-paper together; tests/test_checkeval_paper.py measures them): diversification 66 for 33
# seeds (2.0; SummEval 35/15, Topical-Chat 31/18), elaboration 130 for 33 seeds (3.9; SummEval 72/15,
# Topical-Chat 58/18). The augmentation prompts ask for this many per seed unless set otherwise.
PAPER_PER_SEED = {"diversification": 2, "elaboration": 4}


class BuildSettings(Renamable):
    """How a checklist is built; recorded in the output file.

    Attributes:
        style: ``2025`` (diversification + elaboration, figures 4-5) or ``2024`` (one
            augmentation prompt per key question, table 3; never LLM-filtered).
        filter: Run the LLM filter (figure 6). Off: all questions are kept and a person
            reviews the file (the 2024 paper's filtering by the authors).
        temperature: Sampling temperature of the generation calls.
        seed: Sampling seed.
        max_tokens: Room for one augmentation answer.
        filter_max_tokens: Room for the filter's JSON; default 40 tokens per pool question + 80.
        reasks: Follow-up turns after a malformed answer before the step is given up on (recorded);
            ``max_attempts`` (calls per step, ``reasks + 1``) is the deprecated name.
        diversification_per_seed: New questions asked for per seed question in diversification;
            default: as many as the authors' released pools hold per seed (``PAPER_PER_SEED``).
        elaboration_per_seed: Sub-questions asked for per seed question in elaboration; default: as
            the released pools hold.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    style: Literal["2025", "2024"] = "2025"
    filter: bool = True
    temperature: float = Field(default=0.7, ge=0.0)
    seed: int = 0
    max_tokens: int = Field(default=400, ge=16)
    filter_max_tokens: int | None = Field(default=None, ge=16)
    reasks: int = Field(default=2, ge=0, le=9)
    diversification_per_seed: int = Field(default=PAPER_PER_SEED["diversification"], ge=1, le=20)
    elaboration_per_seed: int = Field(default=PAPER_PER_SEED["elaboration"], ge=1, le=20)

    renamed: ClassVar[dict[str, tuple[str, Callable[[Any], Any]]]] = {"max_attempts": ("reasks", reasks_from_attempts)}


# -- prompts (pure) ---------------------------------------------------------------------------------


def benchmark_block(info: DatasetInfo) -> str:
    """What the prompts say about the benchmark: name, task, what is judged, its dimensions."""
    return (f"Name: {info.name}\nTask: {info.task}\nJudged: the {info.output_name} written for a {info.input_name}"
            + (f" (with a {info.context_name})" if info.context_name else "")
            + f"\nDimensions rated by people: {', '.join(info.default_dimensions)}")


def seed_layout(dim: ChecklistDimension, only: str | None = None) -> list[tuple[int, SubDimension, list[Question]]]:
    """The numbered sub-dimensions and their seed questions (``only``: one sub-dimension, numbered 1)."""
    out = []
    for sub in dim.sub_dimensions:
        if only is not None and sub.name != only:
            continue
        seeds = [q for q in sub.questions if q.origin == "seed" and q.kept]
        if seeds:
            out.append((len(out) + 1, sub, seeds))
    return out


def _numbered_seeds(layout: list[tuple[int, SubDimension, list[Question]]]) -> str:
    lines = []
    for i, sub, seeds in layout:
        lines.append(f"{i}. {sub.name}:" + (f" ({sub.definition})" if sub.definition else ""))
        lines.extend(f"{i}-{j}. {q.text}" for j, q in enumerate(seeds, start=1))
    return "\n".join(lines)


_CONSTRAINTS = (
    "- Each question can be answered with a plain 'yes' or 'no'.\n"
    "- A 'yes' means the {output} is better on this dimension.\n"
    "- Each question checks one thing only, about one dimension.\n")


def _count(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


def diversification_prompt(info: DatasetInfo, dim: ChecklistDimension,
                           per_seed: int = PAPER_PER_SEED["diversification"]) -> str:
    """Figure 4's structure: benchmark, dimension, sub-dimensions with seeds, conditions, constraints, format.

    ``per_seed``: how many new questions to write per seed (default: as the released pools hold).
    """
    layout = seed_layout(dim)
    return (
        "# Task overview\n"
        "You will be given 1) information about a benchmark, 2) the quality dimension it assesses, and 3) the "
        "dimension's sub-dimensions, each with seed questions.\n"
        "Write new yes/no questions that widen the coverage of each sub-dimension: questions that look at it "
        "from other angles or in other situations than its seed questions do. Every new question must meet "
        "the conditions and constraints below.\n\n"
        f"# 1) Benchmark\n{benchmark_block(info)}\n\n"
        f"# 2) Dimension\n{dim.name}: {dim.definition}\n\n"
        f"# 3) Sub-dimensions and seed questions\n{_numbered_seeds(layout)}\n\n"
        "# Conditions for good questions\n"
        "- It is about its sub-dimension and about the dimension as defined above, not another dimension.\n"
        "- It adds an angle its seed question does not cover; it is not a rewording.\n"
        "- It can be decided by reading the texts.\n"
        "- It does not repeat another question of the list.\n\n"
        "# Constraints\n" + _CONSTRAINTS.format(output=info.output_name) + "\n"
        "# Format\n"
        "Number each new question after the seed question it starts from: for seed 1-1 write 1-1-1, 1-1-2, "
        "and so on. One question per line, ending with '?'. "
        f"Write {_count(per_seed, 'new question')} per seed and nothing else.\n"
        "1-1-1. <new question>\n1-1-2. <new question>\n2-1-1. <new question>\n")


def elaboration_prompt(info: DatasetInfo, dim: ChecklistDimension, sub_name: str,
                       per_seed: int = PAPER_PER_SEED["elaboration"]) -> str:
    """Figure 5's structure for one sub-dimension: overview, task, constraints, conditions, format, example.

    ``per_seed``: how many sub-questions to write per seed (default: as the released pools hold;
    figure 5 says 3 to 10).
    """
    layout = seed_layout(dim, only=sub_name)
    if not layout:
        raise ConfigError(f"sub-dimension {sub_name!r} of {dim.name!r} has no seed question")
    sub = layout[0][1]
    return (
        "# Task overview\n"
        f"Your task is to write more detailed yes/no questions for judging the {dim.name} of a "
        f"{info.output_name}. {dim.name.capitalize()} means: {dim.definition} The questions are centred on "
        f"the sub-dimension '{sub.name}'" + (f": {sub.definition}" if sub.definition else ".") + "\n\n"
        "# Task\n"
        f"Break each seed question below into {_count(per_seed, 'narrower sub-question')} about {dim.name}: "
        "each one "
        "checks one specific part of what its seed question asks.\n"
        f"Benchmark:\n{benchmark_block(info)}\n\n"
        "# Constraints\n" + _CONSTRAINTS.format(output=info.output_name) + "\n"
        "# Conditions for good questions\n"
        "- It is narrower than its seed question and stays inside what the seed asks.\n"
        "- It can be decided by reading the texts.\n"
        "- It does not repeat another question of the list.\n\n"
        f"# Seed questions\n{_numbered_seeds(layout)}\n\n"
        "# Format\n"
        "Repeat each seed question with its number, then its sub-questions numbered after it, one per line, "
        "each ending with '?'. Write nothing else.\n"
        "1. <sub-dimension>:\n1-1. <seed question>\n1-1-1. <sub-question>\n1-1-2. <sub-question>\n"
        "1-2. <seed question>\n1-2-1. <sub-question>\n\n"
        "# Example (another task: judging the clarity of a recipe)\n"
        "1. Measurements:\n1-1. Are all quantities given with units?\n"
        + "".join(f"1-1-{k}. {q}\n" for k, q in enumerate(EXAMPLE_QUESTIONS, start=1)))


def augmentation_2024_prompt(info: DatasetInfo, dim: ChecklistDimension, sub: SubDimension, seed: Question) -> str:
    """Table 3 (CheckEval 2024): sub-questions for one key question, under five conditions."""
    return (
        f"Your task is to write questions that evaluate the {dim.name} of a {info.output_name} of a "
        f"{info.input_name}.\nBelow are the definition of {dim.name} and one key component of it with its key "
        "question. Write sub-questions for the key question.\n"
        "Every sub-question must:\n"
        "1. be answerable with 'Yes' or 'No';\n"
        "2. contain concepts of the key component;\n"
        "3. leave as little as possible to the rater's personal judgment;\n"
        "4. overlap as little as possible in meaning with the other sub-questions;\n"
        "5. be phrased so that 'Yes' is the positive answer.\n\n"
        f"# Definition\n{dim.name} - {dim.definition}\n\n"
        f"# Key component and its key question\n- {sub.name}: {seed.text}\n\n"
        "Write each sub-question on its own line, starting with '- ' and ending with '?'.\nSub-questions:\n")


def filter_prompt(info: DatasetInfo, dim: ChecklistDimension, pool: dict[str, list[str]]) -> str:
    """Figure 6's structure: criteria, benchmark context, the pool as JSON, JSON-only output, remove-only rules."""
    others = [d for d in info.default_dimensions if d != dim.name]
    return (
        "# Task overview\n"
        f"Below is a list of yes/no questions for judging the {dim.name} of a {info.output_name}, grouped by "
        "sub-dimension. Remove the questions that fail the criteria below and keep all the others exactly as "
        "they are written.\n\n"
        f"1) Alignment: a 'yes' must mean better {dim.name}. Remove questions where 'yes' means worse.\n"
        "2) Dimension consistency:\n"
        f"- Definition of {dim.name}: {dim.definition}\n"
        "- Remove questions that stray from this definition.\n"
        + (f"- Remove questions that belong more to another dimension ({', '.join(others)}) than to this one.\n"
           if others else "")
        + "3) Redundancy: remove questions that ask for the same or nearly the same information as another "
        "question of the list (even in other words), or that add nothing new; keep one of each such set.\n"
        "4) Style: remove questions with exaggerated wording, or about minor details that hardly affect "
        "overall quality.\n"
        f"5) Benchmark context\n{benchmark_block(info)}\n\n"
        "6) Sub-dimensions and questions\n"
        f"{json.dumps(pool, indent=1, ensure_ascii=False)}\n\n"
        "7) Output: JSON only, in this form:\n"
        '{"keep": {"<sub-dimension>": ["<kept question, copied exactly>", ...], ...}, '
        '"removed": [{"question": "<removed question, copied exactly>", "criterion": '
        '"alignment|dimension consistency|redundancy|style"}]}\n\n'
        "Important:\n"
        "- Do not change the wording of any question you keep.\n"
        "- Do not write new questions.\n"
        "- Keep every sub-dimension key; leave its list empty only if none of its questions is valid.\n"
        "- Only remove questions that fail a criterion above.\n")


def reask_note(reason: str) -> str:
    """The follow-up turn after a malformed answer (the original prompt stays first in the conversation)."""
    return (f"The previous answer could not be used: {reason}. "
            "Answer the request above again; follow the format exactly.")


# -- parsing generated questions (pure) ------------------------------------------------------------

_GEN_LINE = re.compile(r"^[\s*_#>•]*(\d+)\s*[-.]\s*(\d+)\s*[-.]\s*(\d+)\s*[.):]?[\s*_]*(.+)$")
_SEED_LINE = re.compile(r"^[\s*_#>•]*(\d+)\s*[-.]\s*(\d+)\s*[.):]?[\s*_]*(.+)$")
_HEAD_LINE = re.compile(r"^[\s*_#>•]*(\d+)\s*[.):][\s*_]*([^?]*):?[\s*_]*$")
_ITEM_LINE = re.compile(r"^[\s*_#>]*(?:[-*•]|\d+\s*[.)]|[a-z]\))[\s*_]*(.+)$", re.IGNORECASE)


@dataclass(frozen=True)
class Generated:
    """A question parsed from a generation, attached to a sub-dimension and a seed."""

    sub_dimension: str
    seed: str
    text: str


@dataclass
class GenerationParse:
    """What one generation answer gave: accepted questions and rejected lines with reasons."""

    accepted: list[Generated] = field(default_factory=list)
    rejected: list[dict[str, str]] = field(default_factory=list)


def _clean_question(text: str) -> str:
    text = re.sub(r"[*_`]+", "", text).strip().strip('"').strip()
    text = re.sub(r"^(?:q\d*|question)\s*[:.]\s*", "", text, flags=re.IGNORECASE)
    return " ".join(text.split())


def parse_generated(text: str, layout: list[tuple[int, SubDimension, list[Question]]],
                    known: set[str]) -> GenerationParse:
    """Read new questions from an augmentation answer and attach each to its sub-dimension and seed.

    ``i-j-k. question`` attaches to seed j of sub-dimension i. A bulleted or plainly numbered
    question attaches to the seed restated last (``i-j. seed``), or to the only seed when the
    prompt had one. Rejected, with the reason recorded: lines that are not questions, questions
    already in the pool (``known``, normalised) or given twice, numbers that name no seed,
    questions that cannot be attached, and questions copied from the prompt's example task.
    """
    seeds = {(i, j): (sub.name, q.id or "") for i, sub, qs in layout for j, q in enumerate(qs, start=1)}
    only = next(iter(seeds.values())) if len(seeds) == 1 else None
    heads = {normalise_question(sub.name) for _, sub, _ in layout}
    own_text = " ".join(f"{sub.name} {sub.definition} " + " ".join(q.text for q in qs) for _, sub, qs in layout)
    out = GenerationParse()
    seen = set(known)
    current: tuple[str, str] | None = only
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        target: tuple[str, str] | None
        m = _GEN_LINE.match(line)
        if m:
            key = (int(m.group(1)), int(m.group(2)))
            target, body = seeds.get(key), m.group(4)
            if target is None:
                out.rejected.append({"text": line, "reason": f"numbered {key[0]}-{key[1]}-…, but there is no seed "
                                                              f"{key[0]}-{key[1]}"})
                continue
        elif (m := _SEED_LINE.match(line)) is not None:
            current = seeds.get((int(m.group(1)), int(m.group(2))), current)
            continue  # a restated seed question
        elif (m := _HEAD_LINE.match(line)) is not None and normalise_question(m.group(2)) in heads:
            continue  # a sub-dimension heading
        else:
            m = _ITEM_LINE.match(line)
            body = m.group(1) if m else line
            target = current
        question = _clean_question(body)
        if not question.endswith("?"):
            out.rejected.append({"text": line, "reason": "not a question (no '?')"})
            continue
        if target is None:
            out.rejected.append({"text": line, "reason": "cannot tell which seed question it grew from"})
            continue
        if len(question.split()) < 4:
            out.rejected.append({"text": line, "reason": "too short to be a checklist question"})
            continue
        norm = normalise_question(question)
        copied = copied_example_words(question, own_text)
        if norm in _EXAMPLES or copied:
            why = f" (words: {', '.join(copied)})" if copied else ""
            out.rejected.append({"text": line, "reason": f"copies the prompt's example (another task){why}"})
            continue
        if norm in seen:
            out.rejected.append({"text": line, "reason": "repeats a question already in the pool"})
            continue
        seen.add(norm)
        out.accepted.append(Generated(target[0], target[1], question))
    return out


# -- the remove-only filter (pure) -------------------------------------------------------------------


@dataclass
class FilterOutcome:
    """The filter's decision after enforcing remove-only.

    Attributes:
        removed: Pool question id -> why it was removed.
        rejected: Items the judge returned that are not pool questions (new or rewritten), with why.
        notes: Keys the judge left out (their questions kept), unknown keys, moved questions.
    """

    removed: dict[str, str] = field(default_factory=dict)
    rejected: list[dict[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def read_filter_answer(text: str) -> tuple[dict[str, list[Any]] | None, list[Any], str]:
    """The kept map and the removed list from a filter answer, or None and why it is malformed.

    Accepts ``{"keep": {...}, "removed": [...]}`` and figure 6's bare ``{"<sub>": [...]}``.
    """
    parsed = extract_json(text)
    if not parsed.ok or not isinstance(parsed.value, dict):
        return None, [], "no JSON object in the answer"
    obj = parsed.value
    keep = obj.get("keep", obj) if isinstance(obj.get("keep"), dict) else obj
    removed = obj.get("removed", []) if keep is not obj else []
    if not keep or not all(isinstance(v, list) for k, v in keep.items() if k != "removed"):
        return None, [], "the JSON does not map sub-dimension names to lists of questions"
    keep = {k: v for k, v in keep.items() if k != "removed"}
    return keep, removed if isinstance(removed, list) else [], ""


def apply_filter(pool: dict[str, list[Question]], keep: dict[str, list[Any]], removed: list[Any]) -> FilterOutcome:
    """Enforce that the filter only removes.

    A returned question counts only if, after normalisation, it is a question of the pool;
    anything else is rejected and recorded, never added. Pool questions not returned are
    removed (with the judge's criterion when it named one). A sub-dimension the answer leaves
    out entirely keeps all its questions (the answer is incomplete, not a decision); an empty
    list removes them, which the paper allows when none is valid.
    """
    out = FilterOutcome()
    index: dict[str, tuple[str, Question]] = {}
    for sub, qs in pool.items():
        for q in qs:
            index.setdefault(normalise_question(q.text), (sub, q))
    kept: set[str] = set()
    for key, items in keep.items():
        if key not in pool:
            out.notes.append(f"the answer has a sub-dimension {key!r} that the pool does not have")
        for item in items:
            hit = index.get(normalise_question(item)) if isinstance(item, str) else None
            if hit is None:
                out.rejected.append({"text": str(item), "reason": "new or rewritten question: not in the pool "
                                                                  "(the filter may only remove)"})
                continue
            if hit[0] != key and key in pool:
                out.notes.append(f"{hit[1].id} was listed under {key!r}; it stays in {hit[0]!r}")
            kept.add(hit[1].id or "")
    for sub in pool:
        if sub not in keep:
            out.notes.append(f"the answer has no key for {sub!r}: its questions are kept unfiltered")
            kept.update(q.id or "" for q in pool[sub])
    criteria = {}
    for item in removed:
        if isinstance(item, dict) and isinstance(item.get("question"), str):
            crit = str(item.get("criterion", "")).strip().lower()
            criteria[normalise_question(item["question"])] = crit if crit in FILTER_CRITERIA else ""
    for qs in pool.values():
        for q in qs:
            if q.id not in kept:
                crit = criteria.get(normalise_question(q.text))
                out.removed[q.id or ""] = f"LLM filter: {crit}" if crit else "LLM filter (no criterion given)"
    return out


# -- the async builder --------------------------------------------------------------------------------


@dataclass
class _Step:
    """One generation step with bounded re-asking."""

    stage: str
    dimension: str
    sub_dimension: str | None
    prompt: str
    max_tokens: int


class Builder:
    """Sequences prompts, judge calls and parsers into a checklist; every call is recorded."""

    def __init__(self, info: DatasetInfo, judge: ManagedJudge, settings: BuildSettings) -> None:
        self.info, self.judge, self.settings = info, judge, settings
        self.calls: list[CallRecord] = []
        self.failures: list[str] = []
        self.notes: list[str] = []

    async def run(self, step: _Step, parse: Any) -> Any:
        """Ask through :func:`~assay.judges.ask.ask` (bounded re-asks in follow-up turns); record every call.

        ``parse(text)`` returns ``(result, accepted_count, rejected, error)``; an error means re-ask.
        """
        s = self.settings

        def read(response: Response, _: Request) -> Read[Any]:
            result, accepted, rejected, error = parse(response.text)
            return Read(result, error or None, {"accepted": accepted, "rejected": rejected})

        request = Request.chat(step.prompt, temperature=s.temperature, seed=s.seed, max_tokens=step.max_tokens)
        asked = await ask(self.judge, request, stage=f"build-{step.stage}", read=read, reasks=s.reasks,
                          reask_message=reask_note)
        for attempt, call in enumerate(asked.calls, start=1):
            self.calls.append(CallRecord(stage=step.stage, dimension=step.dimension, sub_dimension=step.sub_dimension,
                                         attempt=attempt, prompt_sha256=call.prompt_sha256, response=call.answer,
                                         accepted=call.detail["accepted"], rejected=call.detail["rejected"],
                                         error=call.error))
        if asked.ok:
            return asked.value
        where = step.dimension + (f"/{step.sub_dimension}" if step.sub_dimension else "")
        self.failures.append(f"{step.stage} of {where}: still unusable after {len(asked.calls)} "
                             f"attempts ({asked.error})")
        return None

    async def augment(self, dim: ChecklistDimension) -> tuple[list[Generated], list[Generated]]:
        """Diversification and elaboration, each prompted from the seed questions only (never one on the other).

        A generated question that repeats one already taken (a seed, or one from an earlier call) is
        rejected and recorded with that call.
        """
        known = {normalise_question(q.text) for _, q in dim.questions()}

        def parser(layout: list[tuple[int, SubDimension, list[Question]]]) -> Any:
            def parse(text: str) -> tuple[list[Generated], int, list[dict[str, str]], str]:
                got = parse_generated(text, layout, known)
                known.update(normalise_question(g.text) for g in got.accepted)  # no duplicates across calls
                return got.accepted, len(got.accepted), got.rejected, "" if got.accepted else "no usable question"
            return parse

        mt = self.settings.max_tokens
        if self.settings.style == "2024":
            elab: list[Generated] = []
            for i, sub, seeds in seed_layout(dim):
                for seed in seeds:
                    layout = [(i, sub, [seed])]
                    step = _Step("augmentation-2024", dim.name, sub.name,
                                 augmentation_2024_prompt(self.info, dim, sub, seed), mt)
                    elab += await self.run(step, parser(layout)) or []
            return [], elab
        div = await self.run(_Step("diversification", dim.name, None, diversification_prompt(
            self.info, dim, self.settings.diversification_per_seed), mt),
                             parser(seed_layout(dim))) or []
        elab = []
        for _, sub, _seeds in seed_layout(dim):
            step = _Step("elaboration", dim.name, sub.name, elaboration_prompt(
                self.info, dim, sub.name, self.settings.elaboration_per_seed), mt)
            elab += await self.run(step, parser(seed_layout(dim, only=sub.name))) or []
        return div, elab

    async def filter(self, dim: ChecklistDimension) -> FilterOutcome | None:
        """Figure 6's filter on the pool of one dimension, remove-only enforced."""
        pool = {sub.name: [q for q in sub.questions if q.kept] for sub in dim.sub_dimensions}
        pool = {k: v for k, v in pool.items() if v}
        size = sum(len(v) for v in pool.values())
        step = _Step("filter", dim.name, None,
                     filter_prompt(self.info, dim, {k: [q.text for q in v] for k, v in pool.items()}),
                     self.settings.filter_max_tokens or min(3000, 40 * size + 80))

        def parse(text: str) -> tuple[FilterOutcome | None, int, list[dict[str, str]], str]:
            keep, removed, error = read_filter_answer(text)
            if keep is None:
                return None, 0, [], error
            outcome = apply_filter(pool, keep, removed)
            if len(outcome.removed) == size:
                return None, 0, outcome.rejected, "the answer would remove every question of the dimension"
            return outcome, size - len(outcome.removed), outcome.rejected, ""

        return await self.run(step, parse)


def grow(dim: ChecklistDimension, div: list[Generated], elab: list[Generated]) -> ChecklistDimension:
    """The dimension with generated questions placed after the seed they grew from (ids ``<seed>.d<n>``/``.e<n>``)."""
    by_seed: dict[str, list[Question]] = {}
    for origin, items, tag in (("diversification", div, "d"), ("elaboration", elab, "e")):
        for g in items:
            lst = by_seed.setdefault(g.seed, [])
            n = sum(1 for q in lst if q.origin == origin) + 1
            lst.append(Question(id=f"{g.seed}.{tag}{n}", text=g.text, origin=origin, seed=g.seed))  # type: ignore[arg-type]
    subs = []
    for sub in dim.sub_dimensions:
        qs: list[Question] = []
        for q in sub.questions:
            qs.append(q)
            grown = by_seed.get(q.id or "", [])
            qs += sorted(grown, key=lambda x: x.origin)  # diversification first, then elaboration (stable)
        subs.append(sub.model_copy(update={"questions": qs}))
    return dim.model_copy(update={"sub_dimensions": subs})


def apply_outcome(dim: ChecklistDimension, outcome: FilterOutcome) -> ChecklistDimension:
    """Mark the removed questions (kept: false, with the reason); nothing is added or reworded."""
    subs = []
    for sub in dim.sub_dimensions:
        qs = [q.model_copy(update={"kept": False, "removed_because": outcome.removed[q.id or ""]})
              if q.id in outcome.removed else q for q in sub.questions]
        subs.append(sub.model_copy(update={"questions": qs}))
    return dim.model_copy(update={"sub_dimensions": subs})


def seeds_only(dim: ChecklistDimension) -> ChecklistDimension:
    """A dimension's seed and manual questions (kept ones): the starting pool of a build."""
    subs = []
    for sub in dim.sub_dimensions:
        qs = [q for q in sub.questions if q.kept and q.origin in ("seed", "manual")]
        if qs:
            subs.append(sub.model_copy(update={"questions": qs}))
    if not subs:
        raise ConfigError(f"dimension {dim.name!r} has no seed question to build from")
    return dim.model_copy(update={"sub_dimensions": subs})


async def build_checklist(seeds: Checklist, info: DatasetInfo, judge: ManagedJudge, settings: BuildSettings,
                          dimensions: list[str] | None = None, name: str | None = None) -> Checklist:
    """Grow and filter a seed checklist with a judge; the result records how it was made.

    Args:
        seeds: The checklist whose seed (and manual) questions are the starting point.
        info: The dataset the checklist is for (its task and dimensions go into the prompts).
        judge: The managed judge that writes and filters questions.
        settings: Generation settings.
        dimensions: The dimensions to build (default: all of the seed checklist's).
        name: Name of the new checklist.
    """
    from assay._version import __version__

    builder = Builder(info, judge, settings)
    dims = [seeds.dimension(d) for d in dimensions] if dimensions else list(seeds.dimensions)
    built = []
    filtered = settings.filter and settings.style == "2025"
    for dim in dims:
        base = seeds_only(dim)
        div, elab = await builder.augment(base)
        grown = grow(base, div, elab)
        if filtered:
            outcome = await builder.filter(grown)
            if outcome is None:
                builder.failures.append(f"filter of {dim.name}: no usable answer, so its questions are kept "
                                        "unfiltered; review the file by hand")
            else:
                grown = apply_outcome(grown, outcome)
                builder.calls[-1].notes = outcome.notes
        built.append(grown)
    record = BuildRecord(
        judge=judge.identity.model_dump(mode="json"), settings=settings.model_dump(mode="json"),
        seeds_from=f"{seeds.name} (sha256 {checklist_hash(seeds)})",
        created_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"), assay_version=__version__,
        filter="llm (remove-only enforced)" if filtered else "none: review and edit this file by hand "
        "(set kept: false with removed_because, or add questions with origin: manual)",
        calls=builder.calls, failures=builder.failures, notes=builder.notes,
        usage={k: v.model_dump() for k, v in judge.ledger.by_stage.items()})
    return Checklist(name=name or f"{seeds.name}-built", source=f"built by assay from {seeds.name}; seeds: "
                     f"{seeds.source}", description=f"{seeds.description} Grown with CheckEval's augmentation"
                     + (" and filtering." if filtered else " (unfiltered)."),
                     dataset=info.name, dimensions=built, build=record)


class ChecklistOptions(BuildSettings):
    """Options of ``checklist``: the build settings plus the seed checklist and the new checklist's name.

    Attributes:
        seeds: A shipped checklist name or a YAML file; default: the dataset's shipped checklist.
        name: The new checklist's name; default: ``<seeds>-built``.
    """

    seeds: str | None = None
    name: str | None = None


def plan_checklist(dataset: Dataset, dimensions: list[str] | None, opts: ChecklistOptions) -> Build:
    """CheckEval's augmentation and filtering of the seed checklist; the text must load back before it is kept."""
    from assay.methods.checkeval.checklist import checklist_hash, dump_checklist, parse_checklist
    from assay.methods.checkeval.shipped import default_checklist, load_checklist

    seeds = load_checklist(opts.seeds or default_checklist(dataset.info))
    for d in dimensions or []:
        seeds.dimension(d)  # unknown names fail here
    settings = BuildSettings(**opts.model_dump(exclude={"seeds", "name"}))

    async def build(judge: ManagedJudge) -> Built:
        built = await build_checklist(seeds, dataset.info, judge, settings, dimensions or None, opts.name)
        text = dump_checklist(built)
        parse_checklist(text, f"the checklist built from {seeds.name}")  # what is written must load back
        record = built.build
        return Built(built, text, checklist_hash(built), list(record.failures) if record else [],
                     list(record.notes) if record else [])

    return build
