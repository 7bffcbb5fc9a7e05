"""Which pairs a pairwise run judges (pure): every output of an input against every other, against one baseline
system, or K drawn at random; each pair becomes one work item, a :class:`~assay.types.Sample` of its own."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

from assay.errors import ConfigError
from assay.methods.base import shuffled
from assay.types import Sample

_SPEC = re.compile(r"^(all|baseline:(?P<system>.+)|random:(?P<k>\d+))$")
#: Where a pair sample keeps its two outputs.
PAIR_KEY = "pair"


def check_spec(spec: str) -> str:
    """``spec`` if it is ``all``, ``baseline:SYSTEM`` or ``random:K`` (K >= 1).

    Raises:
        ValueError: Anything else (an option error names the option).
    """
    m = _SPEC.match(spec)
    if not m or (m["k"] is not None and int(m["k"]) < 1):
        raise ValueError(f"pairs {spec!r}: use all, baseline:SYSTEM or random:K (K at least 1)")
    return spec


@dataclass
class Pairing:
    """The pair samples, and what was left out and why (noted in the run)."""

    pairs: list[Sample]
    skipped: dict[str, list[str]] = field(default_factory=dict)


def _by_input(samples: list[Sample]) -> dict[str, list[Sample]]:
    groups: dict[str, list[Sample]] = {}
    for s in samples:
        groups.setdefault(s.doc_id, []).append(s)
    return groups


def _side(s: Sample) -> dict[str, object]:
    return {"id": s.id, "system_id": s.system_id, "output": s.output, "human": dict(s.human)}


def pair_sample(a: Sample, b: Sample) -> Sample:
    """One work item: outputs ``a`` and ``b`` of one input. Its ``human`` is the difference of the human means
    (A minus B) per dimension both were rated on, so that a correlation of the preference for A with it reads
    as agreement with people."""
    human = {d: a.human[d] - b.human[d] for d in a.human if d in b.human}
    return Sample(id=f"{a.id}|{b.id}", doc_id=a.doc_id, system_id=f"{a.system_id}|{b.system_id}", source=a.source,
                  output="", reference=a.reference, context=a.context, human=human,
                  metadata={PAIR_KEY: {"a": _side(a), "b": _side(b)}})


def make_pairs(samples: list[Sample], spec: str, seed: int = 0) -> Pairing:
    """The pairs ``spec`` asks for, input by input, in file order.

    ``all``: every two outputs of an input (A the earlier in the file). ``baseline:SYSTEM``: each other output
    (A) against the baseline system's output (B); an input without it is skipped. ``random:K``: K of the
    input's pairs, drawn from ``seed`` and the input's id (reproducible, so a resumed run asks the same pairs).

    Raises:
        ConfigError: No pair at all (one output per input, or a baseline system that never appears).
    """
    m = _SPEC.match(check_spec(spec))
    assert m is not None
    out: list[Sample] = []
    skipped: dict[str, list[str]] = {}
    for doc, group in _by_input(samples).items():
        if len(group) < 2:
            skipped.setdefault("one output", []).append(doc)
            continue
        if m["system"] is not None:
            base = [s for s in group if s.system_id == m["system"]]
            if not base:
                skipped.setdefault(f"no {m['system']} output", []).append(doc)
                continue
            chosen = [(s, base[0]) for s in group if s is not base[0]]
        else:
            chosen = list(itertools.combinations(group, 2))
            if m["k"] is not None:
                order = shuffled(list(range(len(chosen))), seed, "pairs", doc)[:int(m["k"])]
                chosen = [chosen[i] for i in sorted(order)]
        out.extend(pair_sample(a, b) for a, b in chosen)
    if not out:
        systems = sorted({s.system_id for s in samples})
        why = "; ".join(f"{k}: {len(v)} input(s)" for k, v in skipped.items())
        raise ConfigError(f"pairwise --pairs {spec}: no pair to judge ({why}); systems here: "
                          f"{', '.join(systems[:20])}. Pairwise judging needs two or more outputs per input.")
    return Pairing(out, skipped)
