"""Evidence for ``assay meta --labels``: coverage and width of the human-only and PPI++ intervals, calibration, juries.

Real judges' scores: the five judges of Shen et al. 2023 on SummEval's 1,200 abstractive summaries (their
raw answers, imported with ``assay import`` as ``benchmarks/shen_import.py`` does; no licence is stated,
so they are read from the shared data directory and never copied into the repository), UniEval's
published predictions on Topical-Chat's 360 responses, and any judge's run directory given with ``--run`` (the
embedded judge's on Topical-Chat: the units it scored). For each judge, dimension and K in (50, 100, 200):
1,000 random label subsets of the pool; for each, the 95% human-only and PPI++ intervals of the pool's mean
human rating in every interval kind of ``--interval`` (normal, t, hall; bootstrap-t below 200 labels, where
``auto`` uses it), all on the same subsets. Reported: empirical coverage of the pool mean (the truth here), the
median width ratio PPI++ / human-only and its theoretical value sqrt(1 - rho^2 N / (n + N)) for the judge's
correlation rho with the human ratings over the pool (PPI++'s variance at the tuned lambda; sqrt(1 - rho^2) as N
grows).

The 1,000 subsets' estimates and standard errors are computed with a vectorised copy of the estimators (the
formulas of ``ppi_py.classical_mean_ci`` and ``ppi_py.ppi_mean_ci`` with PPI++'s lambda), their intervals by the
package's own ``assay.meta.trust.small.bounds``; the script first checks every kind against
``assay.meta.trust.estimate_mean`` (which calls ``ppi_py``; bootstrap-t with the same seed) on a few subsets and
stops if they differ.

Stratified picks (GPT-4 on SummEval, K = 100 and 200, 100 picks by ``pick(strategy="stratified")``, estimated with
weights 1/p as ``--human`` reads a sheet back): coverage and median width of the dimension means.

Per system (GPT-4 on SummEval, K = 100 and 200, 200 subsets): coverage of each system's mean and of the
differences between systems, through the package's ``estimate_mean`` and ``difference``, per interval kind; how
many systems get no interval (labels all equal).

Also: calibration (isotonic and linear, K = 100, 200 subsets): held-out MAE before and after, cross-fitted on
the labels (what ``--calibrate`` reports) and on the unlabelled rest (the truth); the juries of the five Shen
judges (``assay jury``: equal weights, and weights learned on 100 labels with cross-fitting) against their best
single judge: sample-level Spearman and the PPI++/human-only width ratio (normal interval) at K = 100. The embedded
judge enters through ``--run`` (a SmolLM2 run over SummEval's 1,200 summaries is not cheap on two shared cores;
Topical-Chat's 360 responses are).

Usage: python benchmarks/trust.py [--subsets 1000] [--work DIR] [--run DIR ...] [--markdown]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np
from scipy.stats import norm, spearmanr

sys.path.insert(0, str(Path(__file__).resolve().parent))
from shen_import import DATA as SHEN
from shen_import import DATASET, DIMENSIONS, build_answers

from assay.meta.inputs import load_scores
from assay.meta.trust import calibrate, difference, estimate_mean, pick, to_human_scale
from assay.meta.trust.ppi import AUTO_BELOW, choose_interval
from assay.meta.trust.session import judge_scales
from assay.meta.trust.small import INTERVALS, bounds

UNIEVAL = SHEN.parent / "topical_chat.unieval_predictions.json"
TC_DIMS = ("naturalness", "coherence", "engagingness", "groundedness")
KS = (50, 100, 200)


def shen_runs(work: Path) -> dict[str, Path]:
    """One imported run per Shen judge (reused when already there)."""
    from assay.importer.write import ImportOptions, import_answers

    runs = {}
    for judge in sorted(p.name for p in SHEN.iterdir() if p.is_dir()):
        run = work / "runs" / judge
        if not (run / "run.sqlite").exists():
            answers = work / f"{judge}.rts.jsonl"
            build_answers(SHEN / judge, answers)
            for dim in DIMENSIONS:
                import_answers(answers, ImportOptions(method="direct", dataset=DATASET, dimension=dim, answers=dim,
                                                      id="id", judge_name=judge), run)
        runs[judge] = run
    return runs


def run_pools(run: Path) -> tuple[dict[tuple[str, str, str], tuple], int]:
    """A judge's run directory read through the package's readers (``load_scores``, ``judge_scales``): per dimension,
    the human ratings and the judge's scores on the human scale over the units the judge scored (a run still going,
    or one that failed units, covers fewer than the dataset: the pool, and its mean, is then those units)."""
    table = load_scores(run)
    info = table.describe()
    scales = judge_scales(run)
    data = {"topical-chat": "Topical-Chat", "summeval": "SummEval"}.get(info.get("dataset") or "", info.get("dataset"))
    out = {}
    for dim in table.dimensions():
        frame = table.dim(dim).dropna(subset=["score", "human"])
        if len(frame) < 60:
            continue
        human = table.scales.get(dim)
        f = to_human_scale(frame["score"].to_numpy(), scales.get(dim), human[:2] if human else None)
        out[(str(data), f"{info.get('judge')} ({run.name}: {len(frame)} units)", dim)] = (
            frame["human"].to_numpy(float), f, human)
    return out, int(table.frame["sample_id"].nunique())


def pool(table, dim: str, scales: dict) -> tuple[np.ndarray, np.ndarray]:
    """Human ratings and the judge's scores on the human scale (a unit the judge failed: the judge's mean,
    as ``assay meta`` does) over the units with a human rating."""
    frame = table.dim(dim)
    frame = frame[frame["human"].notna()]
    human = table.scales.get(dim)
    yhat = to_human_scale(frame["score"].to_numpy(), scales.get(dim), human[:2] if human else None)
    yhat = np.where(np.isnan(yhat), np.nanmean(yhat), yhat)
    return frame["human"].to_numpy(float), yhat


def intervals(y: np.ndarray, f: np.ndarray, lab: np.ndarray, alpha: float = 0.05,
              kinds: tuple[str, ...] = ("normal",), rng: np.random.Generator | int = 0) -> dict[str, np.ndarray]:
    """Human-only and PPI++ intervals for each row of ``lab`` (B x n indices of labelled units), vectorised.

    The estimates and standard errors are ``ppi_py``'s formulas; each kind of interval around them comes from the
    package's own small-sample layer (``assay.meta.trust.small.bounds``), as ``estimate_mean`` builds it.
    """
    z = norm.ppf(1 - alpha / 2)
    mask = np.zeros((lab.shape[0], len(y)), bool)
    np.put_along_axis(mask, lab, True, axis=1)
    unl = np.argsort(mask, axis=1, kind="stable")[:, : len(y) - lab.shape[1]]  # the unlabelled units of each row
    yl, fl, fu = y[lab], f[lab], f[unl]
    n, big_n = yl.shape[1], fu.shape[1]
    h_est, h_se = yl.mean(1), yl.std(1) / math.sqrt(n)
    theta = fu.mean(1) + (yl - fl).mean(1)
    g, gh, gu = yl - theta[:, None], fl - theta[:, None], fu - theta[:, None]
    cov = ((g - g.mean(1, keepdims=True)) * (gh - gh.mean(1, keepdims=True))).mean(1)
    var = np.concatenate([gh, gu], axis=1).var(1, ddof=1)
    lam = np.clip(np.where(var > 0, cov / ((1 + n / big_n) * np.where(var > 0, var, 1)), 0), 0, 1)[:, None]
    p_est = (lam * fu).mean(1) + (yl - lam * fl).mean(1)
    se_u = (lam * fu).std(1) / math.sqrt(big_n)
    p_se = np.sqrt(se_u**2 + (yl - lam * fl).std(1) ** 2 / n)
    out = {"h_lo": h_est - z * h_se, "h_hi": h_est + z * h_se, "p_lo": p_est - z * p_se, "p_hi": p_est + z * p_se,
           "lam": lam[:, 0], "h_est": h_est, "h_se": h_se, "p_est": p_est, "p_se": p_se, "se_u": se_u,
           "h_terms": yl, "p_terms": yl - lam * fl}
    for kind in kinds:
        for who, terms, su in (("h", yl, np.zeros(len(yl))), ("p", yl - lam * fl, se_u)):
            lo, hi = bounds(out[f"{who}_est"], out[f"{who}_se"], n, alpha=alpha, kind=kind, terms=terms, se_u=su,
                            seed=rng)
            out[f"{who}_lo_{kind}"], out[f"{who}_hi_{kind}"] = lo, hi
    return out


def check_against_package(y: np.ndarray, f: np.ndarray, rng: np.random.Generator) -> None:
    """The vectorised copy must give the package's (ppi_py's) intervals, each kind: stop otherwise."""
    lab = np.stack([rng.choice(len(y), 60, replace=False) for _ in range(3)])
    got = intervals(y, f, lab, kinds=tuple(k for k in INTERVALS if k != "bootstrap-t"))
    for b in range(3):
        rest = np.setdiff1d(np.arange(len(y)), lab[b])
        for kind in INTERVALS:
            ref = estimate_mean(y[lab[b]], f[lab[b]], f[rest], interval=kind, seed=7)
            want = [ref.human_only.low, ref.human_only.high, ref.ppi.low, ref.ppi.high]
            if kind == "bootstrap-t":  # the same resamples (seed 7) from the benchmark's terms and standard errors
                have = [v[0] for who in ("h", "p") for v in bounds(
                    got[f"{who}_est"][b:b + 1], got[f"{who}_se"][b:b + 1], 60, alpha=0.05, kind=kind,
                    terms=got[f"{who}_terms"][b:b + 1], se_u=got["se_u"][b:b + 1] * (who == "p"), seed=7)]
            else:
                have = [got[f"{who}_{side}_{kind}"][b] for who in ("h", "p") for side in ("lo", "hi")]
            if not np.allclose(want, have, rtol=1e-9, atol=1e-12):
                raise SystemExit(f"vectorised {kind} intervals differ from assay.meta.trust.estimate_mean: "
                                 f"{have} vs {want}")


def simulate(y: np.ndarray, f: np.ndarray, k: int, subsets: int, rng: np.random.Generator,
             kinds: tuple[str, ...] | None = None) -> dict[str, float]:
    """Coverage and median width ratio of each interval kind over the same ``subsets`` random label subsets."""
    lab = np.argsort(rng.random((subsets, len(y))), axis=1)[:, :k]
    # bootstrap-t where auto uses it (below AUTO_BELOW labels): at K = 200 it would cost more than all the rest
    kinds = kinds or tuple(kd for kd in INTERVALS if kd != "bootstrap-t" or k < AUTO_BELOW)
    iv = intervals(y, f, lab, kinds=kinds, rng=rng)
    truth = y.mean()
    rho = float(np.corrcoef(y, f)[0, 1])
    big_n = len(y) - k
    out = {"k": k, "rho": rho, "n_pool": len(y),
           "theory": math.sqrt(1 - max(rho, 0) ** 2 * big_n / (k + big_n)), "theory_inf": math.sqrt(1 - rho**2),
           "lam": float(np.median(iv["lam"]))}
    for kind in kinds:
        h_lo, h_hi, p_lo, p_hi = (iv[f"{w}_{s}_{kind}"] for w in ("h", "p") for s in ("lo", "hi"))
        out[kind] = {"cover_h": float(np.mean((h_lo <= truth) & (truth <= h_hi))),
                     "cover_p": float(np.mean((p_lo <= truth) & (truth <= p_hi))),
                     "width_h": float(np.median(h_hi - h_lo)), "width_p": float(np.median(p_hi - p_lo)),
                     "ratio": float(np.median((p_hi - p_lo) / (h_hi - h_lo)))}
    auto = choose_interval("auto", k)
    if auto in out:
        out.update({key: out[auto][key] for key in ("cover_h", "cover_p", "ratio")}, auto=auto)
    return out


def calibration(y: np.ndarray, f: np.ndarray, scale, kind: str, subsets: int, rng: np.random.Generator,
                k: int = 100) -> dict[str, float]:
    """Mean over subsets of the cross-fitted MAE before/after (what --calibrate reports) and of the MAE on the
    unlabelled rest (the truth)."""
    acc = {"cf_before": [], "cf_after": [], "rest_before": [], "rest_after": []}
    for _ in range(subsets):
        lab = rng.choice(len(y), k, replace=False)
        rest = np.setdiff1d(np.arange(len(y)), lab)
        res = calibrate(kind, f[lab], y[lab], f[rest], seed=int(rng.integers(1 << 30)), scale=scale)
        acc["cf_before"].append(res["before"]["mae"])
        acc["cf_after"].append(res["after"]["mae"])
        acc["rest_before"].append(float(np.mean(np.abs(y[rest] - f[rest]))))
        acc["rest_after"].append(float(np.mean(np.abs(y[rest] - res["calibrated"]))))
    return {key: float(np.mean(v)) for key, v in acc.items()}


def system_coverage(table, dim: str, scales: dict, k: int, subsets: int, rng: np.random.Generator,
                    kinds: tuple[str, ...] = INTERVALS) -> dict:
    """Per-system means and the differences between systems, through the package's own estimators
    (``estimate_mean`` per system with the human scale as ``assay meta`` passes it, ``difference`` per pair), for
    each interval kind on the same subsets: coverage of the pool's system means and of their differences, pooled
    over systems and pairs, among the estimates that have an interval; how many have none (all labels equal);
    and the system means' coverage split at 10 labels."""
    frame = table.dim(dim)
    frame = frame[frame["human"].notna()]
    human = table.scales.get(dim)
    f = to_human_scale(frame["score"].to_numpy(), scales.get(dim), human[:2] if human else None)
    f = np.where(np.isnan(f), np.nanmean(f), f)
    y, systems = frame["human"].to_numpy(float), frame["system_id"].to_numpy()
    names = sorted(set(systems))
    truth = {s: y[systems == s].mean() for s in names}
    hits: dict[str, dict[str, list]] = {kind: {} for kind in kinds}

    def add(kind: str, key: str, value: bool) -> None:
        hits[kind].setdefault(key, []).append(value)

    for _ in range(subsets):
        lab = np.zeros(len(y), bool)
        lab[rng.choice(len(y), k, replace=False)] = True
        seed = int(rng.integers(1 << 30))
        for kind in kinds:
            est = {}
            for s in names:
                m = systems == s
                if lab[m].sum() < 2:
                    continue
                est[s] = estimate_mean(y[m & lab], f[m & lab], f[m & ~lab], interval=kind,
                                       scale=human[:2] if human else None, seed=seed)
                few = "lt10" if lab[m].sum() < 10 else "ge10"
                for part, key in (("human_only", "h"), ("ppi", "p")):
                    iv = getattr(est[s], part)
                    add(kind, f"none_{key}", iv.low is None)
                    if iv.low is not None:
                        add(kind, f"sys_{key}", iv.low <= truth[s] <= iv.high)
                        add(kind, f"sys_{few}_{key}", iv.low <= truth[s] <= iv.high)
            done = sorted(est)
            for i, a in enumerate(done):
                for b in done[i + 1:]:
                    d, t = difference(est[a], est[b]), truth[a] - truth[b]
                    for part, key in (("human_only", "h"), ("ppi", "p")):
                        if "low" in d[part]:
                            add(kind, f"diff_{key}", d[part]["low"] <= t <= d[part]["high"])
                            add(kind, f"diff_excl0_{key}", d[part]["low"] > 0 or d[part]["high"] < 0)
    return {"k": k, **{kind: {key: float(np.mean(v)) for key, v in h.items()} for kind, h in hits.items()}}


