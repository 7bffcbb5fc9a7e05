"""``assay import``'s I/O: read an answers file, match and read it, and store it as one dimension of a run directory.

Several imports into one run directory add dimensions (same method, method settings, judge label and
dataset); importing the same file again for a dimension is a no-op, another file for a dimension that is
already imported is refused. Every refusal comes before anything is written, and the samples, judgments
and manifest of one import are written in one transaction.
"""

from __future__ import annotations

import hashlib
import platform
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay._version import __version__
from assay.datasets import load_dataset
from assay.datasets.matching import (
    Ambiguous,
    Duplicates,
    apply_policy,
    describe_unmatched,
    match_records,
    parse_match,
)
from assay.datasets.readers import read_records
from assay.errors import ConfigError
from assay.importer.readers import make_reader
from assay.judges.base import JudgeIdentity
from assay.run.session import fingerprint as run_fingerprint
from assay.run.store import RunStore, check_run_dir, fingerprint_diff
from assay.types import Dimension, Judgment, Sample


@dataclass(frozen=True)
class ImportOptions:
    """What ``assay import`` was told: the file's fields, the method's options and the policies.

    Attributes:
        method: A method with an import reader (:func:`assay.importer.readers.importable_methods`).
        dataset: The dataset spec the answers judge.
        dimension: The dimension (GER-Eval: the rubric criterion) the answers rate.
        answers: The field holding the judge's raw answer text (or list of texts).
        match: ``--match`` (``FIELD`` or ``FILE_FIELD=SAMPLE_FIELD``, comma-separated).
        id: ``--id``: the field holding assay's sample ids.
        mode / logprobs: G-Eval's scoring mode and the log-probabilities field.
        checklist / rubric: CheckEval's checklist, GER-Eval's rubric.
        judge_name: The judge's label; default ``imported:<file stem>``.
        duplicates / ambiguous: What to do with several records for one sample, or one record for several.
        strict_ratings: A fractional rating on an integer scale is a parse failure.
    """

    method: str
    dataset: str
    dimension: str
    answers: str
    match: str | None = None
    id: str | None = None
    mode: str | None = None
    logprobs: str | None = None
    checklist: str | None = None
    rubric: str | None = None
    judge_name: str | None = None
    duplicates: Duplicates = "refuse"
    ambiguous: Ambiguous = "refuse"
    strict_ratings: bool = False

    def reader_options(self) -> dict[str, Any]:
        """The method's own import options (its reader refuses those it does not take)."""
        return {"mode": self.mode, "logprobs": self.logprobs, "checklist": self.checklist, "rubric": self.rubric}

    def mapping(self) -> dict[str, Any]:
        """The mapping as the manifest records it."""
        return {"answers": self.answers, "match": self.match, "id": self.id, "mode": self.mode,
                "logprobs": self.logprobs, "checklist": self.checklist, "rubric": self.rubric,
                "duplicates": self.duplicates, "ambiguous": self.ambiguous}


@dataclass
class ImportResult:
    """What an import did: ``imported``, ``noop`` (the same file was already imported), with counts and notes."""

    run_dir: Path
    outcome: str
    dimension: str
    counts: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    judgments: list[Judgment] = field(default_factory=list)


