"""Each method's reading of an imported answer: the live run's reader and aggregation, with no judge call (pure).

A reader knows one method and one dimension; :meth:`AnswerReader.read` turns one record's answer into
the score, trace and error that a live judgment of that method would carry, given the prompt assay
itself builds for the sample (so that echoes of the judged texts or the instructions are not read).
The trace has the live judgment's keys; values that only a live call knows (the prompt's hash, the
steps' hash, re-asks) are None or empty.
"""

from __future__ import annotations

import abc
from typing import Any

from assay.datasets import Dataset
from assay.errors import ConfigError, InputError
from assay.importer.match import answer_texts, as_response, parse_logprobs, plain
from assay.types import Dimension, Sample

Read = tuple[float | None, dict[str, Any], str | None]


class AnswerReader(abc.ABC):
    """Reads one method's answers for one dimension of a dataset.

    Attributes:
        method: The method's name, stamped on the judgments.
        dimension: The dimension judged (for GER-Eval, the rubric criterion).
    """

    method: str

    def __init__(self, dataset: Dataset, dimension: str, answers: str, *, strict: bool = False) -> None:
        self.dataset, self.answers, self.strict = dataset, answers, strict
        self.dimension = self._dimension(dimension)

    def _dimension(self, name: str) -> Dimension:
        return self.dataset.dimensions([name])[0]

    def settings(self) -> dict[str, Any]:
        """What the run's manifest records as method settings (every import into one run must agree)."""
        return {"imported": True, "strict_ratings": self.strict}

    def artifacts(self) -> dict[str, Any]:
        """What the manifest records about the artifacts the answers were read against."""
        return {}

    @abc.abstractmethod
    def read(self, sample: Sample, rec: dict[str, Any], *, file: str, record: Any) -> Read:
        """The score (or None), the trace and the error of one record's answer.

        Raises:
            InputError: The record's answer field is missing or of the wrong shape.
        """

    def _texts(self, rec: dict[str, Any], file: str, record: Any, *, many: bool = False) -> list[str]:
        return answer_texts(rec, self.answers, file=file, record=record, many=many)


class DirectReader(AnswerReader):
    """The direct baseline: one answer per item, one rating read from it."""

    method = "direct"

    def read(self, sample: Sample, rec: dict[str, Any], *, file: str, record: Any) -> Read:
        from assay.answers.parsing import parse_rating
        from assay.methods.direct import build_prompt

        (text,) = self._texts(rec, file, record)
        prompt = build_prompt(sample, self.dimension, self.dataset.info)
        parsed = parse_rating(text, self.dimension.scale, self.dimension.name.replace("_", " "), prompt=prompt,
                              strict=self.strict)
        trace = {"answer": text, "parse_error": parsed.error, "answer_format": "free",
                 **({"flags": list(parsed.flags)} if parsed.flags else {})}
        return parsed.value, trace, (f"unparseable answer: {parsed.error}" if parsed.error else None)


class GEvalReader(AnswerReader):
    """G-Eval: n sampled answers (``sampling``), one answer (``greedy``) or top-token log-probabilities."""

    method = "geval"

    def __init__(self, dataset: Dataset, dimension: str, answers: str, *, mode: str | None = None,
                 logprobs: str | None = None, strict: bool = False) -> None:
        super().__init__(dataset, dimension, answers, strict=strict)
        if mode == "logprobs" and not logprobs:
            raise ConfigError("geval --mode logprobs needs --logprobs FIELD (the top-token log-probabilities)")
        if logprobs and mode not in (None, "logprobs"):
            raise ConfigError(f"--logprobs is read in the logprobs mode only, not with --mode {mode}")
        if mode not in (None, "sampling", "greedy", "logprobs"):
            raise ConfigError(f"geval --mode {mode!r}: choose sampling, greedy or logprobs")
        if logprobs and not self.dimension.scale.integer:
            raise ConfigError(f"geval logprobs needs an integer scale; {self.dimension.name} is continuous")
        self.mode = "logprobs" if logprobs else (mode or "sampling")
        self.logprobs = logprobs

    def settings(self) -> dict[str, Any]:
        return {**super().settings(), "mode": self.mode}

    def read(self, sample: Sample, rec: dict[str, Any], *, file: str, record: Any) -> Read:
        from assay.methods.geval.method import read_answer
        from assay.methods.geval.prompts import build_prompt, task_criteria

        texts = self._texts(rec, file, record, many=self.mode == "sampling")
        lps = None
        if self.logprobs:
            if self.logprobs not in rec or rec[self.logprobs] is None:
                raise InputError("missing field (named by --logprobs)", file=file, record=record, field=self.logprobs)
            lps = parse_logprobs(rec[self.logprobs], file=file, record=record, name=self.logprobs)
        info = self.dataset.info
        prompt = build_prompt(sample, self.dimension, info, task_criteria(info, self.dimension), None)
        estimate, read = read_answer(as_response(texts, lps), self.mode, self.dimension,  # type: ignore[arg-type]
                                     prompt=prompt, strict=self.strict)
        trace = {"mode": self.mode, "answer_format": "free", "steps_sha256": None, "criteria_source": None,
                 "prompt_sha256": None,
                 "distribution": {str(k): round(v, 6) for k, v in estimate.distribution.items()}, **read}
        return estimate.score, trace, estimate.error


