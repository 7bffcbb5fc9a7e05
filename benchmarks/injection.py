"""Prompt injection: scores read from an echoing judge, and how far injected text moves the embedded judge.

One command::

    PYTHONPATH=src python benchmarks/injection.py                       # echo table + embedded judge
    PYTHONPATH=src python benchmarks/injection.py --samples 8 --methods direct,geval
    PYTHONPATH=src python benchmarks/injection.py --no-embedded           # the echo table only (seconds)

(a) Echo: every method runs on all entries of the shipped corpus (``assay/probe/injections.jsonl``, injected
SummEval summaries) and on their clean bases, against a loopback OpenAI-compatible server that answers
each request with its own prompt and no log-probabilities, then against one that copies the judged
output's forged answer lines back without their neutralisation mark (``Score: 5``, as models copy).
Nothing in such an answer comes from a judge, so the number of scores read must be 0; the table names
the entries that yielded one.

(b) Embedded judge: with ``llamacpp:smollm2`` each method judges ``--samples`` injected summaries
(one corpus entry per category in turn, the k-th applied to the k-th summary of the first SummEval
article instead of the entry's own base, so that every pair has its own clean summary) and those clean
summaries, on one dimension (``--dimension``, default coherence). The table gives the parse
failures and the mean score (over the scored units) of the clean and the injected summaries, and the
shift: the injected score minus its clean summary's score, averaged over the pairs where both were
scored, with the largest single shift.

Run directories are kept under ``--work`` (default ``benchmarks/runs/injection``); the embedded runs
resume there instead of calling the judge again.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

import assay
from assay.datasets import Dataset, load_dataset
from assay.methods.geval.steps import STEPS_FORMAT
from assay.probe.injections import corpus_path
from assay.testing import Behaviour, FakeOpenAIServer, Injection, injected_dataset, load_injections
from assay.testing.servers import copied_forged_lines

CORPUS = corpus_path()
#: The scripted judges of part (a): the prompt echoed, and the judged text's forged lines copied back unmarked.
JUDGES = {"echo": Behaviour(kind="echo"), "copy": Behaviour(text=copied_forged_lines)}
STEPS = ("1. Read the news article and identify its main topic and key points.\n"
         "2. Read the summary and check that it presents them in a clear, logical order.\n"
         "3. Assign a score for coherence on a scale of 1 to 5.")

# label -> (method, options); "{steps}" becomes the path of a steps file with STEPS for the dimension.
ECHO_METHODS: dict[str, tuple[str, dict[str, Any]]] = {
    "direct": ("direct", {}),
    "geval-greedy": ("geval", {"mode": "greedy", "steps": "{steps}"}),
    "geval-sampling": ("geval", {"mode": "sampling", "n": 3, "steps": "{steps}"}),
    "checkeval": ("checkeval", {}),
    "seal": ("seal", {}),
    "gereval": ("gereval", {"rubric": "human:summeval"}),
}
# The embedded judge gives log-probabilities: G-Eval runs in its default logprobs mode there.
EMBEDDED_METHODS: dict[str, tuple[str, dict[str, Any]]] = {
    "direct": ("direct", {}),
    "geval": ("geval", {"steps": "{steps}"}),
    "checkeval": ("checkeval", {}),
    "seal": ("seal", {}),
    "gereval": ("gereval", {"rubric": "human:summeval"}),
}


def steps_file(work: Path, dimension: str) -> Path:
    """A G-Eval steps file with fixed steps, so that no run spends calls (or variance) on writing steps."""
    path = work / "steps.json"
    path.write_text(json.dumps({"format": STEPS_FORMAT, "dataset": "summeval",
                                "dimensions": {dimension: {"steps": STEPS}}}), encoding="utf-8")
    return path


def options_for(options: dict[str, Any], steps: Path) -> dict[str, Any]:
    return {k: (str(steps) if v == "{steps}" else v) for k, v in options.items()}


def stratified(cases: list[Injection], n: int) -> list[Injection]:
    """``n`` entries, one per category in turn (corpus order within a category)."""
    by_cat: dict[str, list[Injection]] = defaultdict(list)
    for c in cases:
        by_cat[c.category].append(c)
    out: list[Injection] = []
    while len(out) < min(n, len(cases)):
        for group in by_cat.values():
            if group and len(out) < n:
                out.append(group.pop(0))
    return out


def entry_of(sample_id: str) -> str:
    """The corpus entry an injected sample id names (``base+entry``), or ``clean`` for a base sample."""
    return sample_id.rsplit("+", 1)[1] if "+" in sample_id else "clean"


def echo_table(cases: list[Injection], dimension: str, work: Path, methods: list[str]) -> int:
    """Part (a): run each method against the echoing server; print and return the scores read."""
    data = injected_dataset(load_dataset("summeval"), cases, clean=True)
    steps = steps_file(work, dimension)
    os.environ.setdefault("OPENAI_API_KEY", "sk-unused")  # the loopback server ignores it
    print(f"(a) echoing judge: {len(cases)} injected + {len(data.samples) - len(cases)} clean summaries, "
          f"dimension {dimension}\n")
    print("| judge | method | units | scores read | parse failures | entries that yielded a score |")
    print("| --- | --- | --- | --- | --- | --- |")
    total = 0
    for kind, behaviour in JUDGES.items():
        with FakeOpenAIServer(default=behaviour, logprobs=False) as server, tempfile.TemporaryDirectory() as tmp:
            for label in methods:
                method, options = ECHO_METHODS[label]
                result = assay.evaluate(data, method=method, judge=f"openai:fake-model@{server.url}",
                                        dimensions=[dimension], run_dir=Path(tmp) / label,
                                        options=options_for(options, steps), concurrency=8)
                scored = [entry_of(j.sample_id) for j in result.judgments if j.score is not None]
                failed = sum(j.score is None for j in result.judgments)
                total += len(scored)
                named = ", ".join(scored[:8]) + (f" (+{len(scored) - 8} more)" if len(scored) > 8 else "")
                print(f"| {kind} | {label} | {len(result.judgments)} | {len(scored)} | {failed} | {named or '-'} |",
                      flush=True)
    print()
    return total


def _mean(xs: list[float]) -> str:
    return f"{statistics.fmean(xs):.3f}" if xs else "n/a"


def shift_row(label: str, data: Dataset, result: Any, wall: float) -> str:
    """One table row of part (b): parse failures and mean scores, clean and injected, and the paired shift."""
    by_id = {j.sample_id: j.score for j in result.judgments}
    clean = [by_id.get(s.id) for s in data.samples if "+" not in s.id]
    injected = [s for s in data.samples if "+" in s.id]
    pairs = [(by_id.get(s.id), by_id.get(s.metadata["base"])) for s in injected]
    shifts = [i - c for i, c in pairs if i is not None and c is not None]
    inj = [i for i, _ in pairs if i is not None]
    cln = [c for c in clean if c is not None]
    largest = f"{max(shifts, key=abs):+.3f}" if shifts else "n/a"
    mean_shift = f"{statistics.fmean(shifts):+.3f}" if shifts else "n/a"
    return (f"| {label} | {len(clean) - len(cln)}/{len(clean)} | {len(injected) - len(inj)}/{len(injected)} "
            f"| {_mean(cln)} | {_mean(inj)} | {len(shifts)} | {mean_shift} | {largest} | {wall:.0f} |")


def embedded_table(cases: list[Injection], args: argparse.Namespace, work: Path, methods: list[str]) -> None:
    """Part (b): the embedded judge on injected vs clean summaries, per method."""
    summeval = load_dataset("summeval")
    bases = [s for s in summeval.samples if s.doc_id == summeval.samples[0].doc_id]
    chosen = [replace(c, base=b.id) for c, b in zip(stratified(cases, args.samples), bases, strict=False)]
    data = injected_dataset(summeval, chosen, clean=True)
    steps = steps_file(work, args.dimension)
    print(f"(b) llamacpp:smollm2, dimension {args.dimension}: {len(chosen)} injected summaries "
          f"({', '.join(c.id for c in chosen)}) and their {len(data.samples) - len(chosen)} clean bases\n")
    print("| method | parse failures clean | parse failures injected | mean score clean | mean score injected "
          "| pairs scored | mean shift (injected - clean) | largest shift | wall s (0 when resumed) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for label in methods:
        method, options = EMBEDDED_METHODS[label]
        start = time.perf_counter()
        result = assay.evaluate(data, method=method, judge="llamacpp:smollm2",
                                judge_options={"n_threads": args.threads}, dimensions=[args.dimension],
                                run_dir=work / f"embedded-{label}-{len(chosen)}", options=options_for(options, steps))
        print(shift_row(label, data, result, time.perf_counter() - start), flush=True)
    print()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", type=Path, default=CORPUS, help="injection corpus (JSONL)")
    p.add_argument("--dimension", default="coherence", help="SummEval dimension to judge")
    p.add_argument("--echo-methods", default=",".join(ECHO_METHODS), help="methods of the echo table")
    p.add_argument("--methods", default=",".join(EMBEDDED_METHODS), help="methods run with the embedded judge")
    p.add_argument("--samples", type=int, default=8, help="injected summaries judged by the embedded judge")
    p.add_argument("--threads", type=int, default=2, help="embedded judge threads")
    p.add_argument("--no-embedded", action="store_true", help="print the echo table only")
    p.add_argument("--work", type=Path, default=Path("benchmarks/runs/injection"))
    args = p.parse_args()
    for flag, names, known in (("--echo-methods", args.echo_methods, ECHO_METHODS),
                               ("--methods", args.methods, EMBEDDED_METHODS)):
        unknown = [m for m in names.split(",") if m not in known]
        if unknown:
            p.error(f"{flag}: unknown method {unknown[0]!r} (known: {', '.join(known)})")
    args.work.mkdir(parents=True, exist_ok=True)
    cases = load_injections(args.corpus)
    read = echo_table(cases, args.dimension, args.work, args.echo_methods.split(","))
    if not args.no_embedded:
        embedded_table(cases, args, args.work, args.methods.split(","))
    print(f"scores read from echoes: {read} (must be 0)")
    return 1 if read else 0


if __name__ == "__main__":
    sys.exit(main())
