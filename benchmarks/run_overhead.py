"""A whole ``assay run`` against a loopback server with fixed latency, beside a raw aiohttp loop making its calls.

Usage: python benchmarks/run_overhead.py [--limit 200] [--full] [--delay 0.1] [--concurrency 32 256]
                                         [--methods direct geval checkeval seal] [--profile METHOD]
                                         [--profile-out DIR]

Each row starts ``assay run`` as a user does (a process: ``python -m assay.cli run --dataset summeval ...
--judge openai:...@URL``, its progress display on, stderr a pipe) against a scripted OpenAI-compatible server
that answers every request after ``--delay`` seconds with a well-formed answer for the method's prompt
(``assay.testing.formatted_answer``), so every method takes its full path. The server runs in this process
(threads); the run and the raw loop are child processes, so their CPU time (user + system, from ``wait4``) is
their own. Then a raw aiohttp loop (a child process too) sends exactly the requests the run sent (the recorded
bodies) at the same concurrency.

Columns: ``wall`` is the run's process from start to exit (imports, preparation, judging, summary table);
``first`` is the time from process start to the first request the server received (the log-probability probe
or the first judge call); ``tail`` from the last request received to the process's exit (the last answer,
the summary table, closing); ``raw`` the raw loop's wall for the same calls (connections opened inside it, its
imports not counted); ``x raw`` = wall / raw; ``CPU ms/unit`` the run process's CPU per unit (with its children's:
the summary's helper process), and ``raw CPU`` the raw loop's per unit (the judge's own share: HTTP and JSON);
``ideal`` = calls x delay / concurrency; ``gc s`` the run process's time in the cyclic garbage collector
(``gc.callbacks``; the run is started through a few lines that count it, then run ``assay.cli`` as ``-m`` does).

The default is a slice of SummEval (``--limit`` samples of its 1,600, 4 dimensions each) so that the whole
table takes a minute or two on a busy machine; ``--full`` runs all 6,400 direct units (for the docs).
``--src A B`` runs each row with each source tree on the run's PYTHONPATH in turn (before and after a change,
measured in the same session). ``--profile METHOD`` runs that method once more (per source tree) under
cProfile at the highest concurrency and prints the top of the profile. The load average is printed beside
every row.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pstats
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from assay.testing import Behaviour, FakeOpenAIServer, formatted_answer

#: Options per method: G-Eval reads log-probabilities (its default mode on a judge that gives them).
METHOD_ARGS = {"direct": [], "geval": [], "checkeval": [], "seal": []}


class _Req:
    """What :func:`formatted_answer` reads of a request: its messages, with ``content``."""

    def __init__(self, body: dict[str, Any]) -> None:
        self.messages = [type("M", (), {"content": m.get("content", "")})() for m in body.get("messages", [])]


def answer(body: dict[str, Any]) -> str:
    return formatted_answer(_Req(body))


class Recorder:
    """The server's route hook: when each run's first and last requests arrived (runs differ by model name)."""

    def __init__(self) -> None:
        self.first: dict[str, float] = {}
        self.last: dict[str, float] = {}

    def __call__(self, body: dict[str, Any]) -> None:  # called under the server's lock
        model, now = body.get("model", ""), time.time()
        self.first.setdefault(model, now)
        self.last[model] = now
        return None


#: ``python -m assay.cli`` with the cyclic garbage collector's time counted (``gc.callbacks``), printed at exit.
GC_WRAPPER = """
import atexit, gc, runpy, sys, time
spent = [0.0, 0, 0.0]
def count(phase, info):
    if phase == "start":
        spent[2] = time.perf_counter()
    else:
        spent[0] += time.perf_counter() - spent[2]
        spent[1] += 1
