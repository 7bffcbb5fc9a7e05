"""The ray executor on this machine: embedded-judge throughput by layout, and Ray's own start-up and per-unit cost.

Usage: python benchmarks/ray.py [--units 8] [--scripted-docs 10] [--repeats 3] [--skip-embedded]

1. The embedded judge (``llamacpp:smollm2``, ``direct`` on Topical-Chat, one dimension, 2 responses of each context)
   over the same units with the local executor (one model, 2 threads), Ray with 1 worker x 2 threads, and Ray with
   2 workers x 1 thread. Each run starts from an empty run directory; ``steady`` is units per second between the
   first and the last judgment (model loads and actor start-up excluded), ``wall`` the whole judging phase (actors
   started, models loaded).
2. A scripted judge that answers at once (SummEval, ``direct``, one dimension): the local executor versus Ray with
   2 workers, so that the difference is Ray's overhead: actor start-up and the per-unit round trips (cache lookup
   through the reader actor, the streamed events, the driver's writes).

All runs share one local Ray instance (``ray.init(num_cpus=2)``, timed). The load average is printed with the
figures: this machine is shared, compare the ratios within one run.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

# this file is named ray.py: without its own folder on the path, `import ray` finds Ray, not this script
sys.path = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
import ray  # noqa: E402

import assay  # noqa: E402
from assay.datasets import Dataset, load_dataset  # noqa: E402
from assay.judges.scripted import ScriptedJudge  # noqa: E402


def hashed_score(request) -> str:
    return str(1 + int(hashlib.sha256(request.messages[-1].content.encode()).hexdigest(), 16) % 5)


def timed_run(data: str | Dataset, judge, root: Path, name: str, **kwargs) -> dict[str, float]:
    """One run from an empty directory: wall time of the judging phase and the steady rate between judgments."""
    marks: dict[str, float] = {}
    stamps: list[float] = []

    def on_start(todo: int, done: int) -> None:
        marks["start"] = time.perf_counter()

    def on_update(progress, judge_) -> None:
        stamps.append(time.perf_counter())

    result = assay.evaluate(data, judge=judge, run_dir=root / name, on_start=on_start, on_update=on_update,
                            **kwargs)
    end = time.perf_counter()
    assert result.complete, result.units
    n = len(stamps)
    steady = (n - 1) / (stamps[-1] - stamps[0]) if n > 1 and stamps[-1] > stamps[0] else float("nan")
    return {"units": n, "wall_s": end - marks["start"], "first_s": stamps[0] - marks["start"], "steady": steady,
            "scores": result.scores()}


def spread(units: int) -> Dataset:
    """Topical-Chat's first 2 responses of each of the first ``units / 2`` contexts: groups of 2 units, so that
    both workers of a 2-worker layout have work to the end (with whole contexts, 8 units are 6 + 2)."""
    ds = load_dataset("topical-chat")
    per_doc: dict[str, list] = {}
    for s in ds.samples:
        per_doc.setdefault(s.doc_id, []).append(s)
    picked = [s for doc in list(per_doc.values())[:(units + 1) // 2] for s in doc[:2]][:units]
    return replace(ds, samples=picked, pool=ds.samples)


def embedded(root: Path, units: int) -> None:
    common = {"method": "direct", "dimensions": ["naturalness"]}
    layouts = [
        ("local executor, 1 model x 2 threads", {"judge_options": {"n_threads": 2}}),
        ("ray, 1 worker x 2 threads", {"judge_options": {"n_threads": 2}, "executor": "ray", "workers": 1,
                                       "worker_cpus": 2}),
        ("ray, 2 workers x 1 thread", {"judge_options": {"n_threads": 1}, "executor": "ray", "workers": 2,
                                       "worker_cpus": 1}),
    ]
    print(f"\n1. embedded judge llamacpp:smollm2, direct on topical-chat, {units} units in groups of 2 "
          f"(load {_load()})")
    data = spread(units)
    rows = []
    for i, (name, opts) in enumerate(layouts):
        rows.append((name, timed_run(data, "llamacpp:smollm2", root, f"emb{i}", **common, **opts)))
    base = rows[0][1]
    for name, r in rows:
        print(f"  {name:38s} steady {r['steady']:6.3f} units/s ({r['steady'] / base['steady']:4.2f}x local)   "
              f"wall {r['wall_s']:6.1f} s (first judgment after {r['first_s']:5.1f} s)")
    same = all(r["scores"] == base["scores"] for _, r in rows)
    print(f"  same scores in all three layouts: {same}; load after: {_load()}")


def overhead(root: Path, docs: int, repeats: int) -> None:
    common = {"method": "direct", "docs": docs, "dimensions": ["coherence"]}
    print(f"\n2. scripted judge (no latency), direct on summeval, {docs} documents x 16 outputs, median of {repeats} "
          f"(load {_load()})")
    runs = {"local": [], "ray": []}
    for i in range(repeats):
        runs["local"].append(timed_run("summeval", ScriptedJudge(hashed_score), root, f"loc{i}", **common))
        runs["ray"].append(timed_run("summeval", ScriptedJudge(hashed_score), root, f"ray{i}", executor="ray",
                                     workers=2, **common))
    local, remote = ({k: statistics.median(r[k] for r in rs) for k in ("wall_s", "first_s", "steady")}
                     for rs in (runs["local"], runs["ray"]))
    same = all(r["scores"] == runs["local"][0]["scores"] for r in runs["local"] + runs["ray"])
    print(f"  {runs['local'][0]['units']} units; ray steady rates: "
          + ", ".join(f"{r['steady']:.0f}" for r in runs["ray"]) + " units/s")
    print(f"  local executor        wall {local['wall_s']:6.2f} s   {local['steady']:8.0f} units/s")
    print(f"  ray, 2 workers        wall {remote['wall_s']:6.2f} s   {remote['steady']:8.0f} units/s   "
          f"first judgment after {remote['first_s']:.2f} s (2 actors started)")
    per_unit = (1 / remote["steady"] - 1 / local["steady"]) * 1000
    print(f"  Ray's cost per unit (steady, 2 workers): {per_unit:.2f} ms; its start-up per run: "
          f"{remote['first_s'] - local['first_s']:.2f} s; same scores: {same}")


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=8)
    parser.add_argument("--scripted-docs", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3, help="scripted-judge runs per executor (median)")
    parser.add_argument("--skip-embedded", action="store_true")
    args = parser.parse_args()
    start = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    print(f"ray.init(num_cpus=2): {time.perf_counter() - start:.2f} s (ray {ray.__version__}, load {_load()})")
    with tempfile.TemporaryDirectory(prefix="assay-ray-bench-") as tmp:
        overhead(Path(tmp), args.scripted_docs, args.repeats)
        if not args.skip_embedded:
            embedded(Path(tmp), args.units)
    ray.shutdown()


if __name__ == "__main__":
    main()
