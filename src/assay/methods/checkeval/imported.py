"""How ``assay import`` reads checkeval's answers written outside assay: the live run's reader and aggregation,
given the prompt assay itself builds for the sample, no judge called (pure)."""

from __future__ import annotations

from typing import Any

from assay.answers.imported import plain
from assay.datasets import Dataset
from assay.errors import ConfigError, InputError
from assay.methods.base import AnswerReader, ImportedRead
from assay.types import Sample


class CheckEvalReader(AnswerReader):
    """CheckEval: the judge's yes/no answers to a checklist's kept questions, read and aggregated as live.

    The answer field holds either one text answering the dimension's whole checklist (``Q1: yes``...,
    numbered in the checklist's order), or a list with one answer text per question in that order, or
    an object ``{question id: answer text}``.
    """

    method = "checkeval"
    options = ("checklist",)

    def __init__(self, dataset: Dataset, dimension: str, answers: str, *, checklist: str | None = None,
                 strict: bool = False) -> None:
        from assay.methods.checkeval.checklist import checklist_hash
        from assay.methods.checkeval.prompts import Asked
        from assay.methods.checkeval.shipped import default_checklist, load_checklist

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
        (text,) = self.texts(rec, file, record)
        return [(list(self.questions), text)]

    def read(self, sample: Sample, rec: dict[str, Any], *, file: str, record: Any) -> ImportedRead:
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
                 "answer_format": "free", "score_kind": "binary", "binary_score": overall["yes_ratio"],
                 "soft_score": None,
                 "soft_fallback": None, "answered": overall["answered"], "yes": overall["yes"],
                 "missing": overall["missing"], "asked": overall["asked"], "sub_dimensions": agg["sub_dimensions"],
                 "questions": [r.to_trace() for r in ordered], "groups": groups, "reasks": []}
        error = None if overall["yes_ratio"] is not None else \
            f"no question of {overall['asked']} got a readable yes/no answer"
        return overall["yes_ratio"], trace, error
