"""Reproduce UniEval's published Topical-Chat table from its published predictions, and time the bootstrap.

Usage::

    PYTHONPATH=src python benchmarks/meta_unieval.py [PREDICTIONS_JSON] [--bootstrap 1000]

Prints, per dimension, the turn-level Pearson r and Spearman rho that ``assay.meta`` computes next
to the values in UniEval's paper (Zhong et al. 2022, table on Topical-Chat), the difference, and how
long the correlations and the bootstrap intervals took.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from assay.meta import meta_evaluate

PUBLISHED = {"naturalness": (0.444, 0.514), "coherence": (0.595, 0.613), "engagingness": (0.557, 0.605),
             "groundedness": (0.536, 0.575)}
DEFAULT = (Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "meta"
           / "topical_chat.unieval_predictions.json")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("predictions", nargs="?", default=str(DEFAULT))
    ap.add_argument("--bootstrap", type=int, default=1000)
    args = ap.parse_args()
    t_imp = time.perf_counter()
    import scipy.stats  # noqa: F401 - a one-off import cost, timed apart from the statistics

    t0 = time.perf_counter()
    plain = meta_evaluate(args.predictions, level="turn", dimensions=list(PUBLISHED))
    t1 = time.perf_counter()
    boot = meta_evaluate(args.predictions, level="turn", dimensions=list(PUBLISHED), bootstrap=args.bootstrap)
    t2 = time.perf_counter()
    rows = {r["dimension"]: r for r in boot["rows"]}
    print(f"{'dimension':14} {'r':>7} {'paper':>7} {'rho':>7} {'paper':>7}  both match to 3 decimals")
    for dim, (r_pub, rho_pub) in PUBLISHED.items():
        r, rho = rows[dim]["pearson"], rows[dim]["spearman"]
        ok = round(r, 3) == r_pub and round(rho, 3) == rho_pub
        print(f"{dim:14} {r:7.3f} {r_pub:7.3f} {rho:7.3f} {rho_pub:7.3f}  {'yes' if ok else 'NO'}")
    print(f"import scipy.stats: {t0 - t_imp:.2f} s; correlations (3 measures x 4 dims): {t1 - t0:.2f} s; "
          f"with {args.bootstrap} bootstrap resamples: {t2 - t1:.2f} s")
    assert plain["rows"][0]["pearson"] == boot["rows"][0]["pearson"]


if __name__ == "__main__":
    main()
