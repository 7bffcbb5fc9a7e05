"""CheckEval: a checklist of yes/no questions per dimension, answered in groups; score = yes / answered.

Follows CheckEval (Lee et al. 2025), section 3.3 and appendix C figures 7-8: questions are
grouped by sub-dimension and several are asked in one prompt (task, instructions, answer
format ``Q1: yes``, the texts, the dimension's definition, the questions), and the score is the
share of 'yes' answers. Two points the paper leaves open are made explicit here:

* A missing or unreadable answer is never a 'no': it is recorded as missing, the question is
  asked again once on its own, and what is still missing is left out of the denominator and
  counted in the trace.
* ``soft``: the probability of 'yes' read from the judge's log-probabilities at each answer
  token, averaged (the graded variant that the paper's section 6.2 calls for). It is recorded
  beside the binary score; with ``soft`` on it becomes the judgment's score.

The prompt puts the dimension's definition after the texts (figures 7-8 have it before them) so
that prompts for every dimension of a sample share the longest prefix; nothing else moves.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from assay.datasets.catalog import DatasetInfo
from assay.errors import ConfigError
from assay.judges.ask import Read, ask
from assay.judges.base import Choice, Request, Response
from assay.methods.base import ArtifactKind, Method, MethodOptions, RunContext, reasks_from_bool, shuffled
from assay.methods.checkeval.aggregate import QuestionResult, aggregate
from assay.methods.checkeval.build import ChecklistOptions, plan_checklist
from assay.methods.checkeval.checklist import Checklist, ChecklistDimension, checklist_hash, dump_checklist
from assay.methods.checkeval.imported import CheckEvalReader
from assay.methods.checkeval.parse import (
    ParsedAnswers,
    answers_schema,
    p_yes_at,
    parse_answers,
    parse_json_answers,
)
from assay.methods.checkeval.prompts import Asked, build_prompt, plan_groups
from assay.methods.checkeval.shipped import checklist_path, default_checklist, load_checklist
from assay.methods.presets import apply_preset
from assay.types import Dimension, Judgment, Sample


class CheckEvalOptions(MethodOptions):
    """Options of CheckEval.

    Attributes:
        checklist: A shipped checklist name (``summeval``, ``topical-chat``, ``qags``) or a YAML
            file; default: the one shipped for the dataset.
        group_size: Most questions in one prompt. Whole sub-dimensions are packed together while
            they fit; a larger sub-dimension is split.
        per_question: One question per prompt (the single-question ablation of section 3.3).
        soft: Score = mean P(yes) from log-probabilities at each answer token; the binary
            yes-ratio stays in the trace.
        reasks: Ask each question left unanswered in its group again on its own (1, the default), and re-ask
            that question in a follow-up turn up to ``reasks - 1`` more times; 0: never. ``reask`` (on/off) is
            the deprecated name (on: 1).
        max_tokens: Room for the answers; default 24 tokens per question + 16, at most 200 (the paper's
            setting), so that a judge that restates each question still reaches the last one.
        temperature: Decoding temperature (the paper used 1 with a fixed seed; 0 is greedy).
        seed: Sampling seed passed to the judge.
        top_logprobs: How many alternatives to read at each answer position when ``soft``.
        grouping: ``packed`` (whole sub-dimensions packed into prompts of at most ``group_size``) or
            ``sub_dimension`` (one prompt per sub-dimension with all its questions, as the paper).
        definition: Where the dimension's definition goes: ``after`` the texts (assay's order, for
            prefix reuse) or ``before`` them, right after the task (figures 7-8).
        shuffle_seed: Ask each prompt's questions in an order drawn from this seed (and the sample, dimension
            and prompt), instead of the checklist's: the order-sensitivity hook of ``assay probe``. The
            answers are read back to their questions, so only the order shown to the judge changes.
        preset: ``paper``: the paper's settings (section 4.4 and figures 7-8): temperature 1, seed 42,
            200 tokens, one prompt per sub-dimension, the definition before the texts, and the
            released question pool of the dataset (``summeval-paper``, ``topical-chat-paper``) unless
            ``checklist`` names another. An option given with another value than the preset's is an error.
    """

    checklist: str | None = None
    group_size: int = Field(default=5, ge=1)
    per_question: bool = False
    soft: bool = False
    reasks: int = Field(default=1, ge=0, le=5)
    max_tokens: int | None = Field(default=None, ge=1)
    temperature: float = Field(default=0.0, ge=0.0)
    seed: int = 0
    top_logprobs: int = Field(default=10, ge=1, le=20)
    grouping: Literal["packed", "sub_dimension"] = "packed"
    definition: Literal["after", "before"] = "after"
    shuffle_seed: int | None = None
    preset: Literal["paper"] | None = None

    renamed: ClassVar[dict[str, tuple[str, Callable[[Any], Any]]]] = {"reask": ("reasks", reasks_from_bool)}

    @model_validator(mode="before")
    @classmethod
    def _preset(cls, values: Any) -> Any:
        return apply_preset(values, PRESETS, "checkeval")


# The paper's settings (CheckEval 2025, section 4.4: temperature 1, n 1, a fixed seed, max_length 200;
# section 3.3 and the released code: questions grouped by sub-dimension; figures 7-8: the definition
# before the texts). The paper fixes the seed without giving it; 42 is the one in the authors' released
# G-Eval inference script.
PRESETS: dict[str, dict[str, Any]] = {
    "paper": {"temperature": 1.0, "seed": 42, "max_tokens": 200, "grouping": "sub_dimension",
              "definition": "before"},
}


#: The stop string after a prompt's last question (``Q5:`` after four questions): how many a stand-in answers.
_NEXT_QUESTION = re.compile(r"^Q(\d+):$")


def checklist_answer(questions: int) -> str:
    """One ``Qk: yes`` / ``Qk: no`` line per question (alternating)."""
    return "\n".join(f"Q{k}: {'yes' if k % 2 else 'no'}" for k in range(1, questions + 1))


class CheckEval(Method):
    """Checklist-based evaluation (CheckEval): yes/no questions per sub-dimension, score = yes / answered."""

    name = "checkeval"
    sequential_calls = False  # its question groups side by side
    Reader = CheckEvalReader
    builds: ClassVar[dict[str, ArtifactKind]] = {"checklist": ArtifactKind(ChecklistOptions, plan_checklist)}
    Options = CheckEvalOptions
    options: CheckEvalOptions

    @property
    def reads_logprobs(self) -> bool:
        """``--soft``: P(yes) read from the log-probabilities at each answer."""
        return self.options.soft

    def __init__(self, options: MethodOptions | dict[str, Any] | None = None) -> None:
        super().__init__(options)
        self.checklist: Checklist | None = None
        self.checklist_spec: str | None = None
        self.checklist_sha: str | None = None
        self.soft_fallback: str | None = None
        # The definition after the texts: every dimension of an output shares the prompt up to it (sample-major);
        # before them (figures 7-8): one dimension over the outputs of a document shares it (dimension-major).
        self.unit_order = "dimension" if self.options.definition == "before" else "sample"

    def settings(self) -> dict[str, Any]:
        """Options plus the checklist's hash, so that a run never resumes with other questions."""
        out = super().settings()
        if self.checklist_sha:
            out["checklist_sha256"] = self.checklist_sha
        return out

    def _load(self, dataset: DatasetInfo, dimensions: list[Dimension]) -> Checklist:
        if self.checklist is None:
            spec = self.options.checklist or self._default_checklist(dataset)
            checklist = load_checklist(spec)
            for d in dimensions:
                cdim = checklist.dimension(d.name)
                if not any(sub.kept() for sub in cdim.sub_dimensions):
                    raise ConfigError(f"checklist {spec!r}: dimension {d.name!r} has no kept question")
            self.checklist, self.checklist_spec = checklist, spec
            self.checklist_sha = checklist_hash(checklist)
        return self.checklist

    def _default_checklist(self, dataset: DatasetInfo) -> str:
        """The checklist the dataset's card names; under the paper preset, its released question pool."""
        return default_checklist(dataset, paper=self.options.preset == "paper")

    @classmethod
    def score_range(cls, dimension: Dimension) -> tuple[float, float, bool]:
        """A share in [0, 1] whatever the dimension's scale."""
        return 0.0, 1.0, False

    def standin(self, request: Request, stage: str) -> str | None:
        """One ``Qk: yes`` / ``Qk: no`` line per question of a prompt (counted from its stop string)."""
        questions = next((int(m.group(1)) - 1 for s in request.stop if (m := _NEXT_QUESTION.match(s))), None)
        return checklist_answer(questions) if questions is not None else None

    async def prepare(self, ctx: RunContext) -> dict[str, Any]:
        checklist = self._load(ctx.dataset.info, ctx.dimensions)
        stored = ctx.artifacts("checklist", dump_checklist(checklist))
        self._soft_active(ctx)
        return {"checklist": {
            "name": checklist.name, "spec": self.checklist_spec, "path": str(checklist_path(self.checklist_spec or "")),
            "sha256": self.checklist_sha, "stored_as": stored, "source": checklist.source,
            "questions": {d.name: sum(len(s.kept()) for s in checklist.dimension(d.name).sub_dimensions)
                          for d in ctx.dimensions}}}

    def _soft_active(self, ctx: RunContext) -> bool:
        """Whether P(yes) can be read; if --soft was asked of a judge without log-probabilities, say so once."""
        if not self.options.soft:
            return False
        if ctx.judge.supports_logprobs:
            return True
        if self.soft_fallback is None:
            self.soft_fallback = (f"{ctx.judge.identity.label} gives no log-probabilities: --soft falls back to "
                                  "the binary yes-ratio (score = yes / answered)")
            ctx.note("fallback", self.soft_fallback)
        return False

    schema_stages = ("score", "reask")

    def answer_schema(self, stage: str, dimension: Dimension | None = None, **shape: Any) -> dict | None:
        """One ``"yes"`` / ``"no"`` per question id of the prompt (``shape``: ``questions``, their count)."""
        return answers_schema(int(shape["questions"])) if stage in self.schema_stages else None

    def _request(self, prompt: str, n_questions: int, soft: bool, schema: str | None = None) -> Request:
        max_tokens = self.options.max_tokens or min(200, 24 * n_questions + 16)
        # Once the judge starts a question that is not there, every answer has been given: stop.
        return Request.chat(prompt, temperature=self.options.temperature, max_tokens=max_tokens,
                            seed=self.options.seed, top_logprobs=self.options.top_logprobs if soft else None,
                            stop=() if schema else (f"Q{n_questions + 1}:",), json_schema=schema)

    async def _ask(self, sample: Sample, dim: ChecklistDimension, group: list[Asked], ctx: RunContext,
                   stage: str, soft: bool, reasks: int = 0) -> tuple[dict[str, Any], list[QuestionResult]]:
        """Ask one group of questions; return its trace entry and a result per question.

        A group's missing answers are not re-asked here (:meth:`score` asks each alone); a question asked alone
        is re-asked in a follow-up turn up to ``reasks`` times while it stays unanswered.
        """
        schema = self.schema_text(ctx, stage, questions=len(group))
        prompt = build_prompt(sample, dim.name, dim.definition, group, ctx.dataset.info,
                              definition_first=self.options.definition == "before", json=schema is not None)
        parse = parse_json_answers if schema is not None else parse_answers

        def read(response: Response, _: Request) -> Read[ParsedAnswers]:
            parsed = parse(response.text, len(group), prompt)
            missing = [k for k in range(1, len(group) + 1) if k not in parsed.answers]
            error = None if not missing or len(group) > 1 else parsed.reasons.get(1, "not answered")
            return Read(parsed, error)

        got = await ask(ctx.judge, self._request(prompt, len(group), soft, schema), stage=stage, read=read,
                        reasks=reasks)
        choice, parsed = got.response.choices[0], got.last.value
        assert parsed is not None
        results = []
        for k, asked in enumerate(group, start=1):
            r = QuestionResult(asked)
            ans = parsed.answers.get(k)
            if ans is not None:
                r.answer = ans.yes
                if soft:
                    r.p_yes, r.note = _soft(choice, ans.offset)
            else:
                r.note = parsed.reasons.get(k, "not answered")
            results.append(r)
        calls = got.trace()  # the entry is the call whose answers were taken; earlier ones under "attempts"
        entry = {"questions": [a.id for a in group], **calls[-1], "notes": parsed.notes}
        if len(calls) > 1:
            entry["attempts"] = calls
        return entry, results

    async def score(self, sample: Sample, dimension: Dimension, ctx: RunContext) -> Judgment:
        checklist = self._load(ctx.dataset.info, ctx.dimensions)
        cdim = checklist.dimension(dimension.name)
        soft = self._soft_active(ctx)
        groups = plan_groups(cdim, 1, "packed") if self.options.per_question else \
            plan_groups(cdim, self.options.group_size, self.options.grouping)
        if self.options.shuffle_seed is not None:
            groups = [shuffled(g, self.options.shuffle_seed, sample.id, dimension.name, str(i))
                      for i, g in enumerate(groups)]
        asked = await asyncio.gather(*(self._ask(sample, cdim, g, ctx, "score", soft) for g in groups))
        results: list[QuestionResult] = []
        group_trace = []
        asked_alone: set[int] = set()  # results whose question was already asked on its own
        for gi, (entry, rs) in enumerate(asked, start=1):
            group_trace.append(entry)
            for r in rs:
                r.where = f"group {gi}"
                if len(rs) == 1:
                    asked_alone.add(id(r))
            results.extend(rs)
        reasks = []
        # A question asked alone (per-question mode, or a group of one) would get the identical prompt again.
        missing = [r for r in results if r.answer is None and id(r) not in asked_alone]
        if self.options.reasks and missing:
            again = await asyncio.gather(*(self._ask(sample, cdim, [r.asked], ctx, "reask", soft,
                                                     self.options.reasks - 1) for r in missing))
            for r, (entry, (new,)) in zip(missing, again, strict=True):
                reasks.append(entry)
                r.answer, r.p_yes, r.note, r.where = new.answer, new.p_yes, new.note, r.where + ", re-asked alone"
        return self._judgment(sample, dimension, ctx, results, group_trace, reasks, soft)

    def _judgment(self, sample: Sample, dimension: Dimension, ctx: RunContext, results: list[QuestionResult],
                  groups: list[dict[str, Any]], reasks: list[dict[str, Any]], soft: bool) -> Judgment:
        agg = aggregate(results)
        overall = agg["overall"]
        binary, soft_score = overall["yes_ratio"], overall["p_yes_mean"]
        fallback = self.soft_fallback if self.options.soft and not soft else None
        if self.options.soft and soft and soft_score is None and binary is not None:
            fallback = "no P(yes) could be read at any answer position: score is the binary yes-ratio"
            ctx.note("fallback", f"checkeval --soft: {fallback}")
        use_soft = self.options.soft and soft_score is not None
        score = soft_score if use_soft else binary
        trace = {
            "checklist": {"name": self.checklist.name if self.checklist else None, "sha256": self.checklist_sha},
            "mode": "per_question" if self.options.per_question else "grouped", "answer_format": ctx.answer_format,
            "score_kind": "soft" if use_soft else "binary",
            "binary_score": binary, "soft_score": soft_score, "soft_fallback": fallback,
            "answered": overall["answered"], "yes": overall["yes"], "missing": overall["missing"],
            "asked": overall["asked"],
            "sub_dimensions": agg["sub_dimensions"],
            "questions": [r.to_trace() for r in results],
            "groups": groups, "reasks": reasks,
        }
        error = None
        if score is None:
            again = ", even when re-asked alone" if reasks else ""
            error = f"no question of {overall['asked']} got a readable yes/no answer{again}"
        return self.judgment(sample, dimension, ctx, score=score, trace=trace, error=error)


def _soft(choice: Choice, offset: int) -> tuple[float | None, str]:
    if not choice.logprobs:
        return None, "the judge returned no log-probabilities for this answer"
    p, why = p_yes_at(choice.logprobs, choice.text, offset)
    return p, why
