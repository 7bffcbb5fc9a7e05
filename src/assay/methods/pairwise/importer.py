"""Importing pairwise verdicts judged elsewhere (FastChat's ``gpt-4_pair.jsonl``: both games of each pair), read by
the live method's verdict reader and decided by its rule (pure, no judge call).

A FastChat record names the input (``question_id``), the two models (``model_1``, ``model_2``), the judge's text of
game 1 (``g1_judgment``: model_1 shown as assistant A) and of game 2 (``g2_judgment``: model_2 shown as A), and the
winners FastChat read from them (``g1_winner`` / ``g2_winner``: ``model_1``, ``model_2``, ``tie`` or ``error``).
assay reads the verdicts from the texts itself, with the live rules (echoes blanked, two verdicts ambiguous), and
keeps FastChat's winners in the trace beside them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from assay.datasets import Dataset
from assay.datasets.readers import Records
from assay.errors import ConfigError, InputError
from assay.methods.base import AnswerReader, ImportedRead
from assay.methods.pairwise.pairs import PAIR_KEY, pair_sample
from assay.methods.pairwise.parse import decide, parse_verdict, winner
from assay.methods.pairwise.prompts import Side, build_prompt
from assay.types import Sample

#: The file fields of the two models, and the field a record's pair id is put in for matching.
MODEL_FIELDS = ("model_1", "model_2")
PAIR_FIELD = "_assay_pair_id"
#: FastChat's winner of each game, as the pair's output: game 1 shows model_1 first, game 2 model_2 first.
_FILE_WINNER = {"model_1": "A", "model_2": "B", "tie": "C"}


class PairwiseReader(AnswerReader):
    """Pairwise verdicts, one record per pair with both orders' answer texts: ``--answers G1_FIELD,G2_FIELD``
    (FastChat: ``g1_judgment,g2_judgment``; the first holds the answer with model_1 shown first)."""

    method = "pairwise"
    default_match = "question_id=doc_id"  # FastChat's input field

    def __init__(self, dataset: Dataset, dimension: str, answers: str, *, strict: bool = False) -> None:
        fields = [f.strip() for f in answers.split(",") if f.strip()]
        if len(fields) != 2:
            raise ConfigError(f"pairwise --answers {answers!r}: name the two orders' answer fields, "
                              "e.g. g1_judgment,g2_judgment (FastChat)")
        super().__init__(dataset, dimension, answers, strict=strict)
        self.fields = fields

    def settings(self) -> dict[str, Any]:
        return {"imported": True, "inconsistent": "tie"}

    def work_items(self, dataset: Dataset, records: Records, match: list[tuple[str, str]], *,
                   file: str = "") -> tuple[Dataset, Records, list[tuple[str, str]]]:
        """The pairs the records name, as pair samples, and the records keyed by pair id for matching.

        ``match`` names the record field holding the input (``FIELD=doc_id``; default ``question_id``). A record
        whose input or models have no output in the dataset stays unmatched (counted, named in the notes).

        Raises:
            InputError: A record without the input or model fields (naming file, record and field).
        """
        doc_field = next((f for f, s in match if s == "doc_id"), "question_id")
        outputs = {(s.doc_id, s.system_id): s for s in dataset.samples}
        pairs: dict[str, Sample] = {}
        keyed = []
        for i, rec in enumerate(records):
            for name in (doc_field, *MODEL_FIELDS):
                if rec.get(name) is None:
                    raise InputError("missing field (pairwise records name the input and both models)",
                                     file=file, record=records.where(i), field=name)
            doc = str(rec[doc_field]).strip()
            a, b = (outputs.get((doc, str(rec[m]).strip())) for m in MODEL_FIELDS)
            key = ""
            if a is not None and b is not None:
                pair = pair_sample(a, b)
                pairs.setdefault(pair.id, pair)
                key = pair.id
            keyed.append({**rec, PAIR_FIELD: key})
        if not pairs:
            raise InputError(f"no record names an input ({doc_field}) and two models (model_1, model_2) with outputs "
                             "in the dataset", file=file)
        items = replace(dataset, samples=list(pairs.values()), pool=list(pairs.values()))
        return items, Records(keyed, records.places), [(PAIR_FIELD, "id")]

    def read(self, sample: Sample, rec: dict[str, Any], *, file: str, record: Any) -> ImportedRead:
        sides = sample.metadata[PAIR_KEY]
        a, b = Side(sides["a"]["output"], "A"), Side(sides["b"]["output"], "B")
        trace: dict[str, Any] = {
            "pair": {k: {"id": v["id"], "system_id": v["system_id"], "length": len(v["output"]),
                         "human": v["human"].get(self.dimension.name), "output": v["output"]}
                     for k, v in sides.items()},
            "orders": {}}
        winners: dict[str, str | None] = {}
        for (key, first), field in zip((("ab", "A"), ("ba", "B")), self.fields, strict=True):
            text = rec.get(field)
            if not isinstance(text, str):
                raise InputError("missing or not a text (the judge's answer for this order)", file=file, record=record,
                                 field=field)
            shown = (a, b) if first == "A" else (b, a)
            prompt = build_prompt(sample, *shown, self.dimension, self.dataset.info)
            parsed = parse_verdict(text, prompt=prompt)
            winners[key] = winner(parsed.value, first)
            file_winner = _FILE_WINNER.get(str(rec.get(f"g{1 if first == 'A' else 2}_winner")))
            trace["orders"][key] = {"first": first, "verdict": parsed.value, "winner": winners[key], "answer": text,
                                    "error": parsed.error, "calls": [], "file_winner": file_winner}
        trace["disagrees_with_file"] = [k for k, o in trace["orders"].items()
                                        if o["file_winner"] is not None and o["file_winner"] != o["winner"]]
        score, error = decide(trace, winners, "tie")
        return score, trace, error
