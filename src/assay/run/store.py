"""The run store: one SQLite database (WAL) per run directory holding manifest, judgments and call cache.

The call cache (:class:`assay.run.cache.CallCache`, ``store.calls``) and the provider batches
(:class:`assay.run.batches.BatchRecords`, ``store.batches``) are classes of their own over the same connection;
the schema and its migrations stay here, in one place.
"""

from __future__ import annotations

import fcntl
import functools
import json
import os
import socket
import sqlite3
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from assay.common import jsontext
from assay.errors import AssayError, ConfigError, InputError
from assay.run.batches import BatchRecords
from assay.run.cache import CallCache
from assay.run.checkpoints import Checkpointer
from assay.run.turns import TurnWriter
from assay.types import Judgment, Sample, Usage

DB_NAME = "run.sqlite"
LOCK_NAME = "run.lock"  # flock'ed while a process writes the run (see RunLock)

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
    # Provider batches (``--batch``): one row per uploaded input file, the batch made from it (NULL until the
    # provider confirmed it) and the calls it carries, so that a killed run polls the same batches on resume.
    ("batches", """
        CREATE TABLE batches (
            input_file TEXT PRIMARY KEY, batch_id TEXT, status TEXT NOT NULL,
            created REAL NOT NULL, updated REAL NOT NULL, detail TEXT NOT NULL DEFAULT '{}');
        CREATE TABLE batch_calls (
            input_file TEXT NOT NULL, key TEXT NOT NULL, request TEXT NOT NULL,
            PRIMARY KEY (input_file, key));
    """),
]

# Manifest fields that must match for a run directory to be resumed by another command.
FINGERPRINT = ("method", "method_settings", "judge", "dataset", "dimensions", "answer_format_asked")


