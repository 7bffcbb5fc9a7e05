"""llama.cpp's extra buffer types on versus off, measured with llama-cpp-python alone (no assay installed).

Usage: python benchmarks/extra_buffers_bare.py MODEL.gguf [--threads 2 8] [--repeats 5] [--gen-tokens 64]

The same measurement as ``benchmarks/native.py`` (what the embedded judge's ``extra_buffers=false`` default costs),
for a machine that has llama-cpp-python but not assay's other dependencies, such as a lent accelerator machine
whose CPU may be one where AMX works. The setting is put into the model params exactly as
:func:`assay.judges.native.model_params` does (``use_extra_bufts`` on llama.cpp's default params). Each setting and
thread count runs in a fresh process, so that a crash is reported as its signal. Per run: the model's load time,
the median seconds of a 1-token completion of a ~500-token prompt (each prompt different from its first token, so
that nothing is reused from the KV cache), and milliseconds per generated token (greedy).
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

#: Prose to build the prompts from: this file's own docstring, repeated.
TEXT = " ".join((__doc__ or "").split())


def worker(model: str, extra_buffers: bool, threads: int, repeats: int, gen_tokens: int) -> dict[str, object]:
    import llama_cpp

    default = llama_cpp.llama_cpp.llama_model_default_params

    def params() -> object:
        p = default()
        p.use_extra_bufts = extra_buffers
        return p

    llama_cpp.llama_cpp.llama_model_default_params = params
    t0 = time.perf_counter()
    llm = llama_cpp.Llama(model_path=model, n_ctx=4096, n_threads=threads, n_threads_batch=threads, verbose=False,
                          seed=0)
    load_s = time.perf_counter() - t0
    body = (TEXT + " ") * 8
    words = body.split()[:250]
    prompts = [f"Request {i}. Summarise the following text.\n{' '.join(words)}\nSummary:" for i in range(repeats + 1)]
    llm.create_completion(prompts[0], max_tokens=1, temperature=0.0)  # warm up
    times = []
    for prompt in prompts[1:]:
        llm.reset()
        t0 = time.perf_counter()
        llm.create_completion(prompt, max_tokens=1, temperature=0.0)
        times.append(time.perf_counter() - t0)
    n_prompt = len(llm.tokenize(prompts[1].encode()))
    llm.reset()
    t0 = time.perf_counter()
    out = llm.create_completion("Write a long story about a lighthouse keeper.", max_tokens=gen_tokens,
                                temperature=0.0, logit_bias={llm.token_eos(): -100.0})  # all gen_tokens
    gen_s = time.perf_counter() - t0
    n_gen = out["usage"]["completion_tokens"]
    return {"load_s": load_s, "answer_s": statistics.median(times), "prompt_tokens": n_prompt,
            "ms_per_token": 1000 * gen_s / max(1, n_gen), "gen_tokens": n_gen,
            "set": bool(llm.model_params.use_extra_bufts)}


def run(model: str, extra_buffers: bool, threads: int, args: argparse.Namespace) -> dict[str, object]:
    cmd = [sys.executable, __file__, model, "--worker", json.dumps(extra_buffers), "--threads", str(threads),
           "--repeats", str(args.repeats), "--gen-tokens", str(args.gen_tokens)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode < 0:
        return {"crashed": signal.Signals(-done.returncode).name}
    if done.returncode:
        return {"error": (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, nargs="+", default=[2])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--gen-tokens", type=int, default=64)
    ap.add_argument("--worker")
    args = ap.parse_args()
    if args.worker is not None:
        print(json.dumps(worker(args.model, json.loads(args.worker), args.threads[0], args.repeats, args.gen_tokens)))
        return
    flags = sorted({f for f in Path("/proc/cpuinfo").read_text().split() if f.startswith("amx")})
    print(f"model {Path(args.model).name}; CPU AMX flags: {' '.join(flags) or 'none'}")
    for threads in args.threads:
        rows = {setting: run(args.model, setting, threads, args) for setting in (False, True)}
        for setting, row in rows.items():
            name = f"threads {threads:2d} extra_buffers={str(setting).lower():5s}"
            if "crashed" in row or "error" in row:
                print(f"  {name} {'killed by ' + str(row['crashed']) if 'crashed' in row else row['error']}")
                continue
            print(f"  {name} load {row['load_s']:.2f} s, 1-token answer on {row['prompt_tokens']} prompt tokens "
                  f"{row['answer_s']:.3f} s ({row['prompt_tokens'] / row['answer_s']:.0f} tok/s), generation "
                  f"{row['ms_per_token']:.1f} ms/token ({row['gen_tokens']} tokens)", flush=True)
        off, on = rows[False], rows[True]
        if "answer_s" in off and "answer_s" in on:
            print(f"  threads {threads:2d} off / on: prompt {off['answer_s'] / on['answer_s']:.2f}x the time, "
                  f"generation {off['ms_per_token'] / on['ms_per_token']:.2f}x", flush=True)


if __name__ == "__main__":
    main()
