"""Rubric statistics (GER-Eval appendix A.3.3): breadth, uniqueness and alignment with a human rubric.

- **Breadth**: the number of criteria.
- **Unique (%)**: the share left after merging near-duplicates: criteria whose description
  embeddings have cosine similarity at or above a threshold are merged (connected components, so
  the result does not depend on the order of the criteria).
- **Align. (%)**: the share of generated criteria that an LLM tagger maps onto at least one item
  of the human rubric; a criterion tagged only "other" is unseen. Tags are recorded.

The pure parts (clustering, tag validation, prompt) are separate from the tagging driver.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from assay.judges.base import Request
from assay.methods.gereval.reprompt import DEFAULT_REASKS, ask_json
from assay.methods.gereval.rubric import Criterion, Rubric

OTHER = "other"
# The paper's threshold is not legible in our copy; 0.8 suits all-MiniLM-L6-v2, whose cosine
# similarities run lower than jina-embeddings-v3's. Configurable everywhere.
DEFAULT_THRESHOLD = 0.8


def cosine_matrix(embeddings: np.ndarray) -> np.ndarray:
    """Pairwise cosine similarities of the rows (normalised here, so raw vectors are fine)."""
    x = np.asarray(embeddings, dtype=np.float64)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    x = x / np.where(norms == 0, 1.0, norms)
    return x @ x.T


def merge_groups(embeddings: np.ndarray, threshold: float = DEFAULT_THRESHOLD) -> list[list[int]]:
    """Groups of near-duplicate rows: connected components of "cosine >= threshold".

    Returns:
        The groups as lists of row indices, each sorted, ordered by their first index.
    """
    n = len(embeddings)
    if n == 0:
        return []
    sim = cosine_matrix(embeddings)
    parent = list(range(n))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(n):
        for j in range(i + 1, n):
            if sim[i, j] >= threshold:
                parent[find(j)] = find(i)
    groups: dict[int, list[int]] = {}
    for i in range(n):
        groups.setdefault(find(i), []).append(i)
    return sorted(groups.values(), key=lambda g: g[0])


def uniqueness(embeddings: np.ndarray, threshold: float = DEFAULT_THRESHOLD) -> float | None:
    """Share of criteria left after merging near-duplicates (None for an empty rubric)."""
    n = len(embeddings)
    return len(merge_groups(embeddings, threshold)) / n if n else None


# -- alignment tagging ---------------------------------------------------------------------------

def build_tag_prompt(task: str, human: Rubric, criterion: Criterion) -> str:
    """Ask which human rubric items (the teacher) a generated criterion (the student) covers."""
    items = "\n".join(f"- {c.name}: {c.description}" for c in human.criteria)
    names = ", ".join(f'"{c.name}"' for c in human.criteria)
    return "\n".join([
        "You compare an evaluation criterion written by a model with the rubric human raters used.",
        "", "Task description:", task.strip(), "",
        "Human rubric items:", items, "",
        "Criterion to tag:",
        f"- {criterion.name}: {criterion.description}", "",
        "Tag the criterion with every human rubric item whose meaning it substantially covers. If it covers "
        f'none of them, tag it "{OTHER}" (a new aspect).',
        "Reply with one JSON object and nothing else, in this format:",
        '{"tags": ["..."]}',
        f'where each tag is one of {names} or "{OTHER}".',
    ])


def _fold(text: str) -> str:
    return " ".join(str(text).replace("_", " ").replace("-", " ").split()).casefold()


def validate_tags(obj: Any, human_names: list[str]) -> list[str]:
    """The tags of a tagging answer, as human item names (or ``["other"]``).

    Raises:
        ValueError: No tags, an unknown tag, or "other" mixed with human items.
    """
    tags = obj.get("tags") if isinstance(obj, dict) else None
    if isinstance(tags, str):
        tags = [tags]
    if not isinstance(tags, list) or not tags or not all(isinstance(t, str) for t in tags):
        raise ValueError('expected an object {"tags": [...]} with at least one tag')
    by_fold = {_fold(n): n for n in human_names}
    out: list[str] = []
    for t in tags:
        if _fold(t) == OTHER:
            name = OTHER
        elif _fold(t) in by_fold:
            name = by_fold[_fold(t)]
        else:
            raise ValueError(f'unknown tag {t!r}: use only {", ".join(human_names)} or "{OTHER}"')
        if name not in out:
            out.append(name)
    if OTHER in out and len(out) > 1:
        raise ValueError(f'"{OTHER}" cannot be combined with human rubric items')
    return out


@dataclass
class TagResult:
    """The tags of one criterion (None when every answer was invalid) and the raw attempts."""

    criterion: str
    tags: list[str] | None
    attempts: list[dict[str, Any]] = field(default_factory=list)

    @property
    def aligned(self) -> bool | None:
        return None if self.tags is None else any(t != OTHER for t in self.tags)


async def tag_rubric(rubric: Rubric, human: Rubric, judge: Any, *, task: str,
                     reasks: int = DEFAULT_REASKS, max_tokens: int = 128) -> list[TagResult]:
    """Tag every criterion of ``rubric`` against ``human`` with the judge at temperature 0."""
    names = [c.name for c in human.criteria]

    async def one(c: Criterion) -> TagResult:
        request = Request.chat(build_tag_prompt(task, human, c), temperature=0.0, max_tokens=max_tokens,
                               json_mode=True)
        asked = await ask_json(judge, request, lambda o: validate_tags(o, names), stage="tag", reasks=reasks)
        return TagResult(c.name, asked.value, asked.trace())

    return list(await asyncio.gather(*(one(c) for c in rubric.criteria)))


def alignment(tags: list[TagResult]) -> float | None:
    """Share of tagged criteria mapped onto at least one human item (untaggable ones left out)."""
    known = [t.aligned for t in tags if t.aligned is not None]
    return sum(known) / len(known) if known else None


def rubric_stats(rubric: Rubric, embeddings: np.ndarray | None, threshold: float,
                 tags: list[TagResult] | None = None) -> dict[str, Any]:
    """Breadth, uniqueness (with the merged groups) and alignment (with the tags) of one rubric.

    Without embeddings, uniqueness is not computed: ``unique`` and ``merged`` are None.
    """
    names = [c.name for c in rubric.criteria]
    out: dict[str, Any] = {"rubric": rubric.label, "breadth": len(names), "threshold": threshold,
                           "unique": None, "merged": None}
    if embeddings is not None:
        groups = merge_groups(embeddings, threshold)
        out["unique"] = len(groups) / len(names) if names else None
        out["merged"] = [[names[i] for i in g] for g in groups if len(g) > 1]
    if tags is not None:
        out["align"] = alignment(tags)
        out["tags"] = {t.criterion: t.tags for t in tags}
        out["untagged"] = [t.criterion for t in tags if t.tags is None]
        out["tag_attempts"] = {t.criterion: t.attempts for t in tags}
    return out
