"""CheckEval's score: the share of yes answers among the questions answered, with what was missing counted."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from assay.methods.checkeval.parse import yes_no
from assay.methods.checkeval.prompts import Asked


@dataclass
class QuestionResult:
    """What became of one question in one judgment."""

    asked: Asked
    answer: bool | None = None
    p_yes: float | None = None
    where: str = ""
    note: str = ""

    def to_trace(self) -> dict[str, Any]:
        return {"id": self.asked.id, "sub_dimension": self.asked.sub_dimension, "text": self.asked.text,
                "answer": None if self.answer is None else yes_no(self.answer),
                "p_yes": None if self.p_yes is None else round(self.p_yes, 6), "asked_in": self.where,
                **({"note": self.note} if self.note else {})}


def aggregate(results: list[QuestionResult]) -> dict[str, Any]:
    """Yes-ratio (yes / answered) and mean P(yes), overall and per sub-dimension.

    Missing answers are left out of every denominator and counted.
    """
    def summary(rs: list[QuestionResult]) -> dict[str, Any]:
        answered = [r for r in rs if r.answer is not None]
        yes = sum(1 for r in answered if r.answer)
        soft = [r.p_yes for r in rs if r.p_yes is not None]
        return {"asked": len(rs), "answered": len(answered), "yes": yes, "missing": len(rs) - len(answered),
                "yes_ratio": yes / len(answered) if answered else None,
                "p_yes_mean": sum(soft) / len(soft) if soft else None, "with_p_yes": len(soft)}

    subs: dict[str, list[QuestionResult]] = {}
    for r in results:
        subs.setdefault(r.asked.sub_dimension, []).append(r)
    return {"overall": summary(results), "sub_dimensions": {k: summary(v) for k, v in subs.items()}}
