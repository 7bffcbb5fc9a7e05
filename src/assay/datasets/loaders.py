"""Layout readers: each turns one benchmark's public file layout into validated Samples (a card's ``reader``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from statistics import mean
from typing import Any

from assay.datasets.readers import Record, Records, field, number, read_records, text
from assay.errors import InputError
from assay.types import Sample

Loader = Callable[[Path], list[Sample]]


def _ratings(rec: Record, keys: Iterable[str], *, file: str, record: int | str,
             source: dict[str, Any] | None = None) -> dict[str, float]:
    src = rec if source is None else source
    return {k: number(src[k], file=file, record=record, name=k) for k in keys if k in src and src[k] not in ("", None)}


def _doc_index(key: str, seen: dict[str, str], prefix: str) -> str:
    if key not in seen:
        seen[key] = f"{prefix}{len(seen):03d}"
    return seen[key]


def load_summeval(path: Path) -> list[Sample]:
    """SummEval in either public layout, recognised from the records.

    - UniEval/G-Eval ``summeval.json``: ``doc_id``, ``system_id``, ``source``, ``reference``,
      ``system_output``, ``scores`` (expert means).
    - The original release's ``model_annotations.aligned.paired.jsonl``: ``id``, ``model_id``,
      ``decoded``, ``text``, ``references``, ``expert_annotations`` (3 dicts); the score is the
      experts' mean and each expert's rating is kept in ``annotators``.
    """
    records = read_records(path)
    if records and "expert_annotations" in records[0]:
        return _summeval_release(records, str(path))
    out = []
    for i, r in enumerate(records):
        at = records.where(i)
        f = str(path)
        doc, sys_ = field(r, "doc_id", file=f, record=at), field(r, "system_id", file=f, record=at)
        scores = field(r, "scores", file=f, record=at, kind=dict)
        out.append(Sample(
            id=f"{doc}:{sys_}", doc_id=doc, system_id=sys_,
            source=field(r, "source", file=f, record=at), output=text(r, "system_output", file=f, record=at),
            reference=field(r, "reference", file=f, record=at, optional=True),
            human=_ratings(scores, ["coherence", "consistency", "fluency", "relevance", "overall"],
                           file=f, record=at),
        ))
    return out


def _summeval_release(records: Records, f: str) -> list[Sample]:
    out = []
    dims = ["coherence", "consistency", "fluency", "relevance"]
    for i, r in enumerate(records):
        at = records.where(i)
        experts = field(r, "expert_annotations", file=f, record=at, kind=list)
        if not experts:
            raise InputError("no expert annotations", file=f, record=at, field="expert_annotations")
        per: dict[str, list[float]] = {d: [] for d in dims}
        for e, ann in enumerate(experts):
            if not isinstance(ann, dict):
                raise InputError("expected an object", file=f, record=at, field=f"expert_annotations[{e}]")
            for d in dims:
                per[d].append(number(ann.get(d), file=f, record=at, name=f"expert_annotations[{e}].{d}"))
        refs = r.get("references") or []
        doc, sys_ = field(r, "id", file=f, record=at), field(r, "model_id", file=f, record=at)
        out.append(Sample(
            id=f"{doc}:{sys_}", doc_id=doc, system_id=sys_, source=field(r, "text", file=f, record=at),
            output=text(r, "decoded", file=f, record=at), reference=refs[0] if refs else None,
            human={d: mean(v) for d, v in per.items()}, annotators=per,
            metadata={"references": refs},
        ))
    return out


def load_unieval_dialogue(path: Path) -> list[Sample]:
    """Topical-Chat in the UniEval layout: ``source`` (history), ``context`` (fact), ``system_output``."""
    records = read_records(path)
    seen: dict[str, str] = {}
    out = []
    f = str(path)
    for i, r in enumerate(records):
        at = records.where(i)
        src = field(r, "source", file=f, record=at)
        doc = _doc_index(src, seen, "ctx")
        sys_ = field(r, "system_id", file=f, record=at)
        scores = field(r, "scores", file=f, record=at, kind=dict)
        out.append(Sample(
            id=f"{doc}:{sys_}", doc_id=doc, system_id=sys_, source=src,
            output=text(r, "system_output", file=f, record=at),
            context=field(r, "context", file=f, record=at, optional=True),
            human=_ratings(scores, list(scores), file=f, record=at),
        ))
    return out


def load_usr_persona(path: Path) -> list[Sample]:
    """USR PersonaChat in the ctc-gen-eval layout: ``dialog_history``, ``fact``, ``response``, ``model``."""
    records = read_records(path)
    seen: dict[str, str] = {}
    dims = ["understandable", "natural", "maintains_context", "engaging", "uses_knowledge", "overall"]
    out = []
    f = str(path)
    for i, r in enumerate(records):
        at = records.where(i)
        hist = field(r, "dialog_history", file=f, record=at)
        doc = _doc_index(hist, seen, "ctx")
        sys_ = field(r, "model", file=f, record=at)
        out.append(Sample(
            id=f"{doc}:{sys_}", doc_id=doc, system_id=sys_, source=hist,
            output=text(r, "response", file=f, record=at).strip(),
            context=field(r, "fact", file=f, record=at, optional=True),
            human=_ratings(r, dims, file=f, record=at),
        ))
    return out


def load_qags(path: Path) -> list[Sample]:
    """QAGS (CNN/DM or XSum) in the UniEval layout; ``consistency`` is the share of consistent sentences."""
    records = read_records(path)
    out = []
    f = str(path)
    for i, r in enumerate(records):
        at = records.where(i)
        doc = field(r, "doc_id", file=f, record=at)
        out.append(Sample(
            id=f"{doc}:{field(r, 'system_id', file=f, record=at)}", doc_id=doc,
            system_id=field(r, "system_id", file=f, record=at),
            source=field(r, "source", file=f, record=at), output=text(r, "system_output", file=f, record=at),
            reference=field(r, "reference", file=f, record=at, optional=True),
            human=_ratings(field(r, "scores", file=f, record=at, kind=dict), ["consistency"], file=f, record=at),
        ))
    return out


def load_helpsteer2(path: Path) -> list[Sample]:
    """HelpSteer2: the CSV here or the public JSONL (``prompt``, ``response`` and five 0-4 attributes)."""
    records = read_records(path)
    dims = ["helpfulness", "correctness", "coherence", "complexity", "verbosity"]
    seen: dict[str, str] = {}
    counts: dict[str, int] = {}
    out = []
    f = str(path)
    for i, r in enumerate(records):
        at = records.where(i)
        prompt = field(r, "prompt", file=f, record=at)
        doc = _doc_index(prompt, seen, "p")
        counts[doc] = counts.get(doc, 0) + 1
        out.append(Sample(
            id=f"{doc}:r{counts[doc]}", doc_id=doc, system_id=f"r{counts[doc]}", source=prompt,
            output=text(r, "response", file=f, record=at), human=_ratings(r, dims, file=f, record=at),
        ))
    return out


def load_sumpubmed(path: Path) -> list[Sample]:
    """GER-Eval's SumPubMed sample: ``text`` (article), ``shorter_abstract`` (rated), ``abstract``."""
    records = read_records(path)
    dims = ["Non-Re", "Coh", "Read", "IOF"]  # `FN` is a copy of the file number, not a rating
    out = []
    f = str(path)
    for i, r in enumerate(records):
        at = records.where(i)
        name = str(r.get("filename_text") or f"doc{i:03d}")
        out.append(Sample(
            id=name, doc_id=name, system_id="summary", source=field(r, "text", file=f, record=at),
            output=text(r, "shorter_abstract", file=f, record=at),
            reference=field(r, "abstract", file=f, record=at, optional=True),
            human=_ratings(r, dims, file=f, record=at),
        ))
    return out


#: The layout readers by the name a card gives as its ``reader``.
READERS: dict[str, Loader] = {
    "summeval": load_summeval, "unieval_dialogue": load_unieval_dialogue, "usr_persona": load_usr_persona,
    "qags": load_qags, "helpsteer2": load_helpsteer2, "sumpubmed": load_sumpubmed,
}
