"""The holistic baseline: one prompt per (sample, dimension), the judge answers a number on the scale."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from assay.answers.fence import MATERIAL_NOTE, sample_blocks
from assay.answers.parsing import Parsed, parse_json_rating, parse_rating
from assay.datasets.catalog import DatasetInfo
from assay.judges.ask import Read, ask
from assay.judges.base import Request, Response
from assay.methods.base import AnswerReader, ImportedRead, Method, MethodOptions, RunContext
from assay.types import Dimension, Judgment, Sample

#: The most characters of reasoning a JSON answer may hold (the schema's ``maxLength``: a grammar then always
#: closes the string, so a judge that would ramble on cannot run out of tokens inside it).
REASONING_CHARS = 300
#: Tokens added to ``max_tokens`` for a JSON answer: the reasoning and the JSON around the score.
JSON_ROOM = 120


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


def build_prompt(sample: Sample, dimension: Dimension, info: DatasetInfo, *, json: bool = False) -> str:
    """The direct-scoring prompt: task, the fenced texts, then the dimension and the answer format.

    With ``json`` the answer format is :func:`score_schema`'s object: a short reasoning, then the score.
    """
    name = dimension.name.replace("_", " ")
    span = dimension.scale.label().replace("-", " to ")
    head = (
        f"You are rating a {info.output_name} written for a {info.input_name}.\n"
        f"Task: {info.task}\n\n"
        f"{MATERIAL_NOTE}\n\n"
        f"{sample_blocks(sample, info, labels=[name])}\n\n"
        f"Rate the {info.output_name} above for {name} ({dimension.scale.label()}).\n"
        f"{name.capitalize()}: {dimension.definition}\n"
    )
    if json:
        return head + (f"Answer with a JSON object: first \"reasoning\", one or two sentences on the {name} of the "
                       f"{info.output_name}, then \"score\", one number from {span}.\n")
    return head + f"Answer with one number from {span} and nothing else.\n{name.capitalize()}:"


def score_schema(dimension: Dimension) -> dict[str, object]:
    """The direct answer as JSON: ``{"reasoning": str, "score": rating}``, the reasoning first so that the judge
    reasons before it commits to the verdict; an integer scale's ratings are enumerated."""
    scale = dimension.scale
    score: dict[str, object] = ({"type": "integer", "enum": scale.values()} if scale.integer
                                else {"type": "number", "minimum": scale.low, "maximum": scale.high})
    return {"type": "object",
            "properties": {"reasoning": {"type": "string", "maxLength": REASONING_CHARS}, "score": score},
            "required": ["reasoning", "score"], "additionalProperties": False}


class DirectReader(AnswerReader):
    """The direct baseline: one answer per item, one rating read from it."""

    method = "direct"

    def read(self, sample: Sample, rec: dict[str, Any], *, file: str, record: Any) -> ImportedRead:
        (text,) = self.texts(rec, file, record)
        prompt = build_prompt(sample, self.dimension, self.dataset.info)
        parsed = parse_rating(text, self.dimension.scale, self.dimension.name.replace("_", " "), prompt=prompt,
                              strict=self.strict)
        trace = {"answer": text, "parse_error": parsed.error, "answer_format": "free",
                 **({"flags": list(parsed.flags)} if parsed.flags else {})}
        return parsed.value, trace, (f"unparseable answer: {parsed.error}" if parsed.error else None)



class Direct(Method):
    """Holistic scalar judgment (the papers' baseline: G-Eval without CoT and without probabilities)."""

    name = "direct"
    sequential_calls = False
    Options = DirectOptions
    Reader = DirectReader
    options: DirectOptions

    schema_stages = ("score",)

    def answer_schema(self, stage: str, dimension: Dimension | None = None, **shape: object) -> dict | None:
        """``{"reasoning": str, "score": rating}`` for the score stage (:func:`score_schema`)."""
        return score_schema(dimension) if stage == "score" and dimension is not None else None

    async def score(self, sample: Sample, dimension: Dimension, ctx: RunContext) -> Judgment:
        schema = self.schema_text(ctx, "score", dimension)
        prompt = build_prompt(sample, dimension, ctx.dataset.info, json=schema is not None)
        request = Request.chat(prompt, temperature=self.options.temperature,
                               max_tokens=self.options.max_tokens + (JSON_ROOM if schema else 0), json_schema=schema)

        def read(response: Response, _: Request) -> Read[Parsed]:
            if schema is not None:
                parsed = parse_json_rating(response.text, dimension.scale, prompt=prompt,
                                           strict=self.options.strict_ratings)
            else:
                parsed = parse_rating(response.text, dimension.scale, dimension.name.replace("_", " "),
                                      prompt=prompt, strict=self.options.strict_ratings)
            return Read(parsed, parsed.error)

        asked = await ask(ctx.judge, request, stage="score", read=read)
        parsed = asked.last.value
        assert parsed is not None
        trace = {"answer": asked.response.text, "parse_error": parsed.error, "answer_format": ctx.answer_format,
                 **({"flags": list(parsed.flags)} if parsed.flags else {})}
        return self.judgment(sample, dimension, ctx, score=parsed.value, trace=trace,
                             error=f"unparseable answer: {parsed.error}" if parsed.error else None)
