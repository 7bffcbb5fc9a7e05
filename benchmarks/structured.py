"""Free text against constrained decoding (``--answer-format free`` vs ``json``) with the embedded judge (issue 27).

One command::

    PYTHONPATH=src python benchmarks/structured.py                 # a few minutes on a quiet 2-core machine
    PYTHONPATH=src python benchmarks/structured.py --limit 12      # the README quick start's 48 units

Same samples, same judge (``llamacpp:smollm2``), each run once with ``--answer-format free`` and once with
``json``; it prints

1. the README quick start (``assay run --method direct --dataset topical-chat --limit N``, all four dimensions):
   coverage (scored / asked), prompt and completion tokens and wall time per unit, free vs json;
2. every method's coverage on a small slice (G-Eval, CheckEval and SEAL on SummEval coherence and consistency,
   GER-Eval on Topical-Chat with the human rubric), free vs json, and the same cost figures;
3. SEAL's fact extraction: the share of texts whose facts were read from the first answer (no re-ask);
4. ``assay rubric generate --dataset topical-chat --condition task``: whether the embedded judge writes a rubric,
   how many criteria, and the repeated names resolved (the build always decodes under its schema).

Runs are stored under ``--work`` (default ``benchmarks/runs/structured``) and resumed: a second invocation prints the
figures again without a call. Times are the judge calls' own latency per unit (stored with each judgment), so they
are those of the session that made the calls; the load (``/proc/loadavg``) around each run is printed beside them:
compare free and json made in one invocation only.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # see benchmarks/tokens.py

import assay
from assay.judges.llamacpp import LlamaCppJudge

FORMATS = ("free", "json")
#: (method, dataset, dimensions, options) of the every-method slice.
SLICE = [
    ("geval", "summeval", ["coherence"], {"no_cot": True}),
    ("checkeval", "summeval", ["coherence"], {}),
    ("seal", "summeval", ["consistency"], {}),
    ("gereval", "topical-chat", ["naturalness"], {"rubric": "human"}),
]


def load() -> str:
    try:
        return Path("/proc/loadavg").read_text().split(" ")[0]
    except OSError:
        return "?"


def run(judge: LlamaCppJudge, work: Path, name: str, fmt: str, **kw: Any) -> dict[str, Any]:
    """One stored run; its coverage, tokens per unit, and the wall time of this session's calls."""
    start, before = time.perf_counter(), load()
    result = assay.evaluate(kw.pop("dataset"), judge=judge, run_dir=work / f"{name}-{fmt}", answer_format=fmt, **kw)
    seconds = time.perf_counter() - start
    units = result.units
    usage = [j.total_usage() for j in result.judgments]
    n = max(1, len(usage))
    return {"result": result, "asked": units["asked"], "scored": units["scored"],
            "coverage": units["scored"] / max(1, units["asked"]), "used": result.manifest["answer_format"]["used"],
            "prompt": sum(u.prompt_tokens for u in usage) / n,
            "completion": sum(u.completion_tokens for u in usage) / n,
            "calls": sum(u.calls for u in usage) / n,
            "seconds_per_unit": sum(u.latency_s for u in usage) / n, "wall_s": seconds, "load": f"{before}->{load()}"}


def row(label: str, fig: dict[str, Any]) -> str:
    spu = f"{fig['seconds_per_unit']:.2f}"
    return (f"{label:<24} {fig['used']:>5} {fig['scored']:>4}/{fig['asked']:<4} {fig['coverage']:>8.3f} "
            f"{fig['calls']:>6.2f} {fig['prompt']:>8.0f} {fig['completion']:>6.1f} {spu:>7}  load {fig['load']}")


HEADER = f"{'run':<24} {'used':>5} {'scored':>9} {'coverage':>8} {'calls':>6} {'prompt':>8} {'compl':>6} {'s/unit':>7}"


def seal_first_answers(result: Any) -> tuple[int, int]:
    """(texts whose facts were read from the first answer, texts extracted by the judge) in a SEAL run."""
    first = total = 0
    seen: set[str] = set()
    for j in result.judgments:
        for key, entry in j.trace.get("stage1", {}).items():
            if not isinstance(entry, dict) or not str(entry.get("how", "")).startswith("llm"):
                continue
            attempts = entry.get("attempts") or []
            ident = f"{j.sample_id}/{key}" if entry.get("paid_here") else None
            if ident is None or ident in seen:
                continue
            seen.add(ident)
            total += 1
            first += len(attempts) == 1 and not attempts[0].get("error")
    return first, total


def rubric(judge: LlamaCppJudge, work: Path) -> str:
    out = work / "rubric-task.json"
    if not out.exists():
        assay.prepare("rubric", dataset="topical-chat", judge=judge, out=out, options={"condition": "task"})
    import json

    data = json.loads(out.read_text())
    names = [c["name"] for c in data.get("criteria", [])]
    notes = [n for n in data.get("provenance", {}).get("notes", []) if "given twice" in n]
    return f"{len(names)} criteria ({', '.join(names)}); repeated names resolved: {len(notes)} {notes}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=3, help="quick-start samples (README: 12)")
    parser.add_argument("--slice", type=int, default=2, help="samples of the every-method slice")
    parser.add_argument("--work", type=Path, default=Path("benchmarks/runs/structured"))
    parser.add_argument("--skip", nargs="*", default=[], choices=["quickstart", "methods", "rubric"])
    parser.add_argument("--methods", nargs="*", default=[m for m, *_ in SLICE], help="methods of the slice")
    parser.add_argument("--formats", nargs="*", default=list(FORMATS), choices=FORMATS)
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    judge = LlamaCppJudge("smollm2")
    print(f"judge llamacpp:smollm2, {judge.n_threads} threads; load at start {load()}")
    print(HEADER)
    if "quickstart" not in args.skip:
        for fmt in args.formats:
            fig = run(judge, args.work, f"quickstart-{args.limit}", fmt, dataset="topical-chat", method="direct",
                      limit=args.limit)
            print(row(f"direct quick start {fmt}", fig))
    seal: dict[str, Any] = {}
    if "methods" not in args.skip:
        for method, dataset, dims, options in [s for s in SLICE if s[0] in args.methods]:
            for fmt in args.formats:
                fig = run(judge, args.work, f"{method}-{args.slice}", fmt, dataset=dataset, method=method,
                          dimensions=dims, options=options, limit=args.slice)
                print(row(f"{method} {fmt}", fig))
                if method == "seal":
                    seal[fmt] = seal_first_answers(fig["result"])
        for fmt, (first, total) in seal.items():
            print(f"SEAL facts read from the first answer ({fmt}): {first}/{total} texts")
    if "rubric" not in args.skip:
        print(f"rubric generate --condition task: {rubric(judge, args.work)}")
    print(f"load at end {load()}")


if __name__ == "__main__":
    main()
