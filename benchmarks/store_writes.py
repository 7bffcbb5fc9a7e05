"""The run store's write rate: judgments and cache calls per second into one SQLite run database (WAL).

Usage: python benchmarks/store_writes.py [--n 5000]

The driver of a run (local or Ray) is the only writer of its store: each judgment is one transaction
(``RunStore.add_judgment``) and each answered call one autocommit insert (``CallCache.put_call``). This measures
both with records of a realistic size (a CheckEval-like trace of ~40 answers, a ~2,500-character request), and
the same judgment rows written 100 per transaction, the rate a batched writer would reach. docs/scale.md uses the
figures to say where the store stops keeping up with a cluster.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

from assay.judges.base import JudgeIdentity, Request, Response
from assay.run.store import RunStore
from assay.types import Judgment, Usage


def judgment(i: int) -> Judgment:
    trace = {"answers": [{"q": f"question {k}", "answer": "Yes", "prompt_sha256": f"{i:032x}{k:032x}"}
                         for k in range(40)]}
    return Judgment(sample_id=f"doc{i // 16}:sys{i % 16}", dimension="coherence", method="checkeval",
                    judge="openai:model", score=0.75, trace=trace,
                    usage={"score": Usage(calls=40, prompt_tokens=24000, completion_tokens=80)})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=5000)
    n = parser.parse_args().n
    print(f"load {' '.join(f'{x:.1f}' for x in os.getloadavg())}; {n} records each")
    judgments = [judgment(i) for i in range(n)]
    identity = JudgeIdentity(backend="openai", model="model")
    request = Request.chat("x" * 2500, max_tokens=4)
    response = Response.model_validate({"choices": [{"text": "Yes", "finish_reason": "stop"}], "prompt_tokens": 600,
                                        "completion_tokens": 1, "model": "model"})
    with tempfile.TemporaryDirectory() as tmp, RunStore(tmp) as store:
        start = time.perf_counter()
        for j in judgments:
            store.add_judgment(j)
        one = n / (time.perf_counter() - start)
        start = time.perf_counter()
        for i in range(n):
            store.calls.put_call(f"{i:064x}", identity, request, response)
        calls = n / (time.perf_counter() - start)
        size = os.path.getsize(os.path.join(tmp, "run.sqlite")) + os.path.getsize(os.path.join(tmp, "run.sqlite-wal"))
    rows = [(j.sample_id + "b", j.dimension, j.method, j.judge, j.score, j.error, json.dumps(j.trace),
             json.dumps({k: v.model_dump() for k, v in j.usage.items()}), time.time(), j.status) for j in judgments]
    with tempfile.TemporaryDirectory() as tmp, RunStore(tmp) as store:
        start = time.perf_counter()
        for k in range(0, n, 100):
            store._db.execute("BEGIN")
            store._db.executemany("INSERT INTO judgments (sample_id, dimension, method, judge, score, error, trace, "
                                  "usage, created, status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows[k:k + 100])
            store._db.execute("COMMIT")
        batched = n / (time.perf_counter() - start)
    print(f"  judgments, one transaction each (add_judgment): {one:8.0f} /s")
    print(f"  cache calls, autocommit (put_call):             {calls:8.0f} /s")
    print(f"  judgments, 100 per transaction:                 {batched:8.0f} /s")
    print(f"  database + WAL after {n} judgments and {n} calls: {size / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
