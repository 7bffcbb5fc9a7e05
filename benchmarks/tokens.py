"""Token bill per (sample, dimension) of G-Eval, CheckEval and SEAL beside SEAL's Table 9, and what prefix reuse saves.

One command::

    PYTHONPATH=src python benchmarks/tokens.py                         # 2 SummEval articles x 16 summaries x 4 dims
    PYTHONPATH=src python benchmarks/tokens.py --docs 1 --per-doc 4    # a quick slice

Runs each method with its default options and the embedded judge (``llamacpp:smollm2``) on the same SummEval
slice, in the unit order the method asks the executor for (one call at a time, so the judge's KV cache holds the
previous request's prompt), and prints per method and dimension the mean prompt and completion tokens per
(sample, dimension) unit, the prompt tokens served from the KV cache, and the tokens actually processed
(prompt - cached + completion), beside SEAL's Table 9 (SummEval, GPT-4o-class judges: G-Eval 654, CheckEval 913,
SEAL 1,868 tokens per sample-dimension). A unit's tokens are those of the calls made while scoring it: a call
shared by several units (SEAL's stage-1 facts of a summary, used by consistency and relevance) is charged to the
unit that made it, so the per-method mean counts it once; Table 9 counts stage 1 in each dimension that uses it.
Preparation (G-Eval's evaluation steps) is reported apart, as Table 9 leaves it out.

First, in seconds and without the model, it prints for each method the prefix reuse of its request stream in
both unit orders (:func:`assay.run.executor.prefix_reuse` on SmolLM2's tokens, a scripted judge that answers every
format), so that the order each method asks for can be checked on the full slice (``--orders-only`` stops there).

Runs are stored under ``--work`` (default ``benchmarks/runs/tokens``) and resumed: an interrupted benchmark
continues where it stopped, and a finished one prints its figures again without a call (usage is stored with
every judgment).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

# llama.cpp's OpenMP threads spin-wait by default, 16-19x slower on a busy machine (the other benchmarks set
# this too); set before llama.cpp loads, and a value the user exported wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import assay
from assay.datasets import Dataset
from assay.judges.base import Request
from assay.judges.scripted import ScriptedJudge
from assay.methods import make_method
from assay.run.executor import prefix_reuse
from assay.testing import formatted_answer
from assay.types import Judgment, Usage

DIMS = ["coherence", "consistency", "fluency", "relevance"]
METHODS = ["geval", "checkeval", "seal"]
#: SEAL paper, Table 9: average tokens per sample-dimension on SummEval (SEAL: stage 1 + stages 2-3).
TABLE9 = {
    "geval": {"coherence": 807.46, "consistency": 764.55, "fluency": 288.35, "relevance": 756.40, "mean": 654.19},
    "checkeval": {"coherence": 912.87, "consistency": 950.52, "fluency": 916.31, "relevance": 871.51,
                  "mean": 912.80},
    "seal": {"coherence": 1534.88, "consistency": 2489.54, "fluency": 974.78, "relevance": 2472.83, "mean": 1868.00},
}


@dataclass
class Bill:
    """Mean tokens per (sample, dimension) unit over a set of judgments."""

    units: int
    prompt: float
    completion: float
    cached: float
    calls: float

    @property
    def total(self) -> float:
        return self.prompt + self.completion

    @property
    def processed(self) -> float:
        """What the judge evaluated and generated: the prompt past the reused prefix, and the answer."""
        return self.prompt - self.cached + self.completion


def bill(judgments: list[Judgment]) -> Bill:
    """The mean usage per unit of these judgments (every stage, re-asks included)."""
    total = Usage()
    for j in judgments:
        total.add(j.total_usage())
    n = max(1, len(judgments))
    return Bill(len(judgments), total.prompt_tokens / n, total.completion_tokens / n,
                total.cached_prompt_tokens / n, total.calls / n)


def slice_of(docs: int, per_doc: int | None) -> Dataset:
    """The first ``docs`` SummEval articles, with their first ``per_doc`` summaries each (all: None)."""
    ds = assay.load_dataset("summeval").select(docs=docs)
    if per_doc is None:
        return ds
    seen: dict[str, int] = {}
    keep = []
    for s in ds.samples:
        seen[s.doc_id] = seen.get(s.doc_id, 0) + 1
        if seen[s.doc_id] <= per_doc:
            keep.append(s)
    return replace(ds, samples=keep)


def run(method: str, ds: Dataset, work: Path, threads: int) -> tuple[assay.RunResult, float]:
    """One method on the slice in its own (resumable) run directory; returns the result and its wall time."""
    start = time.perf_counter()
    result = assay.evaluate(ds, method=method, judge="llamacpp:smollm2", judge_options={"n_threads": threads},
                            dimensions=DIMS, run_dir=work / method)
    return result, time.perf_counter() - start


def preparation(result: assay.RunResult) -> dict[str, Usage]:
    """Usage of the stages no judgment was charged with (G-Eval's steps), over every session of the run."""
    charged = {k for j in result.judgments for k in j.usage}
    return {k: Usage(**u) for k, u in (result.manifest.get("usage") or {}).items() if k not in charged}


def chat_tokenizer() -> Callable[[Request], list[int]]:
    """The embedded judge's tokens of a request (its chat template applied), from the vocabulary only."""
    import llama_cpp
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    from assay.judges.llamacpp import resolve_model

    llm = llama_cpp.Llama(model_path=str(resolve_model("smollm2")), vocab_only=True, verbose=False)
    fmt = Jinja2ChatFormatter(template=llm.metadata["tokenizer.chat_template"], eos_token="", bos_token="")
    return lambda r: llm.tokenize(fmt(messages=[m.model_dump() for m in r.messages]).prompt.encode(),
                                  add_bos=False, special=True)


def stream_reuse(method: str, ds: Dataset, by: str, tokens: Callable[[Request], list[int]]) -> tuple[float, float]:
    """Prompt tokens per unit and their share a one-request prefix cache serves, for the method's requests sent in
    ``by`` order, answered by a scripted judge that follows every format (no model: seconds for the full slice).
    The answers differ from a real judge's, so re-asks and fallbacks do not show; the prompts are the method's."""
    meth = make_method(method, {})
    meth.unit_order = by
    judge = ScriptedJudge(formatted_answer)
    result = assay.evaluate(ds, method=meth, judge=judge, dimensions=DIMS, concurrency=1)
    stream = [tokens(r) for r in judge.requests]
    return sum(map(len, stream)) / max(1, len(result.judgments)), prefix_reuse(stream)


def orders(methods: list[str], ds: Dataset) -> list[str]:
    """Markdown rows: per method, sample-major against dimension-major, and the order the method asks for."""
    tokens = chat_tokenizer()
    out = ["| method | order it asks for | prompt tokens / unit | reused, sample-major | reused, dimension-major | "
           "evaluated / unit in its order |", "| --- | --- | --- | --- | --- | --- |"]
    for method in methods:
        got = {by: stream_reuse(method, ds, by, tokens) for by in ("sample", "dimension")}
        wanted = make_method(method, {}).unit_order
        per_unit, share = got[wanted]
        out.append(f"| {method} | {wanted} | {per_unit:.0f} | {got['sample'][1]:.1%} | {got['dimension'][1]:.1%} | "
                   f"{per_unit * (1 - share):.0f} |")
    return out


def table(rows: dict[str, dict[str, Bill]]) -> list[str]:
    """Markdown rows: per method and dimension, the bill beside Table 9."""
    out = ["| method | dimension | units | calls | prompt | completion | prompt + completion | Table 9 | "
           "cached prompt | processed | processed / Table 9 |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for method, by_dim in rows.items():
        for dim, b in by_dim.items():
            paper = TABLE9[method][dim]
            out.append(f"| {method} | {dim} | {b.units} | {b.calls:.1f} | {b.prompt:.0f} | {b.completion:.0f} | "
                       f"{b.total:.0f} | {paper:.0f} | {b.cached:.0f} | {b.processed:.0f} | "
                       f"{b.processed / paper:.2f} |")
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--docs", type=int, default=2, help="SummEval articles")
    p.add_argument("--per-doc", type=int, default=16, help="summaries per article (SummEval has 16)")
    p.add_argument("--methods", default=",".join(METHODS))
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--work", type=Path, default=Path("benchmarks/runs/tokens"))
    p.add_argument("--orders-only", action="store_true",
                   help="only the request-stream reuse of both unit orders (scripted judge, no model run)")
    args = p.parse_args()
    ds = slice_of(args.docs, args.per_doc)
    print(f"# Token bill, judge llamacpp:smollm2 ({args.threads} threads), SummEval {args.docs} article(s) x "
          f"{args.per_doc} summaries x {len(DIMS)} dimensions ({len(ds.samples)} summaries); "
          f"OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']}; python {sys.version.split()[0]}; "
          f"load average {os.getloadavg()[0]:.1f}\n", flush=True)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    print("Request-stream prefix reuse by unit order (SmolLM2 tokens, scripted judge answering in format):\n")
    print("\n".join(orders(methods, ds)) + "\n", flush=True)
    if args.orders_only:
        return
    rows: dict[str, dict[str, Bill]] = {}
    notes = []
    for method in methods:
        result, wall = run(method, ds, args.work, args.threads)
        by_dim = {d: bill([j for j in result.judgments if j.dimension == d]) for d in DIMS}
        rows[method] = by_dim | {"mean": bill(result.judgments)}
        prep = preparation(result)
        prep_tokens = sum(u.prompt_tokens + u.completion_tokens for u in prep.values())
        notes.append(f"{method}: wall {wall:.0f} s{' (resumed)' if result.resumed else ''}; "
                     f"preparation apart from the units: {prep_tokens} tokens ({', '.join(prep) or 'none'}); "
                     f"unscored units {sum(j.score is None for j in result.judgments)}/{len(result.judgments)}")
        print("\n".join(table({method: rows[method]})[2:]), flush=True)
    print()
    print("\n".join(table(rows)))
    print()
    for n in notes:
        print(n)
    print(f"\nload average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
