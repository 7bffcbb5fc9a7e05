"""``--method pairwise``: which of two outputs of one input is better, judged in both orders."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from assay.datasets import Dataset
from assay.errors import ConfigError
from assay.judges.ask import Asked, Read, ask
from assay.judges.base import Request, Response
from assay.methods.base import Method, MethodOptions, RunContext
from assay.methods.pairwise.importer import PairwiseReader
from assay.methods.pairwise.pairs import PAIR_KEY, check_spec, make_pairs
from assay.methods.pairwise.parse import decide, parse_json_verdict, parse_verdict, verdict_schema, winner
from assay.methods.pairwise.prompts import MTBENCH_SYSTEM, Side, build_mtbench_prompt, build_prompt
from assay.methods.presets import apply_preset
from assay.types import Dimension, Judgment, Sample

#: ``preset: mtbench`` (alias ``paper``): the MT-Bench pairwise judge (Zheng et al. 2023): its prompt, greedy
#: decoding and room for its explanation.
PRESETS = {name: {"prompt": "mtbench", "temperature": 0.0, "max_tokens": 2048} for name in ("mtbench", "paper")}
#: A verdict with a short explanation before it (about 60 tokens), as the prompts ask: ``--estimate``'s stand-in.
TYPICAL_VERDICT = (
    "Both texts address the input. The first covers the main points more completely and states them more "
    "clearly, while the second leaves out a key detail and repeats itself. On the criterion asked, the first is "
    "better.\n[[A]]"
)
#: The two orders: key, and which output of the pair is shown first.
ORDERS = (("ab", "A"), ("ba", "B"))


class PairwiseOptions(MethodOptions):
    """Options of the pairwise method.

    Attributes:
        pairs: Which pairs per input: ``all`` (every two outputs: quadratic in systems), ``baseline:SYSTEM``
            (each output against that system's: linear, as AlpacaEval does) or ``random:K``.
        seed: Draws the ``random:K`` pairs (with the input's id).
        inconsistent: A verdict that flips with the order counts as a tie (``tie``) or is left unscored
            (``drop``: recorded with its reason); never as a win.
        prompt: ``assay`` (the dimension's definition, reasoning then verdict) or ``mtbench`` (the MT-Bench
            pairwise judge's text; it names no dimension, so every dimension gets the same question).
        steps: A G-Eval steps file (``assay geval steps``): its steps for the dimension go into the prompt.
        reference: Show the reference output where the dataset has one (``assay`` prompt).
        max_tokens / temperature: Decoding of the answer (reasoning, then the verdict).
        reasks: Follow-up turns when no verdict can be read (0: none).
        preset: ``mtbench`` (or ``paper``): the MT-Bench settings.
    """

    pairs: str = "all"
    seed: int = 0
    inconsistent: Literal["tie", "drop"] = "tie"
    prompt: Literal["assay", "mtbench"] = "assay"
    steps: str | None = None
    reference: bool = True
    max_tokens: int = Field(default=384, ge=1)
    temperature: float = Field(default=0.0, ge=0.0)
    reasks: int = Field(default=1, ge=0)
    preset: Literal["mtbench", "paper"] | None = None

    @model_validator(mode="before")
    @classmethod
    def _preset(cls, values: Any) -> Any:
        return apply_preset(values, PRESETS, "pairwise")

    @field_validator("pairs")
    @classmethod
    def _pairs(cls, value: str) -> str:
        return check_spec(value)


class Pairwise(Method):
    """Pairwise comparison in both orders, with order flips recorded as inconsistent (never as wins).

    The unit of work stays (sample, dimension): :meth:`work_items` turns the dataset into one sample per pair
    (id ``A_ID|B_ID``, system ``SYS_A|SYS_B``, ``human`` the difference of the human means), and a judgment's
    score is the preference for A (1 A wins, 0 B wins, 0.5 tie or inconsistent).
    """

    name = "pairwise"
    sequential_calls = False  # both orders side by side
    Reader = PairwiseReader
    compares_pairs = True
    Options = PairwiseOptions
    options: PairwiseOptions

    def __init__(self, options: PairwiseOptions | dict[str, Any] | None = None) -> None:
        super().__init__(options)
        self.skipped: dict[str, list[str]] = {}
        self.steps: dict[str, str] = {}

    def work_items(self, dataset: Dataset) -> Dataset:
        """The dataset as pairs of outputs of one input (:func:`~assay.methods.pairwise.pairs.make_pairs`)."""
        pairing = make_pairs(dataset.samples, self.options.pairs, self.options.seed)
        self.skipped = pairing.skipped
        return replace(dataset, samples=pairing.pairs, pool=pairing.pairs)

    @classmethod
    def score_range(cls, dimension: Dimension) -> tuple[float, float, bool]:
        """The preference for A, in [0, 1] whatever the dimension's scale."""
        return 0.0, 1.0, False

    def standin(self, request: Request, stage: str) -> str | None:
        """A verdict after a short explanation, for ``--estimate`` (a JSON verdict is the generic schema stand-in's)."""
        return None if request.json_schema else TYPICAL_VERDICT

    async def prepare(self, ctx: RunContext) -> dict[str, Any]:
        for why, docs in self.skipped.items():
            ctx.note("pairs", f"pairwise: {len(docs)} input(s) skipped ({why}), e.g. {', '.join(docs[:3])}")
        record: dict[str, Any] = {"pairs": len(ctx.dataset.samples), "skipped": {k: len(v) for k, v in
                                                                                   self.skipped.items()}}
        if self.options.steps:
            from assay.methods.geval.steps import load_steps_document

            path = Path(self.options.steps).expanduser()
            if not path.is_file():
                raise ConfigError(f"pairwise --steps {path}: no such file (write one with `assay geval steps`)")
            _, entries = load_steps_document(path.read_text(encoding="utf-8"), str(path))
            missing = [d.name for d in ctx.dimensions if d.name not in entries]
            if missing:
                raise ConfigError(f"pairwise --steps {path}: no steps for dimension {missing[0]!r}")
            self.steps = {d.name: entries[d.name]["steps"] for d in ctx.dimensions}
            record["steps"] = {n: ctx.artifacts(f"pairwise/steps/{n}", s) for n, s in self.steps.items()}
        return record

    schema_stages = ("verdict",)

    def answer_schema(self, stage: str, dimension: Dimension | None = None, **shape: Any) -> dict[str, Any] | None:
        """``{"reasoning": str, "verdict": "A" | "B" | "C"}`` for the verdict (:func:`verdict_schema`)."""
        return verdict_schema() if stage == "verdict" else None

    def free_text_reason(self) -> str | None:
        """The MT-Bench prompt prescribes its own free-text verdict (``[[A]]``, ``[[B]]``, ``[[C]]``)."""
        if self.options.prompt == "mtbench":
            return "pairwise with the MT-Bench prompt keeps its free-text [[A]]/[[B]]/[[C]] verdict"
        return super().free_text_reason()

    def request(self, pair: Sample, dimension: Dimension, info: Any, first: Side, second: Side,
                schema: str | None = None) -> Request:
        """The request for one order (pure: the same pair and order always give the same request); with
        ``schema`` (the JSON answer format) the verdict is asked for as :func:`verdict_schema`'s object."""
        temperature, max_tokens = self.options.temperature, self.options.max_tokens
        if self.options.prompt == "mtbench":
            return Request.chat(build_mtbench_prompt(pair, first, second, info), system=MTBENCH_SYSTEM,
                                temperature=temperature, max_tokens=max_tokens)
        prompt = build_prompt(pair, first, second, dimension, info, steps=self.steps.get(dimension.name),
                              reference=self.options.reference, json=schema is not None)
        return Request.chat(prompt, temperature=temperature, max_tokens=max_tokens, json_schema=schema)

    async def _order(self, pair: Sample, dimension: Dimension, ctx: RunContext, first: str) -> Asked[str]:
        sides = pair.metadata[PAIR_KEY]
        a = Side(sides["a"]["output"], "A")
        b = Side(sides["b"]["output"], "B")
        schema = self.schema_text(ctx, "verdict", dimension)
        request = self.request(pair, dimension, ctx.dataset.info, *((a, b) if first == "A" else (b, a)),
                               schema=schema)
        prompt = request.messages[-1].content

        def read(response: Response, _: Request) -> Read[str]:
            parsed = (parse_json_verdict(response.text, prompt=prompt) if schema is not None
                      else parse_verdict(response.text, prompt=prompt))
            return Read(parsed.value, parsed.error)

        return await ask(ctx.judge, request, stage="verdict", read=read, reasks=self.options.reasks)

    async def score(self, sample: Sample, dimension: Dimension, ctx: RunContext) -> Judgment:
        asked = await asyncio.gather(*(self._order(sample, dimension, ctx, first) for _, first in ORDERS))
        sides = sample.metadata[PAIR_KEY]
        trace: dict[str, Any] = {"pair": {k: {"id": v["id"], "system_id": v["system_id"],
                                              "length": len(v["output"]), "human": v["human"].get(dimension.name),
                                              "output": v["output"]} for k, v in sides.items()},
                                 "orders": {}, "answer_format": ctx.answer_format}
        winners = {}
        for (key, first), got in zip(ORDERS, asked, strict=True):
            winners[key] = winner(got.value, first)
            trace["orders"][key] = {"first": first, "verdict": got.value, "winner": winners[key],
                                    "answer": got.response.text, "error": got.error,
                                    "calls": [c.to_trace() for c in got.calls]}
        score, error = decide(trace, winners, self.options.inconsistent)
        return self.judgment(sample, dimension, ctx, score=score, trace=trace, error=error)
