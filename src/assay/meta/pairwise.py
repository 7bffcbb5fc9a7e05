"""Pairwise verdicts as statistics: consistency across orders, position bias, win rates, Bradley-Terry strengths,
length control and agreement with human preferences. Pure functions of a table of verdicts; no I/O, no model.

The input is one row per judged pair and dimension (:data:`COLUMNS`): the input (``doc_id``), the two outputs'
systems (``a_system``, ``b_system``), and the verdict in each order, written as the prompt's own letter:
``ab`` is the verdict on the prompt that shows A first, ``ba`` the verdict on the prompt that shows B first,
each ``"A"`` (the first position wins), ``"B"`` (the second wins), ``"C"`` (tie) or None (unread). A pair's
outcome is the preference for A: 1 (A wins in both orders), 0 (B wins in both), 0.5 (a tie in both, or a
verdict that flips with the order: inconsistent, counted as a tie, never a win; ``inconsistent="drop"`` leaves
it out instead). Optional columns: ``a_length`` / ``b_length`` (for the length-controlled win rate) and
``a_human`` / ``b_human`` (human mean ratings, for the agreement with people).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from assay.meta.bootstrap import resample_indices
from assay.types import Scale

__all__ = ["COLUMNS", "Inconsistent", "agreement", "bradley_terry", "default_margin", "first_position_interval",
           "human_preferences", "implied_preferences", "length_controlled", "order_stats", "outcomes",
           "pairwise_report", "verdict_table", "win_rates"]

#: The columns every verdict table has.
COLUMNS = ("doc_id", "a_system", "b_system", "dimension", "ab", "ba")
Inconsistent = Literal["tie", "drop"]
_VERDICTS = {"A", "B", "C"}


def _winner(verdict: str | None, first: str) -> str | None:
    """Which output a verdict chose, as ``"A"``/``"B"``/``"C"`` of the pair (not of the prompt)."""
    if verdict not in _VERDICTS:
        return None
    if verdict == "C":
        return "C"
    second = "B" if first == "A" else "A"
    return first if verdict == "A" else second


def outcomes(frame: pd.DataFrame, inconsistent: Inconsistent = "tie") -> pd.DataFrame:
    """``frame`` with each pair's reading added: ``win_ab`` / ``win_ba`` (the output chosen in each order),
    ``consistent`` (both orders read and equal), ``pref`` (the preference for A: 1, 0, 0.5; NaN when a verdict
    is unread, or for an inconsistent pair under ``inconsistent="drop"``)."""
    if inconsistent not in ("tie", "drop"):
        raise ValueError(f"inconsistent must be 'tie' or 'drop', got {inconsistent!r}")
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"verdict table lacks column(s) {missing}")
    out = frame.copy()
    out["win_ab"] = [_winner(v, "A") for v in out["ab"]]
    out["win_ba"] = [_winner(v, "B") for v in out["ba"]]
    read = out["win_ab"].notna() & out["win_ba"].notna()
    out["consistent"] = read & (out["win_ab"] == out["win_ba"])
    value = out["win_ab"].map({"A": 1.0, "B": 0.0, "C": 0.5})
    pref = np.where(out["consistent"], value, 0.5 if inconsistent == "tie" else np.nan)
    out["pref"] = np.where(read, pref, np.nan).astype(float)
    return out


def order_stats(frame: pd.DataFrame) -> dict[str, Any]:
    """How the verdicts depend on the order, over the pairs read in both orders.

    Returns:
        ``consistency``: share of pairs whose two orders choose the same output (or both a tie);
        ``position_bias``: of the inconsistent pairs, the share whose flip favours the first position (it chose
        the first position in more of its two orders than the second: ``[[A]]`` then ``[[A]]``, or ``[[A]]``
        then a tie); a judge whose flips are noise is near 0.5, one that always picks the first position is 1;
        ``second_position_bias``: the same for the second position; ``first_position_win_rate``: the share of
        all read verdicts (both orders) won by the first position, ties as half (0.5 means no lean);
        ``tie_rate``: the share of read verdicts that are ties; ``n_pairs`` (read in both orders),
        ``n_inconsistent``, ``n_unread`` (a verdict missing).
    """
    read = frame["ab"].isin(_VERDICTS) & frame["ba"].isin(_VERDICTS)
    both = frame[read]
    firsts = (both["ab"] == "A").astype(int) + (both["ba"] == "A").astype(int)
    seconds = (both["ab"] == "B").astype(int) + (both["ba"] == "B").astype(int)
    consistent = both["consistent"] if "consistent" in both else outcomes(both)["consistent"]
    flip = ~consistent.astype(bool)
    n, n_flip = len(both), int(flip.sum())
    verdicts = pd.concat([frame["ab"], frame["ba"]])
    verdicts = verdicts[verdicts.isin(_VERDICTS)]
    first_points = (verdicts == "A").sum() + 0.5 * (verdicts == "C").sum()
    return {
        "consistency": float(consistent.mean()) if n else None,
        "position_bias": float((firsts[flip] > seconds[flip]).mean()) if n_flip else None,
        "second_position_bias": float((seconds[flip] > firsts[flip]).mean()) if n_flip else None,
        "first_position_win_rate": float(first_points / len(verdicts)) if len(verdicts) else None,
        "tie_rate": float((verdicts == "C").mean()) if len(verdicts) else None,
        "n_pairs": n, "n_inconsistent": n_flip, "n_unread": int((~read).sum()),
    }


def first_position_interval(frame: pd.DataFrame, *, n_boot: int = 1000, seed: int = 0,
                            ci: float = 0.95) -> tuple[float | None, float | None]:
    """Percentile bootstrap interval (inputs resampled) of the first-position win rate of :func:`order_stats`."""
    docs = list(dict.fromkeys(frame["doc_id"]))
    if not docs or not n_boot:
        return None, None
    pos = {d: i for i, d in enumerate(docs)}
    points, counts = np.zeros(len(docs)), np.zeros(len(docs))
    for col in ("ab", "ba"):
        for d, v in zip(frame["doc_id"], frame[col], strict=True):
            if v in _VERDICTS:
                points[pos[d]] += 1.0 if v == "A" else 0.5 if v == "C" else 0.0
                counts[pos[d]] += 1
    weights = np.stack([np.bincount(row, minlength=len(docs)) for row in resample_indices(len(docs), n_boot, seed)])
    return _interval(_ratio(weights @ points, weights @ counts), ci)


def _tallies(frame: pd.DataFrame, systems: list[str], docs: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per input, ``points[d, i, j]`` (i's preference points against j, ties as half) and ``games[d, i, j]``."""
    pos = {s: i for i, s in enumerate(systems)}
    dpos = {d: i for i, d in enumerate(docs)}
    k, n = len(docs), len(systems)
    points, games = np.zeros((k, n, n)), np.zeros((k, n, n))
    scored = frame[frame["pref"].notna()]
    for d, a, b, p in zip(scored["doc_id"], scored["a_system"], scored["b_system"], scored["pref"], strict=True):
        i, j, r = pos[a], pos[b], dpos[d]
        points[r, i, j] += p
        points[r, j, i] += 1 - p
        games[r, i, j] += 1
        games[r, j, i] += 1
    return points, games


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def _interval(values: np.ndarray, ci: float) -> tuple[float | None, float | None]:
    ok = values[~np.isnan(values)]
    if not len(ok):
        return None, None
    tail = (1 - ci) / 2 * 100
    lo, hi = np.percentile(ok, [tail, 100 - tail])
    return float(lo), float(hi)


