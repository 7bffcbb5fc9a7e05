"""The viewer's data: runs read read-only from their stores, the dataset's texts, and the meta-evaluation."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from assay.view.derive import TextTable, interval_warning, rank_disagreement, run_label, steps_by_dimension

__all__ = ["PROMPT_BUDGET", "STATUS_CODES", "build_view_data"]

STATUS_CODES = {"scored": 0, "parse_failed": 1, "failed": 2}
# Raw prompts are inlined up to this many characters in all (each distinct prompt once); past it the page
# says they were left out rather than grow without bound on a large run.
PROMPT_BUDGET = 20_000_000


def build_view_data(run_dirs: Sequence[str | Path], *, bootstrap: int = 1000, seed: int = 0,
                    level: str | None = None, groups: Mapping[str, Sequence[str]] | None = None,
                    dataset: str | None = None, prompt_budget: int = PROMPT_BUDGET) -> dict[str, Any]:
    """Everything the page shows, as one JSON-ready dict.

    Args:
        run_dirs: Run directories (``run.sqlite``), opened read-only.
        bootstrap: Resamples for the correlation intervals (0: none).
        seed: Bootstrap seed.
        level: Correlation level (default the dataset's convention).
        groups: Judge groups for the agreement between runs (``assay compare --groups``).
        dataset: Where the texts are (a name, ``NAME:PATH`` or spec file) when a run's manifest names a dataset
            that does not load by its name alone (a spec file's dataset, a copy on another path).
        prompt_budget: Characters of raw prompts to inline at most.

    Raises:
        ConfigError: A path that is a file (a scores file, not a run).
        AssayError: A directory that is not a readable run.
    """
    from assay._version import __version__
    from assay.errors import ConfigError

    for d in run_dirs:
        if Path(d).is_file():
            raise ConfigError(f"{d}: a file; the viewer reads run directories (a scores file goes to `assay meta` "
                              "or `assay compare`)")
    texts = TextTable()
    notes: list[str] = []
    runs = [_read_run(Path(d)) for d in run_dirs]
    samples, datasets = _samples(runs, texts, notes, dataset)
    dims = list(dict.fromkeys(j["dimension"] for r in runs for j in r["judgments"]))
    index = {s["id"]: i for i, s in enumerate(samples)}
    judgments = _judgments(runs, index, dims, samples)
    prompts, omitted = _prompts(runs, prompt_budget)
    if omitted:
        notes.append(f"{omitted} raw prompt(s) left out of the page (over {prompt_budget:,} characters in all); "
                     "`assay export RUN --format jsonl` has every trace")
    return {
        "assay_version": __version__, "dims": dims, "datasets": datasets, "notes": notes,
        "runs": [_run_entry(r, bootstrap, seed, level) for r in runs],
        "compare": _compare(runs, notes, level, groups), "texts": texts.texts, "samples": samples,
        "judgments": judgments, "prompts": prompts,
    }


def _read_run(run_dir: Path) -> dict[str, Any]:
    from assay.run.store import RunStore

    with RunStore(run_dir, readonly=True) as store:
        manifest = store.manifest() or {}
        judgments = [{"sample_id": j.sample_id, "dimension": j.dimension, "score": j.score, "error": j.error,
                      "status": j.status, "trace": j.trace, "method": j.method, "judge": j.judge}
                     for j in store.iter_judgments()]
        prompts = {}
        for req in store.calls.requests():
            msgs = [{"role": m.role, "content": m.content} for m in req.messages]
            for m in req.messages:
                prompts.setdefault(_hash(m.content), msgs)
        return {"dir": run_dir, "manifest": manifest, "judgments": judgments, "samples": store.samples(),
                "notes": store.notes(), "artifacts": store.artifacts(), "prompts": prompts}


def _hash(text: str) -> str:
    from assay.common.hashing import content_hash

    return content_hash(text)


def _judge_label(manifest: dict[str, Any], judgments: list[dict[str, Any]]) -> str | None:
    judge = manifest.get("judge") or {}
    if judge.get("backend"):
        return f"{judge['backend']}:{judge['model']}"
    return judgments[0]["judge"] if judgments else None


def _run_entry(run: dict[str, Any], bootstrap: int, seed: int, level: str | None) -> dict[str, Any]:
    """One run's header, notes, artifacts the traces refer to, and its meta-evaluation."""
    m = run["manifest"]
    method = m.get("method") or (run["judgments"][0]["method"] if run["judgments"] else None)
    judge = _judge_label(m, run["judgments"])
    arts = run["artifacts"]
    return {
        "name": run["dir"].name, "path": str(run["dir"]), "method": method, "judge": judge,
        "label": run_label(run["dir"].name, method, judge), "imported": bool(m.get("imported")),
        "dataset": (m.get("dataset") or {}).get("name"), "units": m.get("units"),
        "settings": m.get("method_settings") or {}, "notes": run["notes"],  # the manifest's notes are a copy
        "steps": steps_by_dimension((k, v["content"]) for k, v in arts.items()),
        "rubric": _rubric(arts),
        "meta": _meta(run["dir"], bootstrap, seed, level),
    }


def _rubric(artifacts: dict[str, dict[str, str]]) -> dict[str, Any] | None:
    """GER-Eval's rubric (task and criteria by name) where the run stored one."""
    art = artifacts.get("rubric")
    if not art:
        return None
    try:
        doc = json.loads(art["content"])
    except ValueError:
        return None
    crits = {c.get("name"): c for c in doc.get("criteria") or [] if isinstance(c, dict)}
    return {"task": doc.get("task"), "criteria": crits}


def _meta(run_dir: Path, bootstrap: int, seed: int, level: str | None) -> dict[str, Any]:
    """The run's meta-evaluation (as ``assay meta`` computes it), each row with its interval warning."""
    from assay.meta.evaluate import meta_evaluate
    from assay.meta.inputs import read_run
    from assay.meta.table import jsonable

    table = read_run(run_dir)
    if table.frame.empty:
        return {"rows": [], "level": None, "level_reason": "no judgments yet", "human_agreement": []}
    res = meta_evaluate(table, level=level, bootstrap=bootstrap, seed=seed)
    for row in res["rows"]:
        n = row.get("n_units") if row.get("n_units") is not None else row.get("paired")
        row["warning"] = interval_warning(n, row.get("spearman_ci"))
    return jsonable({k: res[k] for k in ("level", "level_reason", "measures", "rows", "bootstrap",
                                         "human_agreement", "unscored_reasons")})


def _compare(runs: list[dict[str, Any]], notes: list[str], level: str | None,
             groups: Mapping[str, Sequence[str]] | None) -> dict[str, Any] | None:
    """Agreement among the runs' judges beside the human agreement (``assay compare``), for two runs or more."""
    if len(runs) < 2:
        return None
    from assay.errors import AssayError
    from assay.meta.compare import compare
    from assay.meta.inputs import read_run
    from assay.meta.table import jsonable

    tables = [read_run(r["dir"]) for r in runs]
    for t in tables:  # label the raters as the page labels the runs
        t.judge = run_label(t.name, t.method, t.judge)
    try:
        res = compare(tables, level=level, groups=groups)
    except AssayError as exc:
        notes.append(f"runs not compared: {exc}")
        return None
    return jsonable({k: res[k] for k in ("level", "dimensions", "agreement", "human_agreement", "notes")})


def _samples(runs: list[dict[str, Any]], texts: TextTable, notes: list[str],
             override: str | None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The judged samples with their texts from each run's dataset (ids and ratings only where it won't load)."""
    by_name = {}
    datasets = []
    for name in dict.fromkeys((r["manifest"].get("dataset") or {}).get("name") for r in runs):
        loaded, error, labels = _load(override or name)
        by_name[name] = loaded
        datasets.append({"name": name, "read_from": override or name, "loaded": loaded is not None, "error": error,
                         "labels": labels})
        if error:
            notes.append(f"dataset {name!r} could not be loaded ({error}): samples are shown by id only")
    samples: dict[str, dict[str, Any]] = {}
    position = {d["name"]: i for i, d in enumerate(datasets)}
    for r in runs:
        name = (r["manifest"].get("dataset") or {}).get("name")
        full = by_name.get(name) or {}
        for s in r["samples"]:
            if s["id"] in samples:
                continue
            entry = {"id": s["id"], "doc": s["doc_id"], "sys": s["system_id"], "human": s["human"],
                     "ds": position[name]}  # its dataset, whose card names its texts (``labels``)
            if (d := full.get(s["id"])) is not None:
                entry.update(src=texts.add(d.source or None), out=texts.add(d.output), ref=texts.add(d.reference),
                             ctx=texts.add(d.context))
            samples[s["id"]] = entry
    return list(samples.values()), datasets


def _load(name: str | None) -> tuple[dict[str, Any] | None, str | None, dict[str, str]]:
    """The dataset's samples by id (None and why, where it does not load) and its card's names for the texts."""
    from assay.datasets import load_dataset

    labels = {"src": "source", "ctx": "context", "ref": "reference", "out": "output"}
    if not name:
        return None, "the run's manifest names no dataset", labels
    try:
        ds = load_dataset(name)
    except Exception as exc:  # any failure: the page says so and shows ids
        return None, f"{type(exc).__name__}: {exc}", labels
    info = ds.info
    labels = {"src": info.input_name, "ctx": info.context_name or "context",
              "ref": info.reference_name, "out": info.output_name}
    return {s.id: s for s in ds.all_samples}, None, labels


def _judgments(runs: list[dict[str, Any]], index: dict[str, int], dims: list[str],
               samples: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """The judgments as columns (run, sample, dimension, score, human, status, error, disagreement, trace)."""
    cols: dict[str, list[Any]] = {k: [] for k in ("r", "s", "d", "score", "human", "st", "err", "dis", "tr")}
    for ri, run in enumerate(runs):
        start = len(cols["r"])
        for j in run["judgments"]:
            si = index.get(j["sample_id"])
            if si is None:
                continue
            cols["r"].append(ri)
            cols["s"].append(si)
            cols["d"].append(dims.index(j["dimension"]))
            cols["score"].append(j["score"])
            cols["human"].append(samples[si]["human"].get(j["dimension"]))
            cols["st"].append(STATUS_CODES.get(j["status"], 2))
            cols["err"].append(j["error"])
            cols["tr"].append(j["trace"])
        for di in range(len(dims)):  # disagreement ranks within (run, dimension)
            rows = [k for k in range(start, len(cols["r"])) if cols["d"][k] == di]
            dis = rank_disagreement([cols["score"][k] for k in rows], [cols["human"][k] for k in rows])
            cols["dis"].extend([None] * (len(cols["r"]) - len(cols["dis"])))
            for k, v in zip(rows, dis, strict=True):
                cols["dis"][k] = v
    cols["dis"].extend([None] * (len(cols["r"]) - len(cols["dis"])))
    return cols


def _prompts(runs: list[dict[str, Any]], budget: int) -> tuple[dict[str, Any], int]:
    """The prompts the traces name by hash (``prompt_sha``/``prompt_sha256``), within ``budget`` characters."""
    wanted: list[str] = []
    for r in runs:
        for j in r["judgments"]:
            wanted.extend(_shas(j["trace"]))
    out: dict[str, Any] = {}
    used = omitted = 0
    for sha in dict.fromkeys(wanted):
        msgs = next((r["prompts"][sha] for r in runs if sha in r["prompts"]), None)
        if msgs is None:
            continue
        size = sum(len(m["content"]) for m in msgs)
        if used + size > budget:
            omitted += 1
            continue
        used += size
        out[sha] = msgs
    return out, omitted


def _shas(value: Any) -> list[str]:
    """Every prompt hash a trace names, at any depth (old runs' ``prompt_sha`` too)."""
    from assay.judges.ask import recorded

    if isinstance(value, dict):
        sha = recorded(value, "prompt_sha256")
        found = [sha] if isinstance(sha, str) else []
        return found + [s for v in value.values() if isinstance(v, dict | list) for s in _shas(v)]
    if isinstance(value, list):
        return [s for v in value for s in _shas(v)]
    return []