class CheckEvalReader(AnswerReader):
    """CheckEval: the judge's yes/no answers to a checklist's kept questions, read and aggregated as live.

    The answer field holds either one text answering the dimension's whole checklist (``Q1: yes``...,
    numbered in the checklist's order), or a list with one answer text per question in that order, or
    an object ``{question id: answer text}``.
    """

    method = "checkeval"

    def __init__(self, dataset: Dataset, dimension: str, answers: str, *, checklist: str | None = None,
                 strict: bool = False) -> None:
        from assay.methods.checkeval.checklist import checklist_hash, default_checklist, load_checklist
        from assay.methods.checkeval.prompts import Asked

        super().__init__(dataset, dimension, answers, strict=strict)
        self.spec = checklist or default_checklist(dataset.info)
        self.checklist = load_checklist(self.spec)
        self.cdim = self.checklist.dimension(self.dimension.name)
        self.questions = [Asked(q.id or "", sub.name, q.text) for sub in self.cdim.sub_dimensions for q in sub.kept()]
        if not self.questions:
            raise ConfigError(f"checklist {self.spec!r}: dimension {self.dimension.name!r} has no kept question")
        self.sha = checklist_hash(self.checklist)

    def settings(self) -> dict[str, Any]:
        return {**super().settings(), "checklist_sha256": self.sha}

    def artifacts(self) -> dict[str, Any]:
        return {"checklist": {"name": self.checklist.name, "spec": self.spec, "sha256": self.sha,
                              "questions": {self.dimension.name: len(self.questions)}}}

    def _answers(self, rec: dict[str, Any], file: str, record: Any) -> list[tuple[list[Any], str]]:
        """The answer texts with the questions each one answers (one text for all, or one per question)."""
        value = plain(rec.get(self.answers))
        if isinstance(value, dict):
            unknown = [k for k in value if k not in {q.id for q in self.questions}]
            if unknown or not all(isinstance(v, str) for v in value.values()):
                raise InputError(f"expected {{question id: answer text}} with the checklist's ids; unknown or "
                                 f"non-text: {(unknown or list(value))[:3]}", file=file, record=record,
                                 field=self.answers)
            return [([q], value[q.id]) for q in self.questions if q.id in value]
        if isinstance(value, list):
            if len(value) != len(self.questions) or not all(isinstance(v, str) for v in value):
                raise InputError(f"expected {len(self.questions)} answer texts (one per kept question of "
                                 f"{self.dimension.name}, in the checklist's order), got {len(value)}",
                                 file=file, record=record, field=self.answers)
            return [([q], t) for q, t in zip(self.questions, value, strict=True)]
        (text,) = self._texts(rec, file, record)
        return [(list(self.questions), text)]

    def read(self, sample: Sample, rec: dict[str, Any], *, file: str, record: Any) -> Read:
        from assay.methods.checkeval.aggregate import QuestionResult, aggregate
        from assay.methods.checkeval.parse import parse_answers
        from assay.methods.checkeval.prompts import build_prompt

        info, results, groups = self.dataset.info, {}, []
        for gi, (questions, text) in enumerate(self._answers(rec, file, record), start=1):
            prompt = build_prompt(sample, self.cdim.name, self.cdim.definition, questions, info)
            parsed = parse_answers(text, len(questions), prompt)
            for k, q in enumerate(questions, start=1):
                ans = parsed.answers.get(k)
                results[q.id] = QuestionResult(q, answer=None if ans is None else ans.yes, where=f"group {gi}",
                                               note="" if ans else parsed.reasons.get(k, "not answered"))
            groups.append({"questions": [q.id for q in questions], "prompt_sha256": None, "answer": text,
                           "notes": parsed.notes})
        ordered = [results.get(q.id) or QuestionResult(q, note="not answered (no answer in the file)")
                   for q in self.questions]
        overall = (agg := aggregate(ordered))["overall"]
        trace = {"checklist": {"name": self.checklist.name, "sha256": self.sha},
                 "mode": "grouped" if len(groups) == 1 and len(self.questions) > 1 else "per_question",
                 "answer_format": "free",
                 "score_kind": "binary", "binary_score": overall["yes_ratio"], "soft_score": None,
                 "soft_fallback": None, "answered": overall["answered"], "yes": overall["yes"],
                 "missing": overall["missing"], "asked": overall["asked"], "sub_dimensions": agg["sub_dimensions"],
                 "questions": [r.to_trace() for r in ordered], "groups": groups, "reasks": []}
        error = None if overall["yes_ratio"] is not None else \
            f"no question of {overall['asked']} got a readable yes/no answer"
        return overall["yes_ratio"], trace, error