def _none(x: float) -> float | None:
    return None if x is None or np.isnan(x) else float(x)


def win_rates(frame: pd.DataFrame, *, n_boot: int = 1000, seed: int = 0, ci: float = 0.95) -> dict[str, Any]:
    """Each system's win rate against each other system and overall (ties as half), with percentile bootstrap
    intervals of the overall rate that resample inputs (an input's pairs stay together).

    Args:
        frame: Pairs with ``pref`` (:func:`outcomes`).

    Returns:
        ``{"systems": {s: {"win_rate", "low", "high", "games"}}, "matrix": {s: {t: rate or None}}}``: the matrix
        row is the row system's rate against the column system.
    """
    systems = sorted(set(frame["a_system"]) | set(frame["b_system"]))
    docs = list(dict.fromkeys(frame["doc_id"]))
    points, games = _tallies(frame, systems, docs)
    total_p, total_g = points.sum(axis=0), games.sum(axis=0)
    overall = _ratio(total_p.sum(axis=1), total_g.sum(axis=1))
    boot = np.empty((0, len(systems)))
    if n_boot and docs:
        weights = np.stack([np.bincount(row, minlength=len(docs)) for row in resample_indices(len(docs), n_boot, seed)])
        boot = _ratio(weights @ points.sum(axis=2), weights @ games.sum(axis=2))
    out: dict[str, Any] = {"systems": {}, "matrix": {}}
    pair_rate = _ratio(total_p, total_g)
    for i, s in enumerate(systems):
        lo, hi = _interval(boot[:, i], ci) if len(boot) else (None, None)
        out["systems"][s] = {"win_rate": _none(overall[i]), "low": lo, "high": hi, "games": int(total_g[i].sum())}
        out["matrix"][s] = {t: _none(pair_rate[i, j]) for j, t in enumerate(systems) if t != s}
    return out


