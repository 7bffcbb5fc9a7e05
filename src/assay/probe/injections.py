"""The prompt-injection corpus shipped with the package: its reader and how an entry is applied to a sample.

The corpus (``injections.jsonl`` beside this module) holds text that tries to pass for a judge's answer or
to steer it (forged answer lines, fake fences, look-alike Unicode, ...). It was first the test suite's
canary fixture; it ships in the package so that ``assay probe``'s injection check needs nothing from
``tests/``. Each entry names the real SummEval sample it was written for (``base``); the probe applies the
``append`` entries to any run's outputs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from assay.errors import InputError
from assay.types import Sample

INJECTION_MODES = ("append", "replace")


def corpus_path() -> Path:
    """The shipped corpus file."""
    return Path(str(resources.files("assay.probe") / "injections.jsonl"))


@dataclass(frozen=True)
class Injection:
    """One entry of a prompt-injection corpus: text that tries to pass for a judge's answer or to steer it.

    Attributes:
        id: Unique name of the entry.
        category: What it imitates (``forged-direct``, ``fake-fence``, ``unicode``, ...).
        mode: ``append`` (on a new line after the real output) or ``replace`` (instead of it).
        base: The id of the real bundled sample it is applied to.
        text: The injected text.
    """

    id: str
    category: str
    mode: str
    base: str
    text: str


def load_injections(path: str | Path | None = None) -> list[Injection]:
    """Read an injection corpus (JSONL, one :class:`Injection` per line); a bad line names file, line and field.

    Args:
        path: The corpus; the shipped one if None.
    """
    path = Path(path) if path is not None else corpus_path()
    cases: list[Injection] = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"not valid JSON: {exc.msg}", file=str(path), record=f"line {n}") from None
        for name in ("id", "category", "mode", "base", "text"):
            if not isinstance(rec.get(name), str) or not rec[name]:
                raise InputError("missing or not a non-empty string", file=str(path), record=f"line {n}", field=name)
        if rec["mode"] not in INJECTION_MODES:
            raise InputError(f"must be one of {', '.join(INJECTION_MODES)}", file=str(path), record=f"line {n}",
                             field="mode")
        if any(c.id == rec["id"] for c in cases):
            raise InputError(f"duplicate id {rec['id']!r}", file=str(path), record=f"line {n}", field="id")
        cases.append(Injection(**{k: rec[k] for k in ("id", "category", "mode", "base", "text")}))
    return cases


def inject(sample: Sample, case: Injection) -> Sample:
    """The sample with the injection applied: a new id and system, the entry named in ``metadata``."""
    output = case.text if case.mode == "replace" else f"{sample.output.rstrip()}\n{case.text}"
    return sample.model_copy(update={
        "id": f"{sample.id}+{case.id}", "system_id": f"{sample.system_id}+{case.id}", "output": output,
        "metadata": {**sample.metadata, "injection": case.id, "category": case.category, "base": sample.id}})
