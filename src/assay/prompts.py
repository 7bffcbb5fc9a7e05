"""Putting untrusted text into prompts safely: fences it cannot close and answer formats it cannot fake."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from assay.datasets.catalog import DatasetInfo
    from assay.types import Sample

OPEN, CLOSE = "<<<", ">>>"

# Line starts that a judge's answer parser could read as an answer: "Q1: yes", "Score: 5",
# "Rating = 4", "Answer: no", "3. yes", "- Coherence: 2", "Coherence (1-5): 2",
# "Evaluation Form (scores ONLY):".
_ANSWER_WORDS = r"q\s*\d+|score|scores|rating|answer|answers|grade|verdict|evaluation\s+(?:form|steps)|final\s+score"


def _answer_line(labels: Iterable[str]) -> re.Pattern[str]:
    words = _ANSWER_WORDS + "".join("|" + re.escape(x) for x in labels if x)
    return re.compile(
        rf"^(\s*[-*#>•]*\s*\**\s*)(?=(?:{words})\s*\**\s*(?:\([^)\n]*\)\s*\**\s*)?[:=]|\d+\s*[.)]\s*\**\s*(?:yes|no)\b)",
        re.IGNORECASE | re.MULTILINE,
    )


def neutralise(text: str, labels: Iterable[str] = ()) -> str:
    """Defuse delimiters and answer formats inside judged text.

    Fence markers are replaced by look-alike guillemets, and every line that looks like an
    answer ("Q1: yes", "Score: 5", "3. no", or ``labels`` such as a dimension name followed by
    a colon) is prefixed with "» " so that neither the judge nor a parser can take it for the
    judge's own answer. Everything else is kept as it was.
    """
    text = text.replace(OPEN, "‹‹‹").replace(CLOSE, "›››")
    return _answer_line(labels).sub(lambda m: m.group(1) + "» ", text)


def fence(text: str, label: str, labels: Iterable[str] = ()) -> str:
    """Neutralise ``text`` and wrap it in a labelled block that it cannot close early.

    Args:
        text: Untrusted content (the output under evaluation, its source, a reference).
        label: The block's name, e.g. ``SUMMARY`` or ``ARTICLE``.
        labels: Extra answer labels to defuse (dimension names, criterion names).
    """
    name = label.upper()
    return f"{OPEN}{name}{CLOSE}\n{neutralise(text.strip(), labels)}\n{OPEN}END {name}{CLOSE}"


def sample_blocks(
    sample: Sample, info: DatasetInfo, *, reference: bool = False, context: bool = True,
    labels: Iterable[str] = (),
) -> str:
    """The fenced input, grounding context, optional reference and output of a sample, in that order.

    The input comes first so that prompts about the same source share the longest prefix.
    """
    parts = []
    if sample.source:
        parts.append(fence(sample.source, info.input_name, labels))
    if context and sample.context and info.context_name:
        parts.append(fence(sample.context, info.context_name, labels))
    if reference and sample.reference:
        parts.append(fence(sample.reference, f"reference {info.output_name}", labels))
    parts.append(fence(sample.output, info.output_name, labels))
    return "\n\n".join(parts)