def stratified_coverage(table, scales: dict, k: int, subsets: int, seed0: int = 0) -> dict[str, dict[str, float]]:
    """Labels picked by ``assay labels pick --strategy stratified`` (the package's ``pick``), estimated with their
    inclusion probabilities as ``--human`` reads them back: coverage and median width per dimension."""
    import pandas as pd

    frames = {d: table.dim(d).set_index("sample_id") for d in DIMENSIONS}
    yhat = {}
    for d, fr in frames.items():
        human = table.scales.get(d)
        f = to_human_scale(fr["score"].to_numpy(), scales.get(d), human[:2] if human else None)
        yhat[d] = pd.Series(np.where(np.isnan(f), np.nanmean(f), f), index=fr.index)
    first = frames[DIMENSIONS[0]]
    units = pd.DataFrame({"sample_id": first.index, "system_id": first["system_id"].to_numpy(),
                          "judge": pd.concat(yhat.values(), axis=1).mean(axis=1).reindex(first.index).to_numpy()})
    out: dict[str, dict[str, list]] = {d: {"h": [], "p": [], "w_h": [], "w_p": []} for d in DIMENSIONS}
    for b in range(subsets):
        picked, _ = pick(units, k, strategy="stratified", seed=seed0 + b)
        ids, p = picked["sample_id"].to_numpy(), picked["inclusion_probability"].to_numpy()
        for d in DIMENSIONS:
            y, truth = frames[d]["human"], frames[d]["human"].mean()
            res = estimate_mean(y.loc[ids].to_numpy(), yhat[d].loc[ids].to_numpy(), yhat[d].to_numpy(), weights=1 / p,
                                interval="normal")  # the sampling design's cost, against the normal random draw
            out[d]["h"].append(res.human_only.low <= truth <= res.human_only.high)
            out[d]["p"].append(res.ppi.low <= truth <= res.ppi.high)
            out[d]["w_h"].append(res.human_only.high - res.human_only.low)
            out[d]["w_p"].append(res.ppi.high - res.ppi.low)
    return {d: {"k": k, "cover_h": float(np.mean(v["h"])), "cover_p": float(np.mean(v["p"])),
                "width_h": float(np.median(v["w_h"])), "width_p": float(np.median(v["w_p"]))} for d, v in out.items()}


