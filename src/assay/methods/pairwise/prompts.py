"""Pairwise prompts (pure): assay's own (the dimension's definition, both outputs fenced, reasoning then a
verdict) and the MT-Bench pairwise prompt (Zheng et al. 2023, "Judging LLM-as-a-Judge with MT-Bench and Chatbot
Arena", Figure 5; FastChat's ``judge_prompts.jsonl``, ``pair-v2``)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from assay.answers.fence import MATERIAL_NOTE, fence
from assay.datasets.catalog import DatasetInfo
from assay.types import Dimension, Sample

# A verdict look-alike inside judged text ("[[A]]") is defused: the "» " mark makes every reader skip its line
# (assay.answers.echo.own_answer) and the single brackets are no verdict form.
_VERDICT_LOOKALIKE = re.compile(r"\[\[\s*([A-Za-z]{1,3})\s*\]\]")

#: The MT-Bench pairwise judge's instruction (system message), from the paper's Figure 5.
MTBENCH_SYSTEM = (
    "Please act as an impartial judge and evaluate the quality of the responses provided by two AI assistants "
    "to the user question displayed below. You should choose the assistant that follows the user's instructions "
    "and answers the user's question better. Your evaluation should consider factors such as the helpfulness, "
    "relevance, accuracy, depth, creativity, and level of detail of their responses. Begin your evaluation by "
    "comparing the two responses and provide a short explanation. Avoid any position biases and ensure that the "
    "order in which the responses were presented does not influence your decision. Do not allow the length of "
    "the responses to influence your evaluation. Do not favor certain names of the assistants. Be as objective "
    "as possible. After providing your explanation, output your final verdict by strictly following this format: "
    '"[[A]]" if assistant A is better, "[[B]]" if assistant B is better, and "[[C]]" for a tie.'
)


@dataclass(frozen=True)
class Side:
    """One output of a pair as a prompt shows it."""

    output: str
    label: str


def defuse(text: str) -> str:
    """``text`` with every bracketed verdict look-alike (``[[A]]``, ``[[tie]]``) turned into a marked single-bracket
    form, so that judged text can neither dictate a verdict nor be read as one."""
    return _VERDICT_LOOKALIKE.sub(lambda m: f"» [{m.group(1)}]", text)


def _labels(info: DatasetInfo) -> list[str]:
    return [d.name for d in info.dimensions]


def _context_blocks(pair: Sample, info: DatasetInfo, reference: bool) -> list[str]:
    labels = _labels(info)
    parts = []
    if pair.source:
        parts.append(fence(defuse(pair.source), info.input_name, labels))
    if pair.context and info.context_name:
        parts.append(fence(defuse(pair.context), info.context_name, labels))
    if reference and pair.reference:
        parts.append(fence(defuse(pair.reference), f"reference {info.output_name}", labels))
    return parts


def build_prompt(pair: Sample, first: Side, second: Side, dimension: Dimension, info: DatasetInfo, *,
                 steps: str | None = None, reference: bool = True, json: bool = False) -> str:
    """assay's pairwise prompt: the input (and grounding, and the reference where asked and known), the two
    outputs fenced as ``<output> A`` and ``<output> B`` in the order given, the dimension and its definition,
    optional evaluation steps, then the answer format: reasoning first, the verdict on the last line."""
    name = dimension.name.replace("_", " ")
    out = info.output_name
    labels = _labels(info)
    blocks = [*_context_blocks(pair, info, reference),
              fence(defuse(first.output), f"{out} A", labels), fence(defuse(second.output), f"{out} B", labels)]
    steps_part = f"Evaluation steps:\n{steps.strip()}\n\n" if steps else ""
    return (
        f"You are comparing two {out}s written for the same {info.input_name}.\n"
        f"Task: {info.task}\n\n"
        f"{MATERIAL_NOTE}\n\n"
        + "\n\n".join(blocks) + "\n\n"
        f"Criterion: {name}. {dimension.definition}\n\n"
        f"{steps_part}"
        f"Which {out} is better on {name} alone? The order in which they are shown and their length must not "
        f"influence you. "
        + (f"Answer with a JSON object: first \"reasoning\", a few sentences comparing them, then \"verdict\": "
           f"\"A\" if {out} A is better, \"B\" if {out} B is better, \"C\" for a tie." if json else
           f"First explain your reasoning in a few sentences. Then give your verdict on the last line, "
           f"exactly one of: [[A]] if {out} A is better, [[B]] if {out} B is better, [[C]] for a tie.")
    )


def build_mtbench_prompt(pair: Sample, first: Side, second: Side, info: DatasetInfo) -> str:
    """The MT-Bench pairwise user message (the question, then each assistant's answer between its start and end
    lines), with every text fenced as in all of assay's prompts; the instruction is :data:`MTBENCH_SYSTEM`."""
    labels = _labels(info)
    question = "\n\n".join(_context_blocks(pair, info, reference=False)) or "(none)"
    return (
        f"{MATERIAL_NOTE}\n\n"
        f"[User Question]\n{question}\n\n"
        f"[The Start of Assistant A's Answer]\n{fence(defuse(first.output), 'answer A', labels)}\n"
        f"[The End of Assistant A's Answer]\n\n"
        f"[The Start of Assistant B's Answer]\n{fence(defuse(second.output), 'answer B', labels)}\n"
        f"[The End of Assistant B's Answer]"
    )
