"""The CheckEval authors' released question pools as checklists (``summeval-paper``, ``topical-chat-paper``).

The authors (Lee et al. 2025, github.com/yukyunglee/CheckEval, MIT) released per dimension three files:
the seed questions, and the pools that diversification and elaboration grew from them, each file
repeating the seed questions first. They did not release which questions their LLM filter removed, so
the paper's final lists (SummEval 111, Topical-Chat 105 questions) cannot be rebuilt: these checklists
are the pre-filter pools, every question kept, each with its stage (``origin``). The files ship byte
for byte in ``assay/methods/checkeval/checklists/paper/`` with their sha256 in ``provenance.yaml``.

Reading follows the authors' own code and the data README: a sub-dimension's questions are one
string, split at every '?'. A question of a diversification or elaboration file that repeats a seed
question (ignoring case and punctuation: one file adds an Oxford comma) is that seed, not a new
question. A grown question is linked to the nearest seed question before it in its file; where a
file lists several seeds of a sub-dimension together before the grown questions (diversification),
that link is positional, not stated by the authors.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import yaml

from assay.methods.checkeval.checklist import (
    Checklist,
    ChecklistDimension,
    Origin,
    Question,
    SubDimension,
    normalise_question,
)

PAPER_DIR = "checklists/paper"
GROWN_STAGES: tuple[Origin, ...] = ("diversification", "elaboration")
SOURCE = ("CheckEval (Lee et al. 2025): the authors' released question pools, github.com/yukyunglee/CheckEval "
          "commit 610c7e0, prompt/{folder}/ (MIT; files and sha256 in assay/methods/checkeval/checklists/paper/"
          "provenance.yaml). Pre-filter: seed + diversification + elaboration, all kept; the paper's filtered "
          "final list is not published.")


@dataclass(frozen=True)
class PaperPool:
    """Where a released pool lives and what it is for."""

    folder: str
    key: str  # the key under `definition:` in the files
    dataset: str
    dimensions: tuple[str, ...]


PAPER_POOLS = {
    "summeval-paper": PaperPool("summeval_questions", "summeval", "summeval",
                                ("coherence", "consistency", "fluency", "relevance")),
    "topical-chat-paper": PaperPool("topical_chat_questions", "topical_chat", "topical-chat",
                                    ("naturalness", "coherence", "engagingness", "groundedness")),
}


def split_questions(text: Any) -> list[str]:
    """A sub-dimension's questions: the released string split at every '?' (as the authors' code and
    the data README count them), each with its '?' back and its spacing collapsed."""
    return [" ".join(part.split()) + "?" for part in str(text).split("?") if part.strip()]


def _key(question: str) -> str:
    """A question's identity for spotting a repeated seed: normalised, punctuation ignored."""
    return re.sub(r"[^\w\s]", "", normalise_question(question))


def released_file(pool: PaperPool, dimension: str, stage: str) -> dict[str, Any]:
    """One released file (``<dimension>_<stage>.yaml``) as YAML data."""
    ref = resources.files("assay.methods.checkeval").joinpath(f"{PAPER_DIR}/{pool.folder}/{dimension}_{stage}.yaml")
    data = yaml.safe_load(ref.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not isinstance(data.get("sub_aspect"), dict):
        raise ValueError(f"{ref}: not a released CheckEval question file (no `sub_aspect`)")
    return data


def _grown(seeds: list[Question], released: list[str], stage: Origin, prefix: str) -> list[Question]:
    """The new questions of one stage's sub-dimension, each linked to the nearest seed before it."""
    by_key = {_key(q.text): q for q in seeds}
    current = seeds[0]
    out: list[Question] = []
    for text in released:
        seed = by_key.get(_key(text))
        if seed is not None:
            current = seed
            continue
        out.append(Question(id=f"{prefix}{stage[0]}{len(out) + 1}", text=text, origin=stage, seed=current.id))
    return out


def _dimension(pool: PaperPool, name: str) -> ChecklistDimension:
    seed_file = released_file(pool, name, "seed")
    stages = {stage: released_file(pool, name, stage)["sub_aspect"] for stage in GROWN_STAGES}
    subs = []
    for si, (sub, text) in enumerate(seed_file["sub_aspect"].items(), start=1):
        prefix = f"{name}-{si}-"
        seeds = [Question(id=f"{prefix}s{k}", text=q) for k, q in enumerate(split_questions(text), start=1)]
        grown = [q for stage, subs_of in stages.items()
                 for q in _grown(seeds, split_questions(subs_of.get(sub, "")), stage, prefix)]
        subs.append(SubDimension(name=sub, questions=seeds + grown))
    definition = " ".join(str(seed_file["definition"][pool.key]).split())
    return ChecklistDimension(name=name, definition=definition, sub_dimensions=subs)


@lru_cache(maxsize=len(PAPER_POOLS))
def _paper_checklist(name: str) -> Checklist:
    pool = PAPER_POOLS[name]
    return Checklist(
        name=name, dataset=pool.dataset, source=SOURCE.format(folder=pool.folder),
        description=(f"The CheckEval authors' question pool for {pool.dataset} before their LLM filter: seed, "
                     "diversification and elaboration questions per sub-dimension, all kept. Grown questions "
                     "name the nearest seed before them in the released file (positional where a file lists "
                     "several seeds together)."),
        dimensions=[_dimension(pool, d) for d in pool.dimensions])


def paper_checklist(name: str) -> Checklist:
    """The released pool ``name`` (``summeval-paper`` or ``topical-chat-paper``) as a checklist (a fresh copy)."""
    return _paper_checklist(name).model_copy(deep=True)