def _bt_fit(points: np.ndarray, alpha: float) -> np.ndarray:
    import choix

    return np.asarray(choix.ilsr_pairwise_dense(points, alpha=alpha), dtype=float)


def bradley_terry(frame: pd.DataFrame, *, n_boot: int = 1000, seed: int = 0, ci: float = 0.95,
                  alpha: float = 0.01) -> dict[str, dict[str, float | None]]:
    """Bradley-Terry strengths (log-scale, centred on zero, fitted by ``choix``'s iterative Luce spectral
    ranking with a small ``alpha`` regularisation so that an unbeaten system stays finite), ties counted as
    half a win each way, with percentile intervals from refits on inputs resampled as in :func:`win_rates` (a
    resample without any game of a system leaves that system out of its interval).

    Returns:
        ``{system: {"bt", "bt_low", "bt_high"}}``.
    """
    systems = sorted(set(frame["a_system"]) | set(frame["b_system"]))
    docs = list(dict.fromkeys(frame["doc_id"]))
    points, games = _tallies(frame, systems, docs)
    if len(systems) < 2:
        return {s: {"bt": None, "bt_low": None, "bt_high": None} for s in systems}
    fit = _bt_fit(points.sum(axis=0), alpha)
    boot = np.full((n_boot, len(systems)), np.nan)
    played = games.sum(axis=2)
    for b, row in enumerate(resample_indices(len(docs), n_boot, seed) if n_boot else []):
        weights = np.bincount(row, minlength=len(docs))
        strengths = _bt_fit(np.tensordot(weights, points, axes=1), alpha)
        boot[b] = np.where(weights @ played > 0, strengths, np.nan)  # a system absent from a resample: no value
    out = {}
    for i, s in enumerate(systems):
        lo, hi = _interval(boot[:, i], ci) if n_boot else (None, None)
        out[s] = {"bt": float(fit[i]), "bt_low": lo, "bt_high": hi}
    return out


def length_controlled(frame: pd.DataFrame, *, alpha: float = 1e-3) -> dict[str, float | None]:
    """Each system's win rate at zero length difference, as AlpacaEval 2.0 controls for length.

    One logistic regression (statsmodels' binomial GLM, ties as half a win each way) over all scored pairs:
    ``logit P(A preferred) = theta_A - theta_B + phi * tanh(length difference / its standard deviation)``,
    with a light ridge penalty ``alpha`` so that a judge that always picks the longer output (perfect
    separation) still gives finite estimates. The length-controlled win rate of a system is the mean, over
    the systems it met, of ``sigmoid(theta_s - theta_t)``: its predicted rate against them had both outputs
    the same length. Systems without lengths (no ``a_length`` column) get None.
    """
    import statsmodels.api as sm

    scored = frame[frame["pref"].notna()]
    systems = sorted(set(frame["a_system"]) | set(frame["b_system"]))
    if "a_length" not in frame or scored.empty or len(systems) < 2:
        return {s: None for s in systems}
    pos = {s: i for i, s in enumerate(systems)}
    diff = scored["a_length"].to_numpy(float) - scored["b_length"].to_numpy(float)
    scale = diff.std()
    x = np.tanh(diff / scale) if scale > 0 else np.zeros_like(diff)
    design = np.zeros((len(scored), len(systems) + 1))
    for r, (a, b) in enumerate(zip(scored["a_system"], scored["b_system"], strict=True)):
        design[r, pos[a]], design[r, pos[b]] = 1.0, -1.0
    design[:, -1] = x
    pref = scored["pref"].to_numpy(float)
    y = np.concatenate([np.ones(len(pref)), np.zeros(len(pref))])
    model = sm.GLM(y, np.vstack([design, design]), family=sm.families.Binomial(),
                   freq_weights=np.concatenate([pref, 1 - pref]))
    theta = np.asarray(model.fit_regularized(alpha=alpha, L1_wt=0.0).params)[:-1]
    met: dict[str, set[str]] = {s: set() for s in systems}
    for a, b in zip(scored["a_system"], scored["b_system"], strict=True):
        met[a].add(b)
        met[b].add(a)
    return {s: float(np.mean([1 / (1 + np.exp(-(theta[pos[s]] - theta[pos[t]]))) for t in met[s]]))
            if met[s] else None for s in systems}


