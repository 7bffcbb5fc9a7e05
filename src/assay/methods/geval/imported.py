"""How ``assay import`` reads geval's answers written outside assay: the live run's reader and aggregation,
given the prompt assay itself builds for the sample, no judge called (pure)."""

from __future__ import annotations

from typing import Any

from assay.answers.imported import as_response, parse_logprobs
from assay.datasets import Dataset
from assay.errors import ConfigError, InputError
from assay.methods.base import AnswerReader, ImportedRead
from assay.types import Sample


class GEvalReader(AnswerReader):
    """G-Eval: n sampled answers (``sampling``), one answer (``greedy``) or top-token log-probabilities."""

    method = "geval"
    options = ("mode", "logprobs")

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

    def read(self, sample: Sample, rec: dict[str, Any], *, file: str, record: Any) -> ImportedRead:
        from assay.methods.geval.method import read_answer
        from assay.methods.geval.prompts import build_prompt, task_criteria

        texts = self.texts(rec, file, record, many=self.mode == "sampling")
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
