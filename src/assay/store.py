"""The run store: one SQLite database (WAL) per run directory holding manifest, judgments and call cache."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from assay.errors import AssayError, ConfigError
from assay.judges.base import JudgeIdentity, Request, Response
from assay.types import Judgment, Sample, Usage

DB_NAME = "run.sqlite"

# Named migrations, applied in order; the database records how many it has seen.
_MIGRATIONS: list[tuple[str, str]] = [
    ("initial", """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE samples (
            id TEXT PRIMARY KEY, doc_id TEXT NOT NULL, system_id TEXT NOT NULL,
            human TEXT NOT NULL, annotators TEXT NOT NULL);
        CREATE TABLE judgments (
            sample_id TEXT NOT NULL, dimension TEXT NOT NULL, method TEXT NOT NULL,
            judge TEXT NOT NULL, score REAL, error TEXT, trace TEXT NOT NULL,
            usage TEXT NOT NULL, created REAL NOT NULL,
            PRIMARY KEY (sample_id, dimension));
        CREATE TABLE calls (
            key TEXT PRIMARY KEY, judge TEXT NOT NULL, request TEXT NOT NULL,
            response TEXT NOT NULL, created REAL NOT NULL);
        CREATE TABLE notes (
            kind TEXT NOT NULL, message TEXT NOT NULL, count INTEGER NOT NULL DEFAULT 1,
            PRIMARY KEY (kind, message));
        CREATE TABLE artifacts (
            name TEXT PRIMARY KEY, sha256 TEXT NOT NULL, content TEXT NOT NULL);
    """),
    # Units whose judge calls failed are stored too (status 'failed', retried on resume); before
    # this migration a stored judgment was either scored or a parse failure.
    ("judgment_status", """
        ALTER TABLE judgments ADD COLUMN status TEXT NOT NULL DEFAULT 'scored';
        UPDATE judgments SET status = CASE WHEN score IS NULL THEN 'parse_failed' ELSE 'scored' END;
    """),
]

# Manifest fields that must match for a run directory to be resumed by another command.
FINGERPRINT = ("method", "method_settings", "judge", "dataset", "dimensions")


class RunStore:
    """A run directory's database. Judgments are written one by one, each exactly once.

    Args:
        run_dir: The directory; created if missing (unless ``readonly``).
        readonly: Open an existing run for reading only (meta-evaluation, replay, export).
    """

    def __init__(self, run_dir: str | Path, *, readonly: bool = False) -> None:
        self.run_dir = Path(run_dir)
        db = self.run_dir / DB_NAME
        if readonly:
            if not db.exists():
                raise AssayError(f"{self.run_dir}: not a run directory (no {DB_NAME})")
            self._db = sqlite3.connect(f"file:{db}?mode=ro", uri=True, isolation_level=None)
        else:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(db, isolation_level=None, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._migrate()

    def _migrate(self) -> None:
        version = self._db.execute("PRAGMA user_version").fetchone()[0]
        for i, (_name, sql) in enumerate(_MIGRATIONS[version:], start=version):
            self._db.executescript(f"BEGIN; {sql}; PRAGMA user_version = {i + 1}; COMMIT;")

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- manifest and metadata -------------------------------------------------------------

    def get_meta(self, key: str) -> Any:
        row = self._db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def set_meta(self, key: str, value: Any) -> None:
        self._db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, json.dumps(value, sort_keys=True)))

    def manifest(self) -> dict[str, Any] | None:
        return self.get_meta("manifest")

    def begin(self, manifest: dict[str, Any]) -> bool:
        """Record the manifest of a new run, or check that it matches the one already here.

        Returns:
            True if the run already existed (this is a resume).

        Raises:
            ConfigError: The directory holds a run with different settings.
        """
        old = self.manifest()
        if old is None:
            self.set_meta("manifest", manifest)
            return False
        diffs = [k for k in FINGERPRINT if _canon(old.get(k)) != _canon(manifest.get(k))]
        if diffs:
            detail = "; ".join(f"{k}: stored {_canon(old.get(k))[:160]} vs now {_canon(manifest.get(k))[:160]}"
                               for k in diffs)
            raise ConfigError(
                f"{self.run_dir} holds a run with other settings ({detail}). "
                "Use a new --run-dir, or repeat the original command to resume it."
            )
        old.setdefault("resumed_at", []).append(manifest.get("started_at"))
        self.set_meta("manifest", old)
        return True

    def put_samples(self, samples: Iterable[Sample]) -> None:
        """Keep the ids, groups and human ratings of the samples, so the run stands alone."""
        self._db.execute("BEGIN")
        self._db.executemany(
            "INSERT OR IGNORE INTO samples VALUES (?, ?, ?, ?, ?)",
            [(s.id, s.doc_id, s.system_id, json.dumps(s.human), json.dumps(s.annotators)) for s in samples],
        )
        self._db.execute("COMMIT")

    def samples(self) -> list[dict[str, Any]]:
        rows = self._db.execute("SELECT id, doc_id, system_id, human, annotators FROM samples ORDER BY rowid")
        return [{"id": r[0], "doc_id": r[1], "system_id": r[2], "human": json.loads(r[3]),
                 "annotators": json.loads(r[4])} for r in rows]

    def add_note(self, kind: str, message: str) -> None:
        """Record a fallback or warning once per (kind, message), counting repeats."""
        self._db.execute(
            "INSERT INTO notes VALUES (?, ?, 1) ON CONFLICT(kind, message) DO UPDATE SET count=count+1",
            (kind, message))

    def notes(self) -> list[dict[str, Any]]:
        rows = self._db.execute("SELECT kind, message, count FROM notes ORDER BY rowid")
        return [{"kind": k, "message": m, "count": c} for k, m, c in rows]

    def put_artifact(self, name: str, sha256: str, content: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO artifacts VALUES (?, ?, ?)", (name, sha256, content))

    def artifacts(self) -> dict[str, dict[str, str]]:
        rows = self._db.execute("SELECT name, sha256, content FROM artifacts")
        return {n: {"sha256": h, "content": c} for n, h, c in rows}

    # -- judgments ---------------------------------------------------------------------------

    def done_units(self) -> set[tuple[str, str]]:
        """Units that need no more work: scored or parse-failed. Failed units are retried on resume."""
        return set(self._db.execute("SELECT sample_id, dimension FROM judgments WHERE status != 'failed'"))

    def add_judgment(self, j: Judgment) -> None:
        """Write one judgment. A failed unit's row is replaced by its new outcome; a second judgment
        for a scored or parse-failed unit is an error, never a duplicate."""
        self._db.execute("BEGIN")
        try:
            self._db.execute("DELETE FROM judgments WHERE sample_id=? AND dimension=? AND status='failed'",
                             (j.sample_id, j.dimension))
            self._db.execute(
                "INSERT INTO judgments (sample_id, dimension, method, judge, score, error, trace, usage, created, "
                "status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (j.sample_id, j.dimension, j.method, j.judge, j.score, j.error,
                 json.dumps(j.trace, ensure_ascii=False),
                 json.dumps({k: v.model_dump() for k, v in j.usage.items()}), time.time(), j.status),
            )
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def _status_column(self) -> str:
        """The status expression: the column, or its derivation in a run stored before it existed
        (a read-only store is never migrated)."""
        cols = {r[1] for r in self._db.execute("PRAGMA table_info(judgments)")}
        return "status" if "status" in cols else "CASE WHEN score IS NULL THEN 'parse_failed' ELSE 'scored' END"

    def iter_judgments(self) -> Iterator[Judgment]:
        rows = self._db.execute(
            f"SELECT sample_id, dimension, method, judge, score, error, trace, usage, {self._status_column()} "
            "FROM judgments ORDER BY created, rowid")
        for sid, dim, method, judge, score, error, trace, usage, status in rows:
            yield Judgment(sample_id=sid, dimension=dim, method=method, judge=judge, score=score,
                           error=error, trace=json.loads(trace), status=status,
                           usage={k: Usage(**v) for k, v in json.loads(usage).items()})

    def judgments(self) -> list[Judgment]:
        return list(self.iter_judgments())

    def count_judgments(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM judgments").fetchone()[0])

    def asked_units(self) -> list[tuple[str, str]]:
        """Every (sample, dimension) the run was asked to judge: its samples times its manifest's dimensions."""
        dims = [d["name"] for d in (self.manifest() or {}).get("dimensions") or []]
        return [(s[0], d) for s in self._db.execute("SELECT id FROM samples ORDER BY rowid") for d in dims]

    def unit_counts(self) -> dict[str, int]:
        """How far the run got: units ``asked``, stored per status, and ``undone`` (asked, never stored)."""
        counts = self.status_counts()
        asked = set(self.asked_units())
        stored = set(self._db.execute("SELECT sample_id, dimension FROM judgments"))
        return {"asked": len(asked), **counts, "undone": len(asked - stored)}

    def status_counts(self) -> dict[str, int]:
        """Stored judgments per status (``scored``, ``parse_failed``, ``failed``), zeros included."""
        counts = dict.fromkeys(("scored", "parse_failed", "failed"), 0)
        for status, n in self._db.execute(
                f"SELECT {self._status_column()} AS st, COUNT(*) FROM judgments GROUP BY st"):
            counts[status] = int(n)
        return counts

    # -- call cache (the middleware's CallCache protocol) ------------------------------------

    def get_call(self, key: str) -> Response | None:
        row = self._db.execute("SELECT response FROM calls WHERE key=?", (key,)).fetchone()
        return Response.model_validate_json(row[0]) if row else None

    def put_call(self, key: str, identity: JudgeIdentity, request: Request, response: Response) -> None:
        self._db.execute(
            "INSERT OR IGNORE INTO calls VALUES (?, ?, ?, ?, ?)",
            (key, identity.label, request.model_dump_json(), response.model_dump_json(), time.time()))

    def call_requests(self) -> Iterator[Request]:
        """The requests of the recorded calls (the replay judge's error search)."""
        for (text,) in self._db.execute("SELECT request FROM calls ORDER BY rowid"):
            yield Request.model_validate_json(text)

    def call_keys(self) -> set[str]:
        return {r[0] for r in self._db.execute("SELECT key FROM calls")}

    def count_calls(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM calls").fetchone()[0])

    # -- export ------------------------------------------------------------------------------

    def rows(self) -> list[dict[str, Any]]:
        """One flat row per judgment, joined with the sample's groups and human rating."""
        samples = {s["id"]: s for s in self.samples()}
        out = []
        for j in self.iter_judgments():
            s = samples.get(j.sample_id, {})
            total = j.total_usage()
            out.append({
                "sample_id": j.sample_id, "doc_id": s.get("doc_id"), "system_id": s.get("system_id"),
                "dimension": j.dimension, "method": j.method, "judge": j.judge, "status": j.status,
                "score": j.score, "human": (s.get("human") or {}).get(j.dimension), "error": j.error,
                "calls": total.calls, "cached_calls": total.cached_calls,
                "prompt_tokens": total.prompt_tokens, "completion_tokens": total.completion_tokens,
                "trace": json.dumps(j.trace, ensure_ascii=False),
            })
        return out

    def to_pandas(self) -> Any:
        import pandas as pd

        cols = ["sample_id", "doc_id", "system_id", "dimension", "method", "judge", "status", "score", "human",
                "error", "calls", "cached_calls", "prompt_tokens", "completion_tokens", "trace"]
        return pd.DataFrame(self.rows(), columns=cols)

    def export(self, path: str | Path, fmt: str) -> Path:
        """Write the judgments as ``jsonl``, ``csv`` or ``parquet``."""
        path = Path(path)
        if fmt == "jsonl":
            with path.open("w", encoding="utf-8") as fh:
                for row in self.rows():
                    row["trace"] = json.loads(row["trace"])
                    fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        elif fmt == "csv":
            self.to_pandas().to_csv(path, index=False)
        elif fmt == "parquet":
            self.to_pandas().to_parquet(path, index=False)
        else:
            raise ConfigError(f"unknown export format {fmt!r}; choose jsonl, csv or parquet")
        return path


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)