class RunStore:
    """A run directory's database. Judgments are written as they come (committed per loop turn), each once.

    Args:
        run_dir: The directory; created if missing (unless ``readonly``).
        readonly: Open an existing run for reading only (meta-evaluation, replay, export).
    """

    def __init__(self, run_dir: str | Path, *, readonly: bool = False) -> None:
        self.run_dir = Path(run_dir)
        db = self.run_dir / DB_NAME
        self._lock: RunLock | None = None
        self._checkpoints: Checkpointer | None = None
        if readonly:
            if not db.exists():
                raise AssayError(f"{self.run_dir}: not a run directory (no {DB_NAME})")
            self._db = _connect(db, readonly=True)
            self._parts()
            return
        check_run_dir(self.run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._lock = RunLock(self.run_dir)  # before the database is touched: its holder may be writing it
        try:
            self._db = _connect(db, readonly=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA wal_autocheckpoint=0")  # checkpoints are made beside the writer
            self._migrate()
            self._checkpoints = Checkpointer(db)
            weakref.finalize(self, self._checkpoints.close)  # never closed: the thread ends when the store is collected
        except BaseException:
            self._lock.release()
            raise
        self._parts()

    def _parts(self) -> None:
        """Hand out the parts kept in their own classes: the judge call cache (the managed judge's ``cache``)
        and the provider batches, both over this connection."""
        self.writes = TurnWriter(self._db)
        self.calls = CallCache(self._db, self.writes)
        self.batches = BatchRecords(self._db, self.writes)

    def _migrate(self) -> None:
        version = self._db.execute("PRAGMA user_version").fetchone()[0]
        for i, (_name, sql) in enumerate(_MIGRATIONS[version:], start=version):
            self._db.executescript(f"BEGIN; {sql}; PRAGMA user_version = {i + 1}; COMMIT;")

    def close(self) -> None:
        self.writes.commit()
        if self._checkpoints is not None:
            self._checkpoints.close()
            self._checkpoints = None
        self._db.close()  # the last connection: it checkpoints what is left and removes the WAL
        if self._lock is not None:
            self._lock.release()

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

    def check(self, manifest: dict[str, Any], *, before_prepare: bool = False,
              upgrade: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> bool:
        """Refuse to go on when this directory holds a run with other settings (``FINGERPRINT``).

        Called before any judge call, so that a mismatch costs nothing and writes nothing.

        Args:
            manifest: The new run's manifest (or just its fingerprint fields).
            before_prepare: ``manifest`` holds the method settings known before preparation (its options):
                only those are compared now; :meth:`begin` compares all of them once prepared.
            upgrade: Maps the stored method settings' old option names onto the new ones before comparing
                (:meth:`assay.methods.base.MethodOptions.upgrade_settings`), so that a run recorded under an
                option's old name resumes; the stored manifest is left as it is.

        Returns:
            True if a run is stored here (this is a resume).

        Raises:
            ConfigError: The stored run differs; the message lists each differing setting side by side.
        """
        old = self.manifest()
        if old is None:
            return False
        if upgrade is not None and isinstance(old.get("method_settings"), dict):
            old = {**old, "method_settings": upgrade(old["method_settings"])}
        diffs = fingerprint_diff(old, manifest, partial=("method_settings",) if before_prepare else ())
        if diffs:
            shown = diffs[:_MAX_DIFF_LINES] + ([f"... and {len(diffs) - _MAX_DIFF_LINES} more"]
                                               if len(diffs) > _MAX_DIFF_LINES else [])
            raise ConfigError(
                f"{self.run_dir} holds a run with other settings:\n" + "\n".join(f"  {d}" for d in shown)
                + "\nUse a new --run-dir, or repeat the original command to resume it."
            )
        return True

    def begin(self, manifest: dict[str, Any],
              upgrade: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> bool:
        """Record the manifest of a new run, or check that it matches the one already here.

        Returns:
            True if the run already existed (this is a resume).

        Raises:
            ConfigError: The directory holds a run with different settings.
        """
        if not self.check(manifest, upgrade=upgrade):
            self.set_meta("manifest", manifest)
            return False
        old = self.manifest() or {}
        old.setdefault("resumed_at", []).append(manifest.get("started_at"))
        self.set_meta("manifest", old)
        return True

    def put_samples(self, samples: Iterable[Sample]) -> None:
        """Keep the ids, groups and human ratings of the samples, so the run stands alone."""
        with self.writes.transaction() as db:
            db.executemany(
                "INSERT OR IGNORE INTO samples VALUES (?, ?, ?, ?, ?)",
                [(s.id, s.doc_id, s.system_id, json.dumps(s.human), json.dumps(s.annotators)) for s in samples])

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
        """Write one judgment. A failed unit's row is replaced by its new outcome, and so is a parse-failed one
        by a re-ask that records it (``previous_attempts`` in the trace: ``--retry-parse-failures``); any other
        second judgment for a unit is an error, never a duplicate.

        One statement, committed with the other writes of its event-loop turn (:class:`TurnWriter`: a killed run
        keeps every judgment written before that turn): the upsert replaces only such a row, so that nothing
        changes when the unit is stored already otherwise.

        Raises:
            sqlite3.IntegrityError: The unit has a scored or parse-failed judgment already.
        """
        replaced = "('failed', 'parse_failed')" if "previous_attempts" in j.trace else "('failed')"
        cursor = self.writes.execute(
            "INSERT INTO judgments (sample_id, dimension, method, judge, score, error, trace, usage, created, "
            "status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (sample_id, dimension) DO UPDATE SET "
            "method=excluded.method, judge=excluded.judge, score=excluded.score, error=excluded.error, "
            "trace=excluded.trace, usage=excluded.usage, created=excluded.created, status=excluded.status "
            f"WHERE judgments.status IN {replaced}",
            (j.sample_id, j.dimension, j.method, j.judge, j.score, j.error,
             jsontext.dumps(j.trace), jsontext.dumps(j.usage), time.time(), j.status),
        )
        if cursor.rowcount == 0:
            raise sqlite3.IntegrityError(f"unit ({j.sample_id}, {j.dimension}) is stored already ({DB_NAME})")

    def record_import(self, samples: Iterable[Sample], judgments: Iterable[Judgment], manifest: dict[str, Any],
                      notes: Iterable[tuple[str, str]] = ()) -> None:
        """Write one import (``assay import``) at once: its samples, judgments, manifest and notes.

        One transaction, so that an interrupted import leaves the run as it was and can simply be repeated.
        A judgment for a unit already stored is an error (the whole import is rolled back).
        """
        with self.writes.transaction() as db:
            db.executemany(
                "INSERT OR IGNORE INTO samples VALUES (?, ?, ?, ?, ?)",
                [(s.id, s.doc_id, s.system_id, json.dumps(s.human), json.dumps(s.annotators)) for s in samples])
            db.executemany(
                "INSERT INTO judgments (sample_id, dimension, method, judge, score, error, trace, usage, created, "
                "status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(j.sample_id, j.dimension, j.method, j.judge, j.score, j.error,
                  jsontext.dumps(j.trace), jsontext.dumps(j.usage), time.time(), j.status) for j in judgments])
            self.set_meta("manifest", manifest)
            for kind, message in notes:
                self.add_note(kind, message)

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

    def asked_units(self) -> list[tuple[str, str]]:
        """Every (sample, dimension) the run was asked to judge: its samples times its manifest's dimensions."""
        dims = [d["name"] for d in (self.manifest() or {}).get("dimensions") or []]
        return [(s[0], d) for s in self._db.execute("SELECT id FROM samples ORDER BY rowid") for d in dims]

    def unit_counts(self) -> dict[str, int]:
        """How far the run got: units ``asked``, stored per status, and ``undone`` (asked, never stored)."""
        counts = self._status_counts()
        asked = set(self.asked_units())
        stored = set(self._db.execute("SELECT sample_id, dimension FROM judgments"))
        return {"asked": len(asked), **counts, "undone": len(asked - stored)}

    def _status_counts(self) -> dict[str, int]:
        """Stored judgments per status (``scored``, ``parse_failed``, ``failed``), zeros included."""
        counts = dict.fromkeys(("scored", "parse_failed", "failed"), 0)
        for status, n in self._db.execute(
                f"SELECT {self._status_column()} AS st, COUNT(*) FROM judgments GROUP BY st"):
            counts[status] = int(n)
        return counts

    def score_rows(self) -> list[dict[str, Any]]:
        """One row per judgment with its sample's groups and human ratings (``human``: the sample's dict), without
        its trace or usage: what a score table reads (:func:`assay.meta.inputs.read_run`), at a fraction of the
        cost of :meth:`rows` (no trace is parsed)."""
        rows = self._db.execute(
            f"SELECT j.sample_id, s.doc_id, s.system_id, j.dimension, j.method, j.judge, "
            f"{self._status_column()}, j.score, j.error, s.human FROM judgments j "
            "LEFT JOIN samples s ON s.id = j.sample_id ORDER BY j.created, j.rowid")
        ratings = functools.cache(json.loads)  # a sample's human ratings, parsed once for all of its dimensions
        return [{"sample_id": sid, "doc_id": doc, "system_id": system, "dimension": dim, "method": method,
                 "judge": judge, "status": status, "score": score, "error": error,
                 "human": (ratings(human) if human else {}).get(dim)}
                for sid, doc, system, dim, method, judge, status, score, error, human in rows]

    # -- export ------------------------------------------------------------------------------

    def rows(self, calibrated: Mapping[str, Mapping[str, float | None]] | None = None) -> list[dict[str, Any]]:
        """One flat row per judgment, joined with the sample's groups and human rating.

        Args:
            calibrated: ``{dimension: {sample_id: score}}`` from a calibration (``assay meta --calibrate``):
                added as its own ``score_calibrated`` column, never in place of the judge's ``score``.
        """
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
            if calibrated is not None:
                out[-1]["score_calibrated"] = (calibrated.get(j.dimension) or {}).get(j.sample_id)
        return out

    def to_pandas(self, calibrated: Mapping[str, Mapping[str, float | None]] | None = None) -> Any:
        import pandas as pd

        cols = ["sample_id", "doc_id", "system_id", "dimension", "method", "judge", "status", "score", "human",
                "error", "calls", "cached_calls", "prompt_tokens", "completion_tokens", "trace"]
        if calibrated is not None:
            cols.insert(cols.index("score") + 1, "score_calibrated")
        return pd.DataFrame(self.rows(calibrated), columns=cols)

    def export(self, path: str | Path, fmt: str,
               calibrated: Mapping[str, Mapping[str, float | None]] | None = None) -> Path:
        """Write the judgments as ``jsonl``, ``csv`` or ``parquet`` (with ``score_calibrated`` when given)."""
        path = Path(path)
        if fmt == "jsonl":
            with path.open("w", encoding="utf-8") as fh:
                for row in self.rows(calibrated):
                    row["trace"] = json.loads(row["trace"])
                    fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        elif fmt == "csv":
            self.to_pandas(calibrated).to_csv(path, index=False)
        elif fmt == "parquet":
            self.to_pandas(calibrated).to_parquet(path, index=False)
        else:
            raise ConfigError(f"unknown export format {fmt!r}; choose jsonl, csv or parquet")
        return path


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


# -- the manifest check (pure) -------------------------------------------------------------------

_MAX_DIFF_LINES = 12
_ABSENT = object()


def fingerprint_diff(old: dict[str, Any], new: dict[str, Any], *, partial: tuple[str, ...] = ()) -> list[str]:
    """The fingerprint settings that differ, one line each: ``key: stored X | now Y``.

    Nested settings are compared leaf by leaf under dotted keys (lists of named objects, such as
    the dimensions, by name), so a message shows only what changed, not two dumps of everything.

    Args:
        old: The stored manifest.
        new: The new run's manifest.
        partial: Fields of which only the leaves present in ``new`` are compared (settings that the
            new run only completes later, e.g. method settings before preparation).
    """
    lines = []
    for key in FINGERPRINT:
        a, b = _leaves(old.get(key), key), _leaves(new.get(key), key)
        if key in partial:  # only what the new run already knows; nothing at all when it knows nothing yet
            names = [n for n in b if n != key or b[n] not in (None, {})]
        else:
            names = list(dict.fromkeys([*a, *b]))
        differing = [n for n in names if (n in a) != (n in b) or _canon(a.get(n)) != _canon(b.get(n))]
        if not differing and key not in partial and _canon(old.get(key)) != _canon(new.get(key)):
            differing, a, b = [key], {key: old.get(key)}, {key: new.get(key)}  # same leaves, other order
        lines += [f"{n}: stored {_show(a.get(n, _ABSENT))} | now {_show(b.get(n, _ABSENT))}" for n in differing]
    return lines


def _leaves(value: Any, prefix: str) -> dict[str, Any]:
    """A nested value as ``{dotted key: leaf}``; lists of objects with unique names are keyed by name."""
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_leaves(v, f"{prefix}.{k}"))
        return out
    if isinstance(value, list) and value and all(isinstance(v, dict) and isinstance(v.get("name"), str)
                                                 for v in value):
        names = [v["name"] for v in value]
        if len(set(names)) == len(names):
            return _leaves({v["name"]: v for v in value}, prefix)
    return {prefix: value}


def _show(value: Any) -> str:
    if value is _ABSENT:
        return "(absent)"
    text = repr(value) if isinstance(value, str) else _canon(value)
    return text if len(text) <= 100 else text[:97] + "..."


# -- opening and locking -------------------------------------------------------------------------

def check_run_dir(run_dir: str | Path) -> None:
    """Refuse a run directory path that names something other than a directory, before anything is done.

    Raises:
        ConfigError: The path exists and is a file (or another non-directory).
    """
    path = Path(run_dir)
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{path}: the run directory (--run-dir) is a file, not a directory; "
                          "give a directory (new or holding a run)")


