"""Shen et al. 2023's published SummEval answers of five judges, imported with ``assay import`` and meta-evaluated.

The answers (DAMO-NLP-SG/LLM_summeval, no licence stated: read from the shared data directory, never
copied into the repository) are one JSON line per (article, system) per judge, dimension and prompt
style; this script takes the reason-then-score (``rts``) style, builds one JSONL per judge with
``id`` = ``<article id>:<system>`` (the system is in the directory name) and one field per dimension
holding the judge's raw answer, imports the four dimensions into one run per judge (method
``direct``: one answer per item, read by assay's answer reader), then runs ``assay meta`` (sample
level, SummEval's convention) per judge and ``assay compare`` over the five judges, on the dataset
``summeval-experts``, which keeps the three experts' ratings so that their agreement is shown beside
the judges'.

Usage: python benchmarks/shen_import.py [--data DIR] [--work DIR] [--markdown]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# the shared data lies beside the checkout (../shared) or beside the worktrees' directory (../../shared)
DATA = next((p for p in (ROOT.parent / "shared", ROOT.parents[1] / "shared") if p.is_dir()), ROOT.parent / "shared") \
    / "data" / "published" / "shen2023_summeval"
DIMENSIONS = ("coherence", "consistency", "fluency", "relevance")
DATASET = "summeval-experts"


def build_answers(judge_dir: Path, out: Path, style: str = "rts") -> int:
    """Write one JSONL of a judge's answers (``id`` and one field per dimension); returns the record count."""
    records: dict[str, dict[str, str]] = {}
    for system_dir in sorted(judge_dir.glob("eval_*_generations")):
        system = system_dir.name.removeprefix("eval_").removesuffix("_generations")
        for dim in DIMENSIONS:
            for line in (system_dir / f"{dim}_{style}.txt").read_text(encoding="utf-8").splitlines():
                if line.strip():
                    rec = json.loads(line)
                    records.setdefault(f"{rec['id']}:{system}", {})[dim] = rec["resp"]
    with out.open("w", encoding="utf-8") as fh:
        for sid, answers in records.items():
            fh.write(json.dumps({"id": sid, **answers}, ensure_ascii=False) + "\n")
    return len(records)


def assay(*args: str) -> str:
    """Run the ``assay`` command (this interpreter's), failing loudly."""
    done = subprocess.run([sys.executable, "-m", "assay.cli", *args], capture_output=True, text=True,
                          env={"COLUMNS": "200", **os.environ})
    if done.returncode:
        raise SystemExit(f"assay {' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done.stdout


def import_judge(judge: str, answers: Path, run_dir: Path) -> None:
    for dim in DIMENSIONS:
        assay("import", str(answers), "--dataset", DATASET, "--method", "direct", "--dimension", dim,
              "--answers", dim, "--id", "id", "--judge-name", judge, "--run-dir", str(run_dir))


def unreadable(run_dir: Path) -> dict[str, int]:
    """Parse failures per dimension, from the run's manifest."""
    from assay.run.store import RunStore

    with RunStore(run_dir, readonly=True) as store:
        imported = (store.manifest() or {}).get("imported", {})
    return {dim: imported[dim]["counts"]["parse_failed"] for dim in DIMENSIONS}


def fmt(x: float | None) -> str:
    return "-" if x is None or x != x else f"{x:.3f}"


def markdown(metas: dict[str, dict], fails: dict[str, dict[str, int]], comp: dict) -> str:
    """The tables of docs/benchmarks.md: correlations per judge, failures, agreement among judges and experts."""
    lines = ["| judge | " + " | ".join(f"{d} ρ / τ" for d in DIMENSIONS) + " | average ρ / τ | unreadable |",
             "| --- |" + " --- |" * (len(DIMENSIONS) + 2)]
    for judge, res in metas.items():
        rows = {r["dimension"]: r for r in res["rows"]}
        cells = [f"{fmt(rows[d]['spearman'])} / {fmt(rows[d]['kendall'])}" for d in [*DIMENSIONS, "average"]]
        lost = ", ".join(f"{d} {n}" for d, n in fails[judge].items() if n) or "0"
        lines.append(f"| {judge} | " + " | ".join(cells) + f" | {lost} |")
    lines += ["", "| raters | dimension | items | Krippendorff α (interval) | Fleiss κ | ICC(2,1) |",
              "| --- | --- | --- | --- | --- | --- |"]
    for who, rows in (("five judges", comp["agreement"]), ("three experts", comp["human_agreement"])):
        for r in rows:
            lines.append(f"| {who} | {r['dimension']} | {r['n_items']} ({r['n_complete']}) | "
                         f"{fmt(r.get('alpha_interval'))} | {fmt(r.get('fleiss_kappa'))} | {fmt(r.get('icc2_1'))} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=DATA.resolve())
    ap.add_argument("--work", type=Path, default=Path("/tmp/assay-shen-import"))
    ap.add_argument("--markdown", action="store_true", help="Print the docs tables")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    judges = sorted(p.name for p in args.data.iterdir() if p.is_dir())
    runs, metas, fails = [], {}, {}
    for judge in judges:
        answers = args.work / f"{judge}.rts.jsonl"
        n = build_answers(args.data / judge, answers)
        run_dir = args.work / "runs" / judge
        import_judge(judge, answers, run_dir)
        assay("meta", str(run_dir), "--level", "sample", "--json", str(args.work / f"{judge}.meta.json"))
        metas[judge] = json.loads((args.work / f"{judge}.meta.json").read_text())
        fails[judge] = unreadable(run_dir)
        runs.append(str(run_dir))
        print(f"{judge}: {n} records imported into {run_dir}; unreadable answers {fails[judge]}", file=sys.stderr)
    print(assay("compare", *runs, "--level", "sample", "--json", str(args.work / "compare.json")))
    if args.markdown:
        print(markdown(metas, fails, json.loads((args.work / "compare.json").read_text())))


if __name__ == "__main__":
    main()