def sample_level_spearman(table, dim: str) -> float:
    """SummEval's convention: Spearman per article across its summaries, averaged."""
    frame = table.dim(dim).dropna(subset=["score", "human"])
    vals = [spearmanr(g["score"], g["human"]).statistic for _, g in frame.groupby("doc_id")
            if g["score"].nunique() > 1 and g["human"].nunique() > 1]
    return float(np.mean(vals))


def fmt(x: float, d: int = 3) -> str:
    return "-" if x is None or x != x else f"{x:.{d}f}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--subsets", type=int, default=1000)
    ap.add_argument("--calibration-subsets", type=int, default=200)
    ap.add_argument("--system-subsets", type=int, default=200)
    ap.add_argument("--stratified-picks", type=int, default=100)
    ap.add_argument("--work", type=Path, default=Path("/tmp/assay-trust-bench"))
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--run", type=Path, action="append", default=[],
                    help="A judge's run directory on SummEval or Topical-Chat (repeatable): its rows join the table")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    rng = np.random.default_rng(0)
    pools: dict[tuple[str, str, str], tuple[np.ndarray, np.ndarray, tuple]] = {}
    runs = shen_runs(args.work)
    tables = {}
    for judge, run in runs.items():
        tables[judge] = load_scores(run)
        scales = judge_scales(run)
        for dim in DIMENSIONS:
            pools[("SummEval", judge, dim)] = (*pool(tables[judge], dim, scales), tables[judge].scales[dim])
    tc = load_scores(UNIEVAL, dataset="topical-chat")
    for dim in TC_DIMS:
        raw = tc.dim(dim)["score"].to_numpy()  # UniEval's scores are not on the human scale: mapped by their range
        pools[("Topical-Chat", "UniEval", dim)] = (*pool(tc, dim, {dim: (np.nanmin(raw), np.nanmax(raw))}),
                                                   tc.scales[dim])
    y0, f0, _ = next(iter(pools.values()))
    check_against_package(y0, f0, rng)
    t_load = time.perf_counter() - t0
    sims = [{"data": d, "judge": j, "dim": dim, **simulate(y, f, k, args.subsets, rng)}
            for (d, j, dim), (y, f, _) in pools.items() for k in KS if k <= len(y) - 40]
    extra_runs, rng_runs = {}, np.random.default_rng(1)  # its own stream: the rows above do not move with --run
    for run in args.run:
        found, units = run_pools(run)
        extra_runs[str(run)] = {"units_in_run": units, "scored": {k[2]: len(v[0]) for k, v in found.items()}}
        sims += [{"data": d, "judge": j, "dim": dim, **simulate(y, f, k, args.subsets, rng_runs)}
                 for (d, j, dim), (y, f, _) in found.items() for k in KS if k <= len(y) - 40]
    t_sim = time.perf_counter() - t0 - t_load
    cals = [{"data": d, "judge": j, "dim": dim, "kind": kind,
             **calibration(y, f, scale, kind, args.calibration_subsets, rng)}
            for (d, j, dim), (y, f, scale) in pools.items() if j in ("gpt-4-0314", "UniEval")
            for kind in ("isotonic", "linear")]
    per_system = [{"judge": "gpt-4-0314", "dim": dim,
                   **system_coverage(tables["gpt-4-0314"], dim, judge_scales(runs["gpt-4-0314"]), k,
                                     args.system_subsets, rng)}
                  for dim in DIMENSIONS for k in (100, 200)]
    stratified = {str(k): stratified_coverage(tables["gpt-4-0314"], judge_scales(runs["gpt-4-0314"]), k,
                                              args.stratified_picks) for k in (100, 200)}
    from assay.importer.jury import make_jury

    juries = {"jury (5, equal)": (args.work / "jury", {}),
              "jury (5, learned on 100 labels)": (args.work / "jury-learned", {"weights": "learned", "labels": 100})}
    for name, (jury_dir, how) in juries.items():
        if not (jury_dir / "run.sqlite").exists():
            make_jury([runs[j] for j in sorted(runs)], jury_dir, **how)
        tables[name] = load_scores(jury_dir)
    jury = {name: {dim: sample_level_spearman(t, dim) for dim in DIMENSIONS} for name, t in tables.items()}
    jury_ratio = {}
    for name, t in tables.items():
        scales = judge_scales(juries[name][0] if name in juries else runs[name])
        for dim in DIMENSIONS:
            y, f = pool(t, dim, scales)
            jury_ratio[(name, dim)] = simulate(y, f, 100, args.subsets, rng, ("normal",))["normal"]["ratio"]
    elapsed = time.perf_counter() - t0
    result = {"runs": extra_runs, "simulations": sims, "calibration": cals, "systems": per_system,
              "stratified": stratified,
              "jury_spearman": jury,
              "jury_ratio": {f"{n}|{d}": r for (n, d), r in jury_ratio.items()},
              "seconds": {"load": t_load, "simulate": t_sim, "total": elapsed}, "loadavg": os.getloadavg(),
              "subsets": args.subsets}
    (args.work / "trust.json").write_text(json.dumps(result, indent=1))
    print(f"{len(sims)} settings x {args.subsets} subsets in {t_sim:.1f} s (loading {t_load:.1f} s, total "
          f"{elapsed:.1f} s; load average {os.getloadavg()[0]:.2f}); {args.work / 'trust.json'}", file=sys.stderr)
    if args.markdown:
        print(markdown(result))