def _connect(db: Path, *, readonly: bool) -> sqlite3.Connection:
    """Open a run database, refusing a file that is empty or damaged rather than starting afresh over it.

    SQLite takes a 0-byte file for a new database, so a run whose file was emptied would silently
    begin again and pay for every call twice; a damaged file would fail later with a traceback.
    """
    existed = db.exists()
    if existed and db.stat().st_size == 0:
        raise _damaged(db, "the file is empty", readonly)
    try:
        if readonly:
            conn = sqlite3.connect(db.resolve().as_uri() + "?mode=ro", uri=True, isolation_level=None)
        else:
            conn = sqlite3.connect(db, isolation_level=None, timeout=30)
    except sqlite3.Error as exc:
        raise _damaged(db, str(exc), readonly) from exc
    if not existed:
        return conn
    try:
        problems = [row[0] for row in conn.execute("PRAGMA quick_check")]
    except sqlite3.Error as exc:
        conn.close()
        raise _damaged(db, str(exc), readonly) from exc
    if problems != ["ok"]:
        conn.close()
        raise _damaged(db, f"integrity check: {problems[0]}", readonly)
    return conn


def _damaged(db: Path, reason: str, readonly: bool) -> InputError:
    todo = ("it cannot be read; restore it from a copy" if readonly else
            f"nothing was changed; move it away (mv {db} {db}.damaged) to start this run again, "
            "or use another --run-dir")
    return InputError(f"damaged or not a run database ({reason}): {todo}", file=str(db))


class RunInUseError(AssayError):
    """Another process is writing this run directory."""


class RunLock:
    """An exclusive lock on a run directory, held while one process writes it.

    ``flock`` on ``run.lock`` in the directory: the kernel drops it when its holder exits or is
    killed, so a lock file left by a killed run never blocks the next one. The file's text only
    names the holder (pid, host, start time) for the message a second run prints.

    Raises:
        RunInUseError: Another process holds the lock.
    """

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / LOCK_NAME
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise RunInUseError(f"{run_dir} is in use by another run ({holder}); wait for it to finish "
                                "or stop it, or use another --run-dir") from None
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                  "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}).encode(), 0)
        self._fd: int | None = fd

    def release(self) -> None:
        """Let go of the lock (closing the file releases it); the holder's text goes with it."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            os.ftruncate(fd, 0)
        finally:
            os.close(fd)


def _holder(fd: int) -> str:
    try:
        info = json.loads(os.pread(fd, 4096, 0) or b"{}")
        return f"pid {info['pid']} on {info['host']}, started {info['started']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "holder not recorded yet"
