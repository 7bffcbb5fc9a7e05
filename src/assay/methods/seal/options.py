"""SEAL's options, apart from the method so that the per-judgment runner can name them without importing it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from assay.methods.base import MethodOptions, same
from assay.methods.seal.paper import PAPER_PRESET, paper_prompts


class SealOptions(MethodOptions):
    """Options of SEAL.

    Attributes:
        preset: ``assay`` (default) or ``paper``: the paper's stage 1 (Table 21 prompts verbatim, LLM
            sentence splitting, one fact-extraction call per (source, reference, output) triple). A preset
            fills the options it sets (``paper.PAPER_PRESET``) unless they are given explicitly;
            the manifest records what it set and what was overridden.
        spec: Path of a spec YAML replacing the shipped one (``assay/methods/seal/spec.yaml``).
        recipe: ``DIMENSION=RECIPE`` overrides of the spec's dataset mapping (repeatable), e.g.
            ``consistency=summary-consistency-facts`` to judge QAGS fact by fact.
        sentence_splitter: ``pysbd`` (deterministic, default) or ``llm`` (the paper's Table 21 stage 1;
            with the paper preset, the paper's own prompt).
        decomposition: ``per-text`` (default: each text's facts in a call of their own, a document's
            source and reference facts shared by all its outputs) or ``joint`` (the paper: source,
            reference and output facts in one call per triple, Table 21's prompt).
        decisions: ``batched`` (the paper's JSON answers, Tables 22-25) or ``logprobs`` (assay's mode for
            small local judges: one question per call, decided by the yes/no probabilities).
        threshold_sentences / threshold_facts: Override Table 19's n (3 sentences, 6 facts).
        no_units: Ablation w/o SD: the whole output is one unit.
        no_subdims: Ablation w/o SV: one scalar rating per unit instead of binary sub-dimension decisions.
        uniform_weights: Ablation w/o weighting: uniform weights, the judge is not asked for any.
        reasks: Re-asks after a malformed or misaligned answer, per request (``max_reasks``: deprecated name).
        temperature: Decoding temperature (the paper uses 0).
        answer_slack: Tokens allowed beyond the expected answer's size.
        fact_max_tokens / source_fact_max_tokens: Token budgets of fact extraction for outputs and
            references, and for sources.
        shuffle_seed: List the units (facts, transitions, sentences) in an order drawn from this seed, the
            order-sensitivity hook of ``assay probe`` (see :func:`assay.methods.seal.run.shuffled_plan`).
    """

    preset: Literal["assay", "paper"] = "assay"
    spec: str | None = None
    recipe: list[str] = Field(default_factory=list)
    sentence_splitter: Literal["pysbd", "llm"] = "pysbd"
    decomposition: Literal["per-text", "joint"] = "per-text"
    decisions: Literal["batched", "logprobs"] = "batched"
    threshold_sentences: int | None = Field(default=None, ge=1)
    threshold_facts: int | None = Field(default=None, ge=1)
    no_units: bool = False
    no_subdims: bool = False
    uniform_weights: bool = False
    reasks: int = Field(default=2, ge=0, le=5)
    temperature: float = Field(default=0.0, ge=0.0)
    answer_slack: int = Field(default=32, ge=8)
    fact_max_tokens: int = Field(default=320, ge=32)
    source_fact_max_tokens: int = Field(default=900, ge=32)
    shuffle_seed: int | None = None

    renamed: ClassVar[dict[str, tuple[str, Callable[[Any], Any]]]] = {"max_reasks": ("reasks", same)}

    @model_validator(mode="before")
    @classmethod
    def _apply_preset(cls, data: Any) -> Any:
        """Fill the options a preset sets; options given explicitly win (and are recorded as overrides)."""
        if isinstance(data, dict) and data.get("preset") == "paper":
            data = {**PAPER_PRESET, **data}
        return data

    def preset_record(self) -> dict[str, Any]:
        """What the preset set and which of its settings were overridden, for the manifest."""
        if self.preset != "paper":
            return {"name": self.preset, "sets": {}}
        values = self.model_dump(mode="json")
        overridden = {k: values[k] for k, v in PAPER_PRESET.items() if values[k] != v}
        prompts = paper_prompts()
        return {"name": "paper", "sets": dict(PAPER_PRESET), "overridden": overridden,
                "stage1_prompts": {"source": prompts.source, "sha256": prompts.hashes,
                                   "used": {"split": values["sentence_splitter"] == "llm",
                                            "facts": values["decomposition"] == "joint"}}}
