"""Reading a judge's answer: ratings on a scale and JSON objects, with failures as data, never as zeros."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from assay.types import Scale

_NUM = r"[-+]?\d+(?:\.\d+)?"
_MARKUP = re.compile(r"[*_`#]+")


@dataclass(frozen=True)
class Parsed:
    """The outcome of parsing: a value, or the reason there is none (with the raw text kept)."""

    value: Any
    error: str | None
    raw: str

    @property
    def ok(self) -> bool:
        return self.error is None


def parse_rating(text: str, scale: Scale, label: str | None = None) -> Parsed:
    """Read one rating from a judge's answer.

    Accepted: ``4``, ``Coherence: 4``, ``4/5``, ``- Fluency: 2``, ``**3**``, ``Score = 4``,
    ``I would give it a 3 out of 5.``, each with extra words around it. A labelled rating
    (the dimension's name, or "score"/"rating") wins over a bare number, and the last
    labelled one wins over earlier ones, as a judge may restate its form. Otherwise the first
    number counts. Values off the scale are rejected, not clipped.

    Args:
        text: The judge's answer.
        scale: The scale the rating must lie on.
        label: The dimension or criterion name the form asks for.
    """
    clean = _MARKUP.sub("", text)
    names = ["score", "rating", "overall score", "final score"] + ([re.escape(label)] if label else [])
    labelled = re.compile(rf"(?:{'|'.join(names)})\s*(?:\([^)]*\))?\s*[:=\-]\s*({_NUM})(?:\s*(?:/|out of)\s*({_NUM}))?",
                          re.IGNORECASE)
    matches = list(labelled.finditer(clean))
    if matches:
        m = matches[-1]
    else:
        m = re.search(rf"(?<![\w.])({_NUM})(?:\s*(?:/|out of)\s*({_NUM}))?", clean)
    if m is None:
        return Parsed(None, "no rating found", text)
    value = float(m.group(1))
    if m.group(2) is not None and float(m.group(2)) != scale.high:
        return Parsed(None, f"rating {m.group(0).strip()!r} is not on the {scale.label()} scale", text)
    if not scale.contains(value):
        return Parsed(None, f"rating {_num(value)} is outside the {scale.label()} scale"
                      + (" or not a whole number" if scale.integer else ""), text)
    return Parsed(value, None, text)


def extract_json(text: str) -> Parsed:
    """Find and decode the JSON object or array in a judge's answer.

    Code fences and prose around the JSON are ignored; the first decodable object (or
    array) wins.
    """
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.DOTALL | re.IGNORECASE)
    candidates = [fenced.group(1)] if fenced else []
    candidates.append(text)
    decoder = json.JSONDecoder()
    for cand in candidates:
        for start, ch in enumerate(cand):
            if ch in "{[":
                try:
                    obj, _end = decoder.raw_decode(cand[start:])
                except json.JSONDecodeError:
                    continue
                return Parsed(obj, None, text)
    return Parsed(None, "no JSON object found", text)


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"