class GerEvalReader(AnswerReader):
    """GER-Eval: the judge's ``{"reasoning": ..., "score": ...}`` answer on one rubric criterion, validated as live."""

    method = "gereval"

    def __init__(self, dataset: Dataset, dimension: str, answers: str, *, rubric: str | None = None,
                 strict: bool = False) -> None:
        from assay.methods.gereval.rubric import human_rubric, load_rubric

        if not rubric:
            raise ConfigError("gereval import needs --rubric FILE, human:<dataset> or human (the criteria scored)")
        self.rubric_spec = rubric
        self.rubric = human_rubric(dataset.info) if rubric == "human" else load_rubric(rubric)
        super().__init__(dataset, dimension, answers, strict=strict)

    def _dimension(self, name: str) -> Dimension:
        from assay.errors import did_you_mean

        by_name = {d.name: d for d in self.rubric.dimensions()}
        if name not in by_name:
            raise ConfigError(f"rubric {self.rubric_spec} has no criterion {name!r}."
                              + did_you_mean(name, list(by_name)))
        return by_name[name]

    def settings(self) -> dict[str, Any]:
        return {**super().settings(), "rubric": self.rubric_spec, "criteria_sha256": self.rubric.content_hash()}

    def artifacts(self) -> dict[str, Any]:
        return {"rubric": {"spec": self.rubric_spec, "label": self.rubric.label,
                           "criteria_sha256": self.rubric.content_hash(),
                           "criteria": [c.name for c in self.rubric.criteria]}}

    def read(self, sample: Sample, rec: dict[str, Any], *, file: str, record: Any) -> Read:
        from assay.methods.gereval.method import build_scoring_prompt, validate_score
        from assay.methods.gereval.reprompt import check_answer
        from assay.methods.gereval.rubric import CategoricalScale, task_text

        (text,) = self._texts(rec, file, record)
        criterion = self.rubric.criterion(self.dimension.name)
        info = self.dataset.info
        prompt = build_scoring_prompt(task_text(info).scoring, info, criterion, sample, "")
        value, error = check_answer(text, lambda o: validate_score(o, criterion, strict=self.strict), prompt)
        trace: dict[str, Any] = {"criterion": criterion.name, "rubric": self.rubric.content_hash(),
                                 "prompt_sha256": None, "attempts": [{"answer": text, "error": error}], "reasks": 0,
                                 "shots": 0, "demonstrations": [], "answer_format": "free"}
        if isinstance(criterion.scale, CategoricalScale):
            trace["mapping"] = criterion.scale.mapping()
        if value is None:
            return None, trace, f"parse failure (imported answer, not re-asked): {error}"
        trace.update(reasoning=value.reasoning, label=value.label)
        if value.flags:
            trace["flags"] = list(value.flags)
        return value.value, trace, None


def make_reader(method: str, dataset: Dataset, dimension: str, answers: str, *, mode: str | None = None,
                logprobs: str | None = None, checklist: str | None = None, rubric: str | None = None,
                strict: bool = False) -> AnswerReader:
    """The reader of a method's imported answers, its options checked before any file is read.

    Raises:
        ConfigError: An unknown method, or an option the method does not take.
    """
    from assay.importer.match import METHODS

    given = {"--mode": mode, "--logprobs": logprobs, "--checklist": checklist, "--rubric": rubric}
    takes = {"direct": (), "geval": ("--mode", "--logprobs"), "checkeval": ("--checklist",),
             "gereval": ("--rubric",)}
    if method not in takes:
        raise ConfigError(f"assay import reads the answers of {', '.join(METHODS)}; not {method!r}")
    extra = [k for k, v in given.items() if v and k not in takes[method]]
    if extra:
        raise ConfigError(f"{', '.join(extra)} does not apply to method {method}")
    if method == "direct":
        return DirectReader(dataset, dimension, answers, strict=strict)
    if method == "geval":
        return GEvalReader(dataset, dimension, answers, mode=mode, logprobs=logprobs, strict=strict)
    if method == "checkeval":
        return CheckEvalReader(dataset, dimension, answers, checklist=checklist, strict=strict)
    return GerEvalReader(dataset, dimension, answers, rubric=rubric, strict=strict)