def import_answers(path: str | Path, options: ImportOptions, run_dir: str | Path) -> ImportResult:
    """Import a file of a judge's answers into a run directory, as one dimension of the run.

    Raises:
        ConfigError: Bad options, or a run directory holding another run or another file for the dimension.
        InputError: An unreadable file or record (naming file, record and field), ambiguous or duplicate
            records under the default policy, or a file that matches no sample.
    """
    path, run_dir = Path(path), Path(run_dir)
    check_run_dir(run_dir)
    dataset = load_dataset(options.dataset)
    reader = make_reader(options.method, dataset, options.dimension, options.answers, strict=options.strict_ratings,
                         **options.reader_options())
    pairs = parse_match(options.match or (reader.default_match if not options.id else None), options.id)
    records = read_records(path)
    dataset, records, pairs = reader.work_items(dataset, records, pairs, file=str(path))
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    file = str(path)
    matching = apply_policy(match_records(records, dataset.samples, pairs, file=file, where=records.where),
                            duplicates=options.duplicates, ambiguous=options.ambiguous, file=file,
                            where=records.where)
    identity = imported_identity(options.judge_name or f"imported:{path.stem}")
    judgments = []
    for sample, i in matching.pairs:
        score, trace, error = reader.read(sample, records[i], file=file, record=records.where(i))
        judgments.append(make_judgment(sample, reader.dimension, reader.method, identity.label, score, trace, error,
                                       {"file": path.name, "sha256": sha[:16], "record": records.where(i)}))
    counts = matching.counts(len(records)) | {
        "scored": sum(j.status == "scored" for j in judgments),
        "parse_failed": sum(j.status == "parse_failed" for j in judgments),
        "samples_without_answer": len(dataset.samples) - len(matching.pairs)}
    notes = [n for n in (describe_unmatched(matching, records.where),) if n]
    if matching.skipped:
        notes.append(f"{len(matching.skipped)} ambiguous or duplicate record(s) skipped (--duplicates "
                     f"{options.duplicates}, --ambiguous {options.ambiguous})")
    entry = {"file": str(path.resolve()), "sha256": sha, "mapping": options.mapping(), "judge_name": identity.label,
             "method": reader.method, "counts": counts, "notes": notes,
             "imported_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    fingerprint = run_fingerprint(reader.method, reader.settings(), identity, dataset, [reader.dimension])
    with RunStore(run_dir) as store:
        old = store.manifest()
        outcome = plan_import(old, fingerprint, reader.dimension.name, entry, run_dir)
        if outcome == "noop":
            return ImportResult(run_dir, "noop", reader.dimension.name, dict(old["imported"][reader.dimension.name]
                                                                             ["counts"]), notes)
        manifest = _manifest(old, fingerprint, reader, dataset.info.level, entry)
        store.record_import([s for s, _ in matching.pairs], judgments, manifest,
                            [("imported", f"{reader.dimension.name}: {len(judgments)} answers imported from "
                                          f"{path.name} (sha256 {sha[:16]}); no judge was called"),
                             *[("import", f"{reader.dimension.name}: {n}") for n in notes]])
        manifest["units"] = store.unit_counts()
        manifest["notes"] = store.notes()
        store.set_meta("manifest", manifest)
    return ImportResult(run_dir, "imported", reader.dimension.name, counts, notes, judgments)


def plan_import(old: dict[str, Any] | None, fingerprint: dict[str, Any], dimension: str, entry: dict[str, Any],
                run_dir: Path) -> str:
    """Whether this import starts a run (``new``), adds a dimension (``add``) or repeats one (``noop``).

    Raises:
        ConfigError: The directory holds a run with another method, method settings, judge or dataset
            (each difference listed), a run that was not imported, or another file for this dimension
            (both hashes named).
    """
    if old is None:
        return "new"
    imported = old.get("imported")
    diffs = fingerprint_diff(old, {**fingerprint, "dimensions": old.get("dimensions")})
    if diffs:
        raise ConfigError(f"{run_dir} holds a run with other settings:\n" + "\n".join(f"  {d}" for d in diffs)
                          + "\nImport into another --run-dir (one run per method, judge and dataset).")
    if not isinstance(imported, dict):
        raise ConfigError(f"{run_dir} holds a run that was judged by assay, not imported; "
                          "import into another --run-dir")
    before = imported.get(dimension)
    if before is None:
        if any(d.get("name") == dimension for d in old.get("dimensions") or []):
            raise ConfigError(f"{run_dir}: dimension {dimension!r} is already in the run but was not imported")
        return "add"
    if before["sha256"] == entry["sha256"]:
        return "noop"
    raise ConfigError(f"{run_dir}: {dimension} was imported from another file ({before['file']}, sha256 "
                      f"{before['sha256'][:16]}); this file ({entry['file']}) has sha256 {entry['sha256'][:16]}. "
                      "Import it into another --run-dir.")


def _manifest(old: dict[str, Any] | None, fingerprint: dict[str, Any], reader: Any, level: str,
              entry: dict[str, Any]) -> dict[str, Any]:
    """The run's manifest with this import added (the dimension appended, the import recorded)."""
    if old is None:
        return {**fingerprint, "artifacts": {reader.dimension.name: reader.artifacts()},
                "judge_logprobs": fingerprint["method_settings"].get("mode") == "logprobs",
                "judge_logprobs_reason": "imported answers", "dataset_level": level, "prices": None,
                "usage": {}, "cost_usd": None, "assay_version": __version__, "python": platform.python_version(),
                "started_at": entry["imported_at"], "imported": {reader.dimension.name: entry}}
    manifest = dict(old)
    manifest["dimensions"] = [*old.get("dimensions", []), *fingerprint["dimensions"]]
    manifest["artifacts"] = {**old.get("artifacts", {}), reader.dimension.name: reader.artifacts()}
    manifest["imported"] = {**old.get("imported", {}), reader.dimension.name: entry}
    return manifest


def imported_identity(name: str) -> JudgeIdentity:
    """The judge identity of imported answers: ``backend:model`` as given, or ``imported:NAME`` for a bare name."""
    backend, colon, model = name.partition(":")
    if not colon or not backend or not model:
        backend, model = "imported", name
    return JudgeIdentity(backend=backend, model=model, settings={"imported": True})


def make_judgment(sample: Sample, dimension: Dimension, method: str, judge: str, score: float | None,
                  trace: dict[str, Any], error: str | None, origin: dict[str, Any]) -> Judgment:
    """A judgment of an imported answer: no usage (no call was made), and where the answer came from."""
    return Judgment(sample_id=sample.id, dimension=dimension.name, method=method, judge=judge, score=score,
                    trace={**trace, "imported": origin}, usage={}, error=error)