gc.callbacks.append(count)
atexit.register(lambda: print(f"assay-bench-gc {spent[0]:.4f} {spent[1]}"))
sys.argv = ["assay", *sys.argv[1:]]
runpy.run_module("assay.cli", run_name="__main__")
"""


def run_child(argv: list[str], env: dict[str, str]) -> tuple[float, float, int, str]:
    """Start a process; its wall time, CPU seconds (user + system), exit code and stdout."""
    start = time.time()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return time.time() - start, usage.ru_utime + usage.ru_stime, proc.returncode, out


async def raw_loop(url: str, bodies_path: str, concurrency: int) -> None:
    """The baseline (a child process): the same request bodies through one aiohttp session."""
    import aiohttp

    bodies = [json.loads(line) for line in Path(bodies_path).read_text().splitlines()]
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency))
    sem = asyncio.Semaphore(concurrency)

    async def call(body: dict[str, Any]) -> object:
        async with sem, session.post(f"{url}/chat/completions", json=body,
                                     headers={"authorization": "Bearer not-needed"}) as resp:
            return await resp.json()

    cpu0, wall0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(call(b) for b in bodies))
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    await session.close()
    print(json.dumps({"wall": wall, "cpu": cpu}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=200, help="SummEval samples (x4 dimensions = units)")
    ap.add_argument("--full", action="store_true", help="all 1,600 samples (6,400 direct units)")
    ap.add_argument("--delay", type=float, default=0.1)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[32, 256])
    ap.add_argument("--methods", nargs="+", choices=list(METHOD_ARGS), default=list(METHOD_ARGS))
    ap.add_argument("--profile", choices=list(METHOD_ARGS), help="cProfile one more run of this method")
    ap.add_argument("--profile-out", metavar="DIR", help="keep the profiles there (SRC-TAG.prof) for pstats")
    ap.add_argument("--src", nargs="+", default=[], metavar="DIR",
                    help="source trees to compare (PYTHONPATH of the run, e.g. a worktree's src), alternated per row")
    ap.add_argument("--raw", nargs=3, metavar=("URL", "BODIES", "CONCURRENCY"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.raw:
        asyncio.run(raw_loop(args.raw[0], args.raw[1], int(args.raw[2])))
        return
    recorder = Recorder()
    server = FakeOpenAIServer(default=Behaviour(delay_s=args.delay, text=answer), route=recorder)
    trees = args.src or [""]
    runs = [(m, c, t) for c in args.concurrency for m in args.methods for t in trees]
    runs += [(args.profile, -max(args.concurrency), t) for t in trees] if args.profile else []
    with server, tempfile.TemporaryDirectory(prefix="assay-run-overhead-") as tmp:
        print(f"summeval {'all samples' if args.full else f'first {args.limit} samples'}, delay {args.delay}s, "
              f"load average before: {os.getloadavg()[0]:.2f}")
        print(f"{'src':>4} {'method':>9} {'conc':>4} {'units':>5} {'calls':>5} {'wall s':>6} {'first s':>7} "
              f"{'tail s':>6} {'raw s':>5} {'ideal s':>7} {'x raw':>5} {'CPU ms/unit':>11} {'raw CPU':>7} "
              f"{'gc s':>5} {'exit':>4} {'load':>5}", flush=True)
        for n, (method, conc, tree) in enumerate(runs, 1):
            tag = str(trees.index(tree) + 1) if tree else "-"
            model = f"bench-{n}"
            del server.requests[:]
            start = time.time()
            wall, cpu, code, out = run_child(
                [sys.executable, *(["-m", "cProfile", "-o", f"{tmp}/{model}.prof", "-m", "assay.cli"] if conc < 0
                                   else ["-c", GC_WRAPPER]), "run", "--method", method, "--dataset", "summeval",
                 *([] if args.full else ["--limit", str(args.limit)]), "--judge", f"openai:{model}@{server.url}",
                 "--concurrency", str(abs(conc)), "--run-dir", f"{tmp}/{model}", *METHOD_ARGS[method]],
                {**os.environ, "PYTHONPATH": tree} if tree else dict(os.environ))
            if code not in (0, 3):
                raise SystemExit(f"{out}\n{method}: assay run exited with {code}")
            if conc < 0:
                print_profile(f"{tmp}/{model}.prof", f"src {tag} {tree}", method, -conc, wall)
                if args.profile_out:
                    Path(args.profile_out).mkdir(parents=True, exist_ok=True)
                    shutil.copy(f"{tmp}/{model}.prof", Path(args.profile_out) / f"{method}-src{tag}.prof")
                continue
            first, tail = recorder.first[model] - start, start + wall - recorder.last[model]
            calls, units = len(server.requests), _units(f"{tmp}/{model}")
            gc_s = next((float(line.split()[1]) for line in out.splitlines() if line.startswith("assay-bench-gc ")),
                        float("nan"))
            raw = raw_run(server.url, server.requests, Path(tmp) / f"{model}.jsonl", conc)
            print(f"{tag:>4} {method:>9} {conc:>4} {units:>5} {calls:>5} {wall:6.2f} {first:7.2f} {tail:6.2f} "
                  f"{raw['wall']:5.2f} {calls * args.delay / conc:7.2f} {wall / raw['wall']:5.2f} "
                  f"{1000 * cpu / units:11.3f} {1000 * raw['cpu'] / units:7.3f} {gc_s:5.2f} {code:>4} "
                  f"{os.getloadavg()[0]:5.2f}",
                  flush=True)


def raw_run(url: str, requests: list[dict[str, Any]], path: Path, concurrency: int) -> dict[str, float]:
    """The raw aiohttp loop (a child process) sending ``requests`` again; its wall and CPU seconds."""
    path.write_text("".join(json.dumps(b) + "\n" for b in requests))
    _, _, code, out = run_child([sys.executable, __file__, "--raw", url, str(path), str(concurrency)],
                                dict(os.environ))
    if code:
        raise SystemExit(f"raw loop failed: {out}")
    return json.loads(out.splitlines()[-1])


def print_profile(path: str, label: str, method: str, concurrency: int, wall: float) -> None:
    """The top of a run's profile: assay's functions and imports by cumulative time, then all by own time."""
    print(f"\ncProfile ({label}) of `assay run --method {method} --concurrency {concurrency}` ({wall:.1f} s wall, "
          f"load {os.getloadavg()[0]:.2f}):")
    stats = pstats.Stats(path)
    stats.sort_stats("cumulative").print_stats(r"assay|importlib._bootstrap\b", 40)
    stats.sort_stats("tottime").print_stats(25)


def _units(run_dir: str) -> int:
    from assay.run.store import RunStore

    with RunStore(run_dir, readonly=True) as store:
        return len(store.judgments())


if __name__ == "__main__":
    main()
