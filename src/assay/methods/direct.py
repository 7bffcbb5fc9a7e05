"""The holistic baseline: one prompt per (sample, dimension), the judge answers a number on the scale."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from assay.answers.fence import MATERIAL_NOTE, sample_blocks
from assay.answers.parsing import Parsed, parse_rating
from assay.datasets.catalog import DatasetInfo
from assay.judges.ask import Read, ask
from assay.judges.base import Request, Response
from assay.methods.base import AnswerReader, ImportedRead, Method, MethodOptions, RunContext
from assay.types import Dimension, Judgment, Sample


class DirectOptions(MethodOptions):
    """Options of the direct method.

    Attributes:
        max_tokens: Room for the answer; the rating is read from the first line that has one.
        temperature: Decoding temperature (0: greedy, the baseline's setting).
        strict_ratings: A fractional rating on an integer scale is a parse failure (default: read
            as given and flagged ``fractional`` in the trace).
    """

    max_tokens: int = Field(default=8, ge=1)
    temperature: float = Field(default=0.0, ge=0.0)
    strict_ratings: bool = False


def build_prompt(sample: Sample, dimension: Dimension, info: DatasetInfo) -> str:
    """The direct-scoring prompt: task, the fenced texts, then the dimension and the answer format."""
    name = dimension.name.replace("_", " ")
    return (
        f"You are rating a {info.output_name} written for a {info.input_name}.\n"
        f"Task: {info.task}\n\n"
        f"{MATERIAL_NOTE}\n\n"
        f"{sample_blocks(sample, info, labels=[name])}\n\n"
        f"Rate the {info.output_name} above for {name} ({dimension.scale.label()}).\n"
        f"{name.capitalize()}: {dimension.definition}\n"
        f"Answer with one number from {dimension.scale.label().replace('-', ' to ')} and nothing else.\n"
        f"{name.capitalize()}:"
    )


class DirectReader(AnswerReader):
    """The direct baseline: one answer per item, one rating read from it."""

    method = "direct"

    def read(self, sample: Sample, rec: dict[str, Any], *, file: str, record: Any) -> ImportedRead:
        (text,) = self.texts(rec, file, record)
        prompt = build_prompt(sample, self.dimension, self.dataset.info)
        parsed = parse_rating(text, self.dimension.scale, self.dimension.name.replace("_", " "), prompt=prompt,
                              strict=self.strict)
        trace = {"answer": text, "parse_error": parsed.error, **({"flags": list(parsed.flags)} if parsed.flags
                                                                 else {})}
        return parsed.value, trace, (f"unparseable answer: {parsed.error}" if parsed.error else None)



class Direct(Method):
    """Holistic scalar judgment (the papers' baseline: G-Eval without CoT and without probabilities)."""

    name = "direct"
    Options = DirectOptions
    Reader = DirectReader
    options: DirectOptions

    async def score(self, sample: Sample, dimension: Dimension, ctx: RunContext) -> Judgment:
        prompt = build_prompt(sample, dimension, ctx.dataset.info)
        request = Request.chat(prompt, temperature=self.options.temperature, max_tokens=self.options.max_tokens)

        def read(response: Response, _: Request) -> Read[Parsed]:
            parsed = parse_rating(response.text, dimension.scale, dimension.name.replace("_", " "), prompt=prompt,
                                  strict=self.options.strict_ratings)
            return Read(parsed, parsed.error)

        asked = await ask(ctx.judge, request, stage="score", read=read)
        parsed = asked.last.value
        assert parsed is not None
        trace = {"answer": asked.response.text, "parse_error": parsed.error,
                 **({"flags": list(parsed.flags)} if parsed.flags else {})}
        return self.judgment(sample, dimension, ctx, score=parsed.value, trace=trace,
                             error=f"unparseable answer: {parsed.error}" if parsed.error else None)