def _pct(c: dict | None, a: str = "cover_h", b: str = "cover_p") -> str:
    return "-" if c is None else f"{100 * c[a]:.1f} / {100 * c[b]:.1f}"


def summary(r: dict) -> list[str]:
    """Per interval kind and K: settings where both intervals reach 94%, the lowest coverage, and the largest gap
    between the median width ratio and its theory (what the docs' prose quotes)."""
    lines = ["| interval | K | settings with both ≥ 94% | lowest human-only / PPI++ | largest abs(ratio − theory) | "
             "ratio more than 0.05 from theory (below / above) |", "| --- | --- | --- | --- | --- | --- |"]
    for kind in INTERVALS:
        for k in KS:
            rows = [s for s in r["simulations"] if s["k"] == k and kind in s]
            if not rows:
                continue
            ok = sum(1 for s in rows if min(s[kind]["cover_h"], s[kind]["cover_p"]) >= 0.94)
            low_h, low_p = min(s[kind]["cover_h"] for s in rows), min(s[kind]["cover_p"] for s in rows)
            gap = max(abs(s[kind]["ratio"] - s["theory"]) for s in rows)
            below = sum(1 for s in rows if s[kind]["ratio"] < s["theory"] - 0.05)
            above = sum(1 for s in rows if s[kind]["ratio"] > s["theory"] + 0.05)
            lines.append(f"| {kind} | {k} | {ok} of {len(rows)} | {100 * low_h:.1f}% / {100 * low_p:.1f}% | "
                         f"{gap:.3f} | {below} / {above} |")
    return lines


