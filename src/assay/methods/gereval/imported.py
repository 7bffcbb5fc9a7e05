"""How ``assay import`` reads gereval's answers written outside assay: the live run's reader and aggregation,
given the prompt assay itself builds for the sample, no judge called (pure)."""

from __future__ import annotations

from typing import Any

from assay.datasets import Dataset
from assay.errors import ConfigError
from assay.methods.base import AnswerReader, ImportedRead
from assay.types import Dimension, Sample


class GerEvalReader(AnswerReader):
    """GER-Eval: the judge's ``{"reasoning": ..., "score": ...}`` answer on one rubric criterion, validated as live."""

    method = "gereval"
    options = ("rubric",)

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

    def read(self, sample: Sample, rec: dict[str, Any], *, file: str, record: Any) -> ImportedRead:
        from assay.methods.gereval.method import build_scoring_prompt, validate_score
        from assay.methods.gereval.reprompt import check_answer
        from assay.methods.gereval.rubric import CategoricalScale, task_text

        (text,) = self.texts(rec, file, record)
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
