"""SEAL (Structured Evaluation via LLMs): unit-level binary verification with deterministic aggregation.

Algorithm 1 of the SEAL paper, per (sample, dimension):

1. decompose the output into semantic units (sentences, adjacent sentence pairs, monadic facts, or
   the response/triple as one unit), judging it as one holistic unit when it has fewer than n units;
2. ask a binary decision v(u, s) for every unit and sub-dimension, in batched JSON answers;
3. have the judge weigh the sub-dimensions, w(s) per (input, output, dimension);
4. aggregate deterministically: unit score = sum_s w(s) v(u, s), dimension score = mean over units.

The prompts, parsers and arithmetic are pure functions in this package's other modules; this module only
sequences them around judge calls, shares stage-1 results across dimensions and samples, and records
everything in the trace.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Awaitable, Callable
from typing import Any

from assay.answers.fence import fenced_text
from assay.answers.parsing import format_example
from assay.answers.shapes import schema_answer
from assay.datasets.catalog import DatasetInfo
from assay.errors import ConfigError
from assay.judges.base import Request
from assay.methods.base import Method, MethodOptions, RunContext
from assay.methods.seal.options import SealOptions
from assay.methods.seal.paper import (
    answer_hint,
    build_paper_fact_prompt,
    build_paper_split_prompt,
    paper_prompts,
    parse_joint_facts,
    parse_paper_split,
)
from assay.methods.seal.prompts import Ask, list_schema
from assay.methods.seal.run import SealRun, Stage1, ask_judge, spent
from assay.methods.seal.spec import Recipe, Spec, load_spec, parse_overrides
from assay.methods.seal.units import (
    FACT_PREFIX,
    build_fact_prompt,
    build_split_prompt,
    parse_facts,
    parse_split,
    split_sentences,
)
from assay.types import Dimension, Judgment, Sample


def _key(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


class Seal(Method):
    """SEAL: semantic units, binary sub-dimension verification, judge-estimated weights, equations 6-7."""

    name = "seal"
    Options = SealOptions
    options: SealOptions
    unit_order = "dimension"  # the dimension's opening and rules precede the texts (seal/prompts.py)
    #: Stage 1 (sentences, facts), stage 2 (verifications, ratings) and weights are JSON in every answer format;
    #: under ``json`` each request also carries the schema its builder in ``seal/prompts.py`` wrote.
    schema_stages = ("decompose", "verify", "weights")

    def answer_schema(self, stage: str, dimension: Dimension | None = None, **shape: Any) -> dict | None:
        """The schema of one SEAL request, as its prompt builder sized it (``shape``: ``schema``, the builder's):
        a list of strings per stage-1 key (:func:`~assay.methods.seal.prompts.list_schema`), n comma-separated
        bits, ratings or weights (``^V(,V){n-1}$``) for verifications and weights."""
        return shape.get("schema") if stage in self.schema_stages else None

    @property
    def reads_logprobs(self) -> bool:
        """``--decisions logprobs``: each decision read from the log-probabilities of its one-token answer."""
        return self.options.decisions == "logprobs"

    def __init__(self, options: MethodOptions | dict[str, Any] | None = None) -> None:
        super().__init__(options)
        self._spec: Spec | None = None
        self._spec_text = ""
        self._overrides = parse_overrides(self.options.recipe)
        self._stage1: dict[str, asyncio.Future[Stage1]] = {}

    # ------------------------------------------------------------------ set-up
    def spec(self) -> Spec:
        """The spec in use (loaded on first use)."""
        if self._spec is None:
            self._spec, self._spec_text = load_spec(self.options.spec)
        return self._spec

    def recipe_of(self, dataset: str | DatasetInfo, dimension: str) -> tuple[str, Recipe]:
        return self.spec().recipe_for(dataset, dimension, self._overrides)

    def threshold(self, recipe: Recipe) -> int | None:
        """n for a multi-unit recipe: the option if given, else the spec (Table 19)."""
        n = self.spec().threshold(recipe)
        if n is None:
            return None
        option = self.options.threshold_sentences if recipe.unit != "monadic_fact" else self.options.threshold_facts
        return option or n

    @classmethod
    def score_range(cls, dimension: Dimension) -> tuple[float, float, bool]:
        """A share in [0, 1] whatever the dimension's scale."""
        return 0.0, 1.0, False

    def standin(self, request: Request, stage: str) -> str | None:
        """A decomposition (a JSON answer of one list of strings, by schema or format example) lists the fenced
        text's sentences as SEAL's deterministic splitter finds them, so that verification asks about as many
        units; the rest is the generic stand-in's."""
        if not request.json_mode and not request.json_schema:
            return None
        prompt = request.messages[-1].content
        text = fenced_text(prompt)
        if text is None:
            return None
        shape = schema_answer(json.loads(request.json_schema)) if request.json_schema else format_example(prompt)
        if isinstance(shape, dict) and len(shape) == 1:
            key, value = next(iter(shape.items()))
            if isinstance(value, list) and value and all(isinstance(x, str) for x in value):
                return json.dumps({key: split_sentences(text)})
        return None

    async def prepare(self, ctx: RunContext) -> dict[str, Any]:
        """Load the spec, resolve every dimension's recipe (failing early), store the spec as an artifact."""
        spec = self.spec()
        if self.options.decisions == "logprobs" and not ctx.judge.supports_logprobs:
            raise ConfigError(f"seal: --decisions logprobs needs a judge with log-probabilities; "
                              f"{ctx.judge.identity.label} gives none (use --decisions batched)")
        digest = ctx.artifacts("seal-spec", self._spec_text)
        recipes = {}
        for dim in ctx.dimensions:
            name, recipe = self.recipe_of(ctx.dataset.info, dim.name)
            recipes[dim.name] = {"recipe": name, "unit": recipe.unit, "threshold": self.threshold(recipe),
                                 "subdimensions": [s.name for s in recipe.subdimensions],
                                 "answer": recipe.answer, "weights": recipe.weights}
        preset = self.options.preset_record()
        if self.paper_split or self.options.decomposition == "joint":
            preset["stage1_prompts_artifact"] = ctx.artifacts("seal-paper-prompts", paper_prompts().file_text)
        return {"seal_spec": {"name": spec.name, "version": spec.version, "sha256": digest,
                              "path": self.options.spec or "shipped", "source": spec.source},
                "seal_recipes": recipes, "seal_ablations": self.ablations(), "seal_decisions": self.options.decisions,
                "seal_preset": preset}

    @property
    def paper_split(self) -> bool:
        """Whether sentences are split by the judge with the paper's own prompt (paper preset)."""
        return self.options.sentence_splitter == "llm" and self.options.preset == "paper"

    def ablations(self) -> dict[str, bool]:
        o = self.options
        return {"w/o SD (no_units)": o.no_units, "w/o SV (no_subdims)": o.no_subdims,
                "w/o weighting (uniform_weights)": o.uniform_weights}

    # ------------------------------------------------------------------ stage 1, shared
    async def shared(self, key: str, factory: Callable[[], Awaitable[Stage1]]) -> tuple[Stage1, bool]:
        """A stage-1 result computed once per run and text, even when asked for concurrently.

        Returns:
            The result and whether this caller started its computation (and so pays for it).
        """
        task = self._stage1.get(key)
        created = task is None
        if task is None:
            task = asyncio.ensure_future(factory())
            self._stage1[key] = task
        try:
            return await asyncio.shield(task), created
        except Exception:
            if task.done() and self._stage1.get(key) is task:
                self._stage1.pop(key, None)  # a failed call is retried by the next caller, not cached
            raise

    def split_ask(self, text: str, label: str, source: str) -> tuple[Ask, Callable[[str], Any], str]:
        """The sentence-split request (assay's wording, or the paper's with the source), its parser, its cache key."""
        budget = self.options.fact_max_tokens
        if self.paper_split:
            hint = f'{{"{paper_prompts().split_key}": ["...", "..."]}}'
            return (Ask(build_paper_split_prompt(source, text), hint, budget,
                        list_schema([paper_prompts().split_key], budget)),
                    lambda a: parse_paper_split(a, text), _key("split-paper", source, text))
        ask = Ask(build_split_prompt(self.spec().split_prompt, text, label), '{"sentences": ["...", "..."]}', budget,
                  list_schema(["sentences"], budget))
        return ask, lambda a: parse_split(a, text), _key("split", label, text)

    async def sentences(self, text: str, label: str, ctx: RunContext, source: str = "") -> tuple[Stage1, bool]:
        """The output's sentences: pysbd, or the judge (Table 21 stage 1) with a recorded pysbd fallback."""
        if self.options.sentence_splitter == "pysbd":
            return Stage1(split_sentences(text)), False
        ask, parse, key = self.split_ask(text, label, source)

        async def split() -> Stage1:
            asked = await ask_judge(ctx.judge, ask, parse, stage="decompose", reasks=self.options.reasks,
                                    temperature=self.options.temperature, structured=ctx.answer_format == "json")
            if asked.value is not None:
                return Stage1(asked.value, how="llm", attempts=asked.trace(), usage=spent(asked))
            ctx.note("fallback", "seal: the judge's sentence split was unusable; pysbd sentences used instead")
            return Stage1(split_sentences(text), how=f"pysbd (llm split failed: {asked.error})",
                          attempts=asked.trace(), usage=spent(asked))

        return await self.shared(key, split)

    async def facts(self, role: str, text: str, label: str, ctx: RunContext) -> tuple[Stage1, bool]:
        """Monadic facts of one text (output, source or reference), extracted once and shared."""
        budget = self.options.source_fact_max_tokens if role == "source" else self.options.fact_max_tokens

        async def extract() -> Stage1:
            ask = Ask(build_fact_prompt(self.spec().fact_prompt, text, label), '{"facts": ["...", "..."]}', budget,
                      list_schema(["facts"], budget))
            asked = await ask_judge(ctx.judge, ask, lambda a: parse_facts(a, text, FACT_PREFIX[role]),
                                    stage="decompose", reasks=self.options.reasks, temperature=self.options.temperature,
                                    structured=ctx.answer_format == "json")
            value, attempts, usage = asked.value, asked.trace(), spent(asked)
            if value is None:
                return Stage1(None, error=str(asked.error), how="llm", attempts=attempts, usage=usage)
            return Stage1(value["facts"], how="llm", attempts=attempts, usage=usage, dropped=value["dropped"])

        return await self.shared(_key("facts", role, label, text), extract)

    async def triple_facts(self, source: str, reference: str | None, output: str,
                           ctx: RunContext) -> tuple[Stage1, bool]:
        """Source, reference and output facts from one call (the paper's Table 21), shared by the triple's
        dimensions. The value is ``{role: [Unit, ...]}``; ``dropped`` lists cleaned-out items by role."""
        budget = self.options.source_fact_max_tokens + 2 * self.options.fact_max_tokens
        texts = {"source": source, "reference": reference, "output": output}

        async def extract() -> Stage1:
            ask = Ask(build_paper_fact_prompt(source, reference, output), answer_hint(), budget,
                      list_schema(paper_prompts().fact_keys.values(), budget))
            asked = await ask_judge(ctx.judge, ask, lambda a: parse_joint_facts(a, texts),
                                    stage="decompose", reasks=self.options.reasks, temperature=self.options.temperature,
                                    structured=ctx.answer_format == "json")
            value, attempts, usage = asked.value, asked.trace(), spent(asked)
            if value is None:
                return Stage1(None, error=str(asked.error), how="llm (one call per triple)",
                              attempts=attempts, usage=usage)
            roles = {r: v for r, v in value.items() if isinstance(v, dict)}
            dropped = [{"role": r, **d} for r, v in roles.items() for d in v["dropped"]]
            if value.get("ignored_reference_facts"):
                dropped.append({"role": "reference", "text": f"{value['ignored_reference_facts']} fact(s)",
                                "reason": "no reference text was given"})
            return Stage1({r: v["facts"] for r, v in roles.items()}, how="llm (one call per triple)",
                          attempts=attempts, usage=usage, dropped=dropped)

        return await self.shared(_key("triple-facts", source, reference or "", output), extract)

    # ------------------------------------------------------------------ per judgment
    async def score(self, sample: Sample, dimension: Dimension, ctx: RunContext) -> Judgment:
        name, recipe = self.recipe_of(ctx.dataset.info, dimension.name)
        run = SealRun(self, sample, dimension, ctx, recipe)
        run.trace.update({"recipe": name, "unit_type": recipe.unit, "score_range": [0.0, 1.0],
                          "decisions_by": self.options.decisions, "ablations": self.ablations()})
        score, error = await run.execute()
        return self.judgment(sample, dimension, ctx, score=score, trace=run.trace, error=error)


__all__ = ["Seal", "SealOptions"]