def markdown(r: dict) -> str:
    kinds = " | ".join(f"coverage {k} (human / PPI++)" for k in INTERVALS)
    lines = [f"| data | judge | dimension | K | ρ | {kinds} | width human-only normal → bootstrap-t | width PPI++ "
             "normal → bootstrap-t | ratio PPI/human normal | ratio bootstrap-t | theory √(1-ρ²N/(n+N)) | √(1-ρ²) | "
             "median λ |", "| --- |" + " --- |" * (11 + len(INTERVALS))]
    for s in r["simulations"]:
        cells = " | ".join(_pct(s.get(k)) for k in INTERVALS)
        boot = s.get("bootstrap-t") or {}
        lines.append(f"| {s['data']} | {s['judge']} | {s['dim']} | {s['k']} | {fmt(s['rho'], 2)} | {cells} | "
                     f"{fmt(s['normal']['width_h'])} → {fmt(boot.get('width_h'))} | "
                     f"{fmt(s['normal']['width_p'])} → {fmt(boot.get('width_p'))} | "
                     f"{fmt(s['normal']['ratio'])} | {fmt(boot.get('ratio'))} | {fmt(s['theory'])} | "
                     f"{fmt(s['theory_inf'])} | {fmt(s['lam'], 2)} |")
    lines += ["", *summary(r)]
    lines += ["", "| data | judge | dimension | map | MAE before (cross-fit) | after (cross-fit) | "
              "MAE before (unlabelled rest) | after (unlabelled rest) |", "| --- |" * 1 + " --- |" * 7]
    for c in r["calibration"]:
        lines.append(f"| {c['data']} | {c['judge']} | {c['dim']} | {c['kind']} | {fmt(c['cf_before'])} | "
                     f"{fmt(c['cf_after'])} | {fmt(c['rest_before'])} | {fmt(c['rest_after'])} |")
    lines += ["", "| judge | dimension | K | interval | no interval (labels all equal) | system means: coverage "
              "human-only / PPI++ | systems under 10 labels | differences: coverage | differences excluding 0 |",
              "| --- |" * 1 + " --- |" * 8]
    for c in r["systems"]:
        for kind in INTERVALS:
            x = c[kind]
            lines.append(f"| {c['judge']} | {c['dim']} | {c['k']} | {kind} | {_pct(x, 'none_h', 'none_p')} | "
                         f"{_pct(x, 'sys_h', 'sys_p')} | "
                         f"{_pct(x, 'sys_lt10_h', 'sys_lt10_p') if 'sys_lt10_h' in x else '-'} | "
                         f"{_pct(x, 'diff_h', 'diff_p')} | {_pct(x, 'diff_excl0_h', 'diff_excl0_p')} |")
    lines += ["", "| labels picked | K | dimension | coverage human-only / PPI++ | median width human-only / PPI++ |",
              "| --- | --- | --- | --- | --- |"]
    for k, per_dim in r["stratified"].items():
        for d, c in per_dim.items():
            lines.append(f"| stratified (weights 1/p) | {k} | {d} | {100 * c['cover_h']:.1f}% / "
                         f"{100 * c['cover_p']:.1f}% | {fmt(c['width_h'])} / {fmt(c['width_p'])} |")
    lines += ["", "| judge | " + " | ".join(f"{d} ρ (width ratio)" for d in DIMENSIONS) + " | average ρ |",
              "| --- |" + " --- |" * (len(DIMENSIONS) + 1)]
    for name, row in r["jury_spearman"].items():
        cells = [f"{fmt(row[d])} ({fmt(r['jury_ratio'][f'{name}|{d}'])})" for d in DIMENSIONS]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {fmt(float(np.mean(list(row.values()))))} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
