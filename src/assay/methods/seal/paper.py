"""SEAL's paper preset, pure parts: the paper's stage-1 prompts (Table 21, verbatim) and their answers.

``--preset paper`` splits sentences with the judge and extracts the source, reference and output
facts in one call per (source, reference, output) triple, as the paper's Table 21 does; assay's default
splits with pysbd and extracts each text's facts in a call of its own (shared across a document's
outputs). The prompt texts live in ``assay/methods/seal/paper_prompts.yaml`` with their provenance;
this module appends the fenced texts, and reads and validates the answers.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import yaml

from assay.answers.fence import MATERIAL_NOTE, fence
from assay.answers.parsing import Parsed
from assay.methods.seal.units import FACT_PREFIX, json_list, parse_split, validate_facts

#: What ``--preset paper`` sets, unless the option is given explicitly.
PAPER_PRESET: dict[str, Any] = {"sentence_splitter": "llm", "decomposition": "joint", "temperature": 0.0}

#: Fence labels: the nouns the paper's prompts use for the texts.
LABELS = {"source": "source text", "reference": "reference text", "output": "summary"}

#: Said in place of the reference when the sample has none distinct from its source (assay's addition).
NO_REFERENCE = ('No reference text is given for this item: output an empty list for "reference text monadic '
                'facts".')


@dataclass(frozen=True)
class PaperPrompts:
    """The paper's Table 21 prompts and answer keys, with the file's text (stored and hashed in the run)."""

    split: str
    split_key: str
    facts: str
    fact_keys: dict[str, str]
    hashes: dict[str, str]
    source: str
    file_text: str


def normalised_sha256(text: str) -> str:
    """sha256 of ``text`` with its whitespace collapsed: the same however the paper's lines are broken."""
    return hashlib.sha256(" ".join(text.split()).encode("utf-8")).hexdigest()


@cache
def paper_prompts() -> PaperPrompts:
    """Load the shipped prompts and check them against the hashes recorded beside them.

    Raises:
        ValueError: The file was edited without updating its recorded hashes.
    """
    text = (resources.files("assay.methods.seal") / "paper_prompts.yaml").read_text(encoding="utf-8")
    raw = yaml.safe_load(text)
    for part in ("split", "facts"):
        if normalised_sha256(raw[part]["text"]) != raw[part]["sha256"]:
            raise ValueError(f"seal paper_prompts.yaml: the {part} prompt no longer matches its recorded sha256")
    return PaperPrompts(split=raw["split"]["text"], split_key=raw["split"]["key"], facts=raw["facts"]["text"],
                        fact_keys=dict(raw["facts"]["keys"]), source=raw["source"], file_text=text,
                        hashes={"split": raw["split"]["sha256"], "facts": raw["facts"]["sha256"]})


def build_paper_split_prompt(source: str, summary: str) -> str:
    """Table 21's sentence-split prompt, then the source text and the summary it names."""
    p = paper_prompts()
    keys = [p.split_key]
    blocks = [fence(source, LABELS["source"], keys)] if source.strip() else []
    return "\n\n".join([p.split, MATERIAL_NOTE, *blocks, fence(summary, LABELS["output"], keys)])


def parse_paper_split(answer: str, summary: str) -> Parsed:
    """The sentence list under the paper's key ``sentence``, validated as every split is."""
    return parse_split(answer, summary, key=paper_prompts().split_key)


def build_paper_fact_prompt(source: str, reference: str | None, summary: str) -> str:
    """Table 21's monadic-fact prompt, then the source text, the reference text (or a note) and the summary."""
    p = paper_prompts()
    keys = list(p.fact_keys.values())
    ref = fence(reference, LABELS["reference"], keys) if reference else NO_REFERENCE
    return "\n\n".join([p.facts, MATERIAL_NOTE, fence(source, LABELS["source"], keys), ref,
                        fence(summary, LABELS["output"], keys)])


def parse_joint_facts(answer: str, texts: dict[str, str | None]) -> Parsed:
    """Read the three fact lists of one answer; each is cleaned and given ids as a per-text list is.

    Args:
        texts: ``source``, ``reference`` and ``output`` texts; a None reference expects no reference facts
            (an empty or missing list is fine, any facts are dropped and reported).

    Returns:
        Parsed whose value is ``{role: {"facts": [Unit, ...], "dropped": [...]}}`` for the roles with a text,
        plus ``ignored_reference_facts`` (a count) when facts were listed for a reference that was not given.
    """
    keys = paper_prompts().fact_keys
    out: dict[str, Any] = {}
    for role, key in keys.items():
        text = texts.get(role)
        if text is None:
            got = json_list(answer, key, allow_objects=True)
            if got.ok and got.value:
                out["ignored_reference_facts"] = len(got.value)
            continue
        items = json_list(answer, key, allow_objects=True)
        if not items.ok:
            return Parsed(None, f"{items.error}", answer)
        facts = validate_facts(items.value, text, FACT_PREFIX[role], answer)
        if not facts.ok:
            return Parsed(None, f'"{key}": {facts.error}', answer)
        out[role] = facts.value
    return Parsed(out, None, answer)


def answer_hint() -> str:
    """The answer format repeated when a malformed answer is re-asked."""
    keys = paper_prompts().fact_keys
    return "{" + ", ".join(f'"{k}": ["{FACT_PREFIX[r]}1:...", "{FACT_PREFIX[r]}2:..."]' for r, k in keys.items()) + "}"


__all__ = ["LABELS", "NO_REFERENCE", "PAPER_PRESET", "PaperPrompts", "answer_hint", "build_paper_fact_prompt",
           "build_paper_split_prompt", "normalised_sha256", "paper_prompts", "parse_joint_facts", "parse_paper_split"]