def default_margin(scale: Scale) -> float:
    """The least difference of human means that counts as a preference: a third of the scale's step (1 on
    an integer scale; a tenth of the range on a continuous one)."""
    step = 1.0 if scale.integer else (scale.high - scale.low) / 10
    return step / 3


def human_preferences(frame: pd.DataFrame, margin: float) -> pd.Series:
    """People's preference per pair from their mean ratings: ``"A"`` or ``"B"`` where the means differ by at
    least ``margin``, None otherwise (too close to call, or unrated)."""
    if "a_human" not in frame:
        return pd.Series([None] * len(frame), index=frame.index, dtype=object)
    diff = frame["a_human"].astype(float) - frame["b_human"].astype(float)
    return pd.Series(["A" if d >= margin else "B" if d <= -margin else None for d in diff], index=frame.index,
                     dtype=object)


def implied_preferences(frame: pd.DataFrame, scores: Mapping[str, float | None]) -> pd.Series:
    """A pointwise run's preference per pair: the output with the higher score, ``"C"`` when equal, None when
    either is unscored. ``frame`` needs ``a_id`` / ``b_id``; ``scores`` maps a sample id to its score."""
    out = []
    for a, b in zip(frame["a_id"], frame["b_id"], strict=True):
        sa, sb = scores.get(a), scores.get(b)
        out.append(None if sa is None or sb is None else "A" if sa > sb else "B" if sb > sa else "C")
    return pd.Series(out, index=frame.index, dtype=object)


def _label(pref: float) -> str | None:
    return None if pref is None or np.isnan(pref) else "A" if pref == 1 else "B" if pref == 0 else "C"


def agreement(judge: pd.Series, human: pd.Series) -> dict[str, float | int | None]:
    """Accuracy and Cohen's kappa of a judge's pair labels (``A``/``B``/``C``) against people's (``A``/``B``),
    over the pairs both have; a judge's tie never matches (people's tie pairs are left out by the margin).

    Which output of a pair is "A" is arbitrary (file order), so kappa is computed on the table of every pair
    counted once in each orientation (A and B swapped in both labels): it does not change when pairs are
    flipped, and stays defined when one orientation happens to hold all preferences (every "B" in file order).

    Returns:
        ``{"accuracy", "kappa", "n_pairs"}`` (None where no pair is shared).
    """
    from statsmodels.stats.inter_rater import cohens_kappa

    both = pd.DataFrame({"j": judge, "h": human}).dropna()
    if both.empty:
        return {"accuracy": None, "kappa": None, "n_pairs": 0}
    labels = ["A", "B", "C"]
    swap = {"A": "B", "B": "A", "C": "C"}
    sym = pd.concat([both, both.apply(lambda col: col.map(swap))])
    table = pd.crosstab(sym["j"], sym["h"]).reindex(index=labels, columns=labels, fill_value=0).to_numpy()
    expected_agree = (table.sum(axis=1) * table.sum(axis=0)).sum() / table.sum() ** 2
    kappa = None if expected_agree == 1 else float(cohens_kappa(table, return_results=False))
    return {"accuracy": float((both["j"] == both["h"]).mean()), "kappa": kappa, "n_pairs": len(both)}


def pairwise_report(frame: pd.DataFrame, *, inconsistent: Inconsistent = "tie", n_boot: int = 1000, seed: int = 0,
                    ci: float = 0.95, human_margin: float | Mapping[str, float] | None = None,
                    pointwise: Mapping[str, Mapping[str, float | None]] | None = None) -> dict[str, Any]:
    """Every pairwise figure per dimension: what ``assay meta`` reports as ``pairwise.<dimension>``.

    Args:
        frame: The verdict table (:data:`COLUMNS`, and the optional length and human columns).
        inconsistent: Count a flipping pair as a tie (default) or drop it.
        n_boot / seed / ci: The bootstrap over inputs (intervals of win rates and Bradley-Terry strengths).
        human_margin: The least human mean difference that is a preference (per dimension where a mapping);
            without one, no human agreement is computed.
        pointwise: ``{dimension: {sample_id: score}}`` of a pointwise run on the same outputs: its implied
            preferences are compared with people on the same pairs (``pointwise_agreement``).

    Returns:
        ``{dimension: {"consistency", "position_bias", "second_position_bias", "first_position_win_rate",
        "tie_rate", "n_pairs", "n_inconsistent", "n_unread", "inconsistent", "systems": {s: {"win_rate", "low",
        "high", "games", "bt", "bt_low", "bt_high", "lc_win_rate"}}, "matrix", "human_agreement",
        "pointwise_agreement"}}``.
    """
    report: dict[str, Any] = {}
    for dim, rows in frame.groupby("dimension", sort=False):
        read = outcomes(rows, inconsistent)
        entry = {**order_stats(read), "inconsistent": inconsistent, "bootstrap": {"n_boot": n_boot, "seed": seed,
                                                                                  "ci": ci, "unit": "input"}}
        wins = win_rates(read, n_boot=n_boot, seed=seed, ci=ci)
        bt = bradley_terry(read, n_boot=n_boot, seed=seed, ci=ci)
        lc = length_controlled(read)
        entry["systems"] = {s: {**v, **bt[s], "lc_win_rate": lc[s]} for s, v in wins["systems"].items()}
        entry["matrix"] = wins["matrix"]
        margin = human_margin.get(str(dim)) if isinstance(human_margin, Mapping) else human_margin
        entry["human_agreement"] = entry["pointwise_agreement"] = None
        if margin is not None and "a_human" in read and read["a_human"].notna().any():
            people = human_preferences(read, margin)
            entry["human_agreement"] = {**agreement(read["pref"].map(_label), people), "margin": margin}
            if pointwise is not None and str(dim) in pointwise:
                implied = implied_preferences(read, pointwise[str(dim)])
                shared = implied.notna() & read["pref"].notna()
                entry["pointwise_agreement"] = {**agreement(implied[shared], people[shared]), "margin": margin}
                entry["human_agreement_shared"] = agreement(read["pref"].map(_label)[shared], people[shared])
        report[str(dim)] = entry
    return report


def verdict_table(records: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """The verdict table (:data:`COLUMNS` and the optional ones) from a pairwise run's judgments, each a mapping
    with ``doc_id``, ``dimension`` and the ``trace`` the pairwise method writes (``pair`` and ``orders``).
    A judgment whose trace has no pair (another method's) is refused."""
    rows = []
    for rec in records:
        trace = rec.get("trace") or {}
        pair, orders = trace.get("pair"), trace.get("orders") or {}
        if not pair:
            raise ValueError(f"judgment {rec.get('sample_id')!r} ({rec.get('dimension')}) is no pairwise verdict")
        a, b = pair["a"], pair["b"]
        rows.append({"doc_id": rec["doc_id"], "dimension": rec["dimension"], "a_system": a["system_id"],
                     "b_system": b["system_id"], "a_id": a["id"], "b_id": b["id"],
                     "ab": (orders.get("ab") or {}).get("verdict"), "ba": (orders.get("ba") or {}).get("verdict"),
                     "a_length": a.get("length"), "b_length": b.get("length"),
                     "a_human": a.get("human"), "b_human": b.get("human")})
    frame = pd.DataFrame(rows, columns=[*COLUMNS, "a_id", "b_id", "a_length", "b_length", "a_human", "b_human"])
    for col in ("a_human", "b_human", "a_length", "b_length"):
        frame[col] = pd.to_numeric(frame[col], errors="coerce")
    return frame
