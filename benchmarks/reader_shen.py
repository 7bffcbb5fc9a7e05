"""The answer reader on real judges' answers (Shen et al. 2023): agreement with hand readings, corpus coverage.

Usage::

    PYTHONPATH=src python benchmarks/reader_shen.py [--data DIR] [--baseline REV] [--no-corpus]

Prints (1) per judge and prompt style, on the hand-checked sample in
``tests/fixtures/reader/shen2023_expected.jsonl``: agreement with the hand reading (a missing value
where the hand reading is null counts as agreement), coverage (share of answers given a value) and
misreadings (a value that differs from the hand reading), for the reader in ``src/`` and for the
reader at git revision REV (default ``0b33857``, the reader before issue 13); (2) over the FULL
corpus, per judge, style and dimension: coverage and the distribution of the values read; (3) over the
FULL corpus of the styles whose format fixes the reading (every ``stareval`` answer begins with its star
count, every ``mcq``/``altmcq`` answer is one letter): agreement and misreadings. ``--list`` names every
sample answer read differently from the hand reading and the first 20 misreadings of (3).

The answer texts stay in ``../shared/data/published/shen2023_summeval`` beside the repository root
(no licence: never copied here); ``--data`` or the environment variable ``ASSAY_SHEN2023`` point elsewhere.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import types
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.types import Scale

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "reader" / "shen2023_expected.jsonl"
SCALE = Scale(low=1, high=5)
LETTERS = ["A", "B", "C", "D", "E"]
STYLES = ("rts", "altrts", "stareval", "mcq", "altmcq")
LETTER_STYLES = ("mcq", "altmcq")


def data_dir(override: str | None = None) -> Path:
    """Where the corpus lies: ``override``, else ``$ASSAY_SHEN2023``, else ``../shared/...`` beside the repo."""
    chosen = override or os.environ.get("ASSAY_SHEN2023")
    return Path(chosen) if chosen else ROOT.parent / "shared" / "data" / "published" / "shen2023_summeval"


@dataclass(frozen=True)
class Entry:
    """One hand-checked answer: where it lies and how a person reads it."""

    judge: str
    style: str
    dimension: str
    file: str
    line: int
    id: str
    kind: str
    expected: float | str | None
    why: str
    sample: str


def load_sample(path: Path = FIXTURE) -> list[Entry]:
    """The hand-checked entries, in file order."""
    with path.open(encoding="utf-8") as f:
        return [Entry(**json.loads(line)) for line in f if line.strip()]


def read_record(data: Path, file: str, line: int) -> dict[str, Any]:
    """The JSON record on 1-based ``line`` of ``data/file``.

    Raises:
        LookupError: The file has fewer lines.
    """
    with (data / file).open(encoding="utf-8") as f:
        for n, text in enumerate(f, 1):
            if n == line:
                return json.loads(text)
    raise LookupError(f"{file} has no line {line}")


class ReaderMissing(Exception):
    """The parsing module lacks the function this kind of answer needs (``parse_choice`` before issue 13)."""


def read(parsing: types.ModuleType, kind: str, text: str, dimension: str) -> float | str | None:
    """The value a parsing module reads from one answer, or None when it reports a failure.

    Numbers and nulls go through ``parse_rating(text, Scale(1, 5), dimension)``, letters through
    ``parse_choice(text, ["A", ..., "E"])``.

    Raises:
        ReaderMissing: A letter answer and no ``parse_choice`` in ``parsing``.
    """
    if kind == "letter":
        choose = getattr(parsing, "parse_choice", None)
        if choose is None:
            raise ReaderMissing(f"{parsing.__name__} has no parse_choice")
        parsed = choose(text, LETTERS)
    else:
        parsed = parsing.parse_rating(text, SCALE, dimension)
    return parsed.value if parsed.ok else None


def agrees(expected: float | str | None, got: float | str | None) -> bool:
    """Whether a reading matches the hand reading (no value where the hand reading is null agrees)."""
    if expected is None or got is None:
        return expected is None and got is None
    if isinstance(expected, str) or isinstance(got, str):
        return expected == got
    return float(expected) == float(got)


def misreads(expected: float | str | None, got: float | str | None) -> bool:
    """Whether the reader gave a value that is not the hand reading (a failure is not a misreading)."""
    return got is not None and not agrees(expected, got)


@dataclass
class Tally:
    """Agreement, coverage and misreadings of one group of entries."""

    n: int = 0
    agree: int = 0
    read: int = 0
    misread: int = 0

    def add(self, expected: float | str | None, got: float | str | None) -> None:
        self.n += 1
        self.agree += agrees(expected, got)
        self.read += got is not None
        self.misread += misreads(expected, got)

    def row(self) -> str:
        return f"{self.n:>4} {_pct(self.agree, self.n):>7} {_pct(self.read, self.n):>7} {self.misread:>7}"


def tally(pairs: Iterable[tuple[Entry, float | str | None]], key: Callable[[Entry], str]) -> dict[str, Tally]:
    """Tallies per group (``key`` of each entry) plus ``"all"``, from (entry, reading) pairs."""
    out: dict[str, Tally] = defaultdict(Tally)
    for entry, got in pairs:
        out[key(entry)].add(entry.expected, got)
        out["all"].add(entry.expected, got)
    return dict(out)


def read_sample(parsing: types.ModuleType, entries: list[Entry], data: Path) -> list[tuple[Entry, Any]]:
    """(entry, reading) for every entry the module can read (letters are skipped without ``parse_choice``)."""
    pairs = []
    for e in entries:
        text = read_record(data, e.file, e.line)["resp"]
        try:
            pairs.append((e, read(parsing, e.kind, text, e.dimension)))
        except ReaderMissing:
            continue
    return pairs


def module_at(rev: str) -> types.ModuleType:
    """``assay.answers.parsing`` as it was at git revision ``rev``, loaded under another name beside today's."""
    source = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:src/assay/parsing.py"], check=True,
                            capture_output=True, text=True).stdout
    module = types.ModuleType(f"assay_parsing_{rev}")
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(source, f"{rev}:src/assay/parsing.py", "exec"), module.__dict__)  # our own history, not input
    return module


def corpus(data: Path) -> Iterable[tuple[str, str, str, str]]:
    """(judge, style, dimension, answer) for every answer of the five styles (earlier runs left out)."""
    for path in sorted(data.glob("*/eval_*_generations/*.txt")):
        dimension, _, style = path.stem.rpartition("_")
        if style not in STYLES:
            continue
        with path.open(encoding="utf-8") as f:
            for line in f:
                yield path.parts[-3], style, dimension, json.loads(line)["resp"]


def corpus_table(parsing: types.ModuleType, data: Path) -> list[str]:
    """Per judge/style/dimension, then per judge/style: answers, share read, the values read with their counts."""
    counts: dict[tuple[str, str, str], Counter] = defaultdict(Counter)
    for judge, style, dimension, text in corpus(data):
        kind = "letter" if style in LETTER_STYLES else "number"
        try:
            got = read(parsing, kind, text, dimension)
        except ReaderMissing:
            got = "n/a"
        counts[(judge, style, dimension)][_fmt(got)] += 1
        counts[(judge, style, "(all)")][_fmt(got)] += 1
    lines = [f"{'judge':20} {'style':8} {'dimension':11} {'n':>5} {'read':>7}  values (count)"]
    for (judge, style, dimension), c in sorted(counts.items(), key=lambda kv: (kv[0][2] == "(all)", kv[0])):
        n = sum(c.values())
        read_n = n - c["-"] - c["n/a"]
        values = " ".join(f"{v}:{k}" for v, k in sorted(c.items()) if v not in ("-", "n/a"))
        shown = "n/a" if c["n/a"] else _pct(read_n, n)
        lines.append(f"{judge:20} {style:8} {dimension:11} {n:>5} {shown:>7}  {values}")
    return lines


_STARS = re.compile(r"\s*(\d|one|two|three|four|five)\s+stars?\b", re.IGNORECASE)
_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5}


def format_reading(style: str, text: str) -> float | str | None:
    """The reading the answer's own format fixes, where it does: the leading star count, the lone letter."""
    if style == "stareval":
        m = _STARS.match(text)
        return float(_WORDS.get(m.group(1).lower()) or m.group(1)) if m else None
    if style in LETTER_STYLES:
        return text.strip() if text.strip() in LETTERS else None
    return None


def format_table(parsing: types.ModuleType, data: Path, show: int = 0) -> list[str]:
    """Over the FULL corpus, for the styles whose format fixes the reading: agreement, coverage, misreadings.

    Also lists the first ``show`` misreadings (a value other than the one the format fixes).
    """
    tallies: dict[str, Tally] = defaultdict(Tally)
    wrong_lines = []
    for judge, style, dimension, text in corpus(data):
        expected = format_reading(style, text)
        if expected is None:
            continue
        try:
            got = read(parsing, "letter" if style in LETTER_STYLES else "number", text, dimension)
        except ReaderMissing:
            continue
        tallies[f"{judge} {style}"].add(expected, got)
        if misreads(expected, got) and len(wrong_lines) < show:
            wrong_lines.append(f"  {style} {dimension} expected={_fmt(expected)} got={_fmt(got)} | "
                               + " ".join(text.split())[:100])
    lines = [f"{'judge / style':34} {'n':>4} {'agree':>7} {'read':>7} {'misread':>7}"]
    lines += [f"{key:34} {t.row()}" for key, t in sorted(tallies.items())]
    return lines + wrong_lines


def sample_table(title: str, pairs: list[tuple[Entry, Any]]) -> list[str]:
    """Agreement, coverage and misreadings per judge and style, then per judge, then all."""
    lines = [title, f"{'judge / style':34} {'n':>4} {'agree':>7} {'read':>7} {'misread':>7}"]
    by_style = tally(pairs, lambda e: f"{e.judge} {e.style}")
    by_judge = tally(pairs, lambda e: e.judge)
    for key in sorted(k for k in by_style if k != "all"):
        lines.append(f"{key:34} {by_style[key].row()}")
    for key in sorted(k for k in by_judge if k != "all"):
        lines.append(f"{key + ' (all styles)':34} {by_judge[key].row()}")
    if pairs:
        lines.append(f"{'all':34} {by_style['all'].row()}")
    random_part = tally([p for p in pairs if p[0].sample == "random"], lambda e: "random")
    if random_part:
        lines.append(f"{'random part only':34} {random_part['all'].row()}")
    return lines


def wrong(pairs: list[tuple[Entry, Any]], data: Path) -> list[str]:
    """One line per answer read differently from the hand reading: where, expected, got, an excerpt."""
    out = []
    for e, got in pairs:
        if not agrees(e.expected, got):
            text = read_record(data, e.file, e.line)["resp"]
            excerpt = " ".join(text.split())[:100]
            out.append(f"{e.judge} {e.file}:{e.line} expected={_fmt(e.expected)} got={_fmt(got)} | {excerpt}")
    return out


def _pct(k: int, n: int) -> str:
    return f"{100 * k / n:.1f}%" if n else "-"


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", help="the shen2023_summeval folder (default: ../shared/... beside the repository)")
    ap.add_argument("--baseline", default="0b33857", help="git revision of the reader to compare ('' for none)")
    ap.add_argument("--no-corpus", action="store_true", help="skip the full-corpus coverage table")
    ap.add_argument("--list", action="store_true", help="list every answer read differently from the hand reading")
    args = ap.parse_args()
    data = data_dir(args.data)
    if not data.is_dir():
        sys.exit(f"no corpus at {data}: pass --data or set ASSAY_SHEN2023")
    from assay.answers import parsing

    entries = load_sample()
    readers = [("reader in src/", parsing)]
    if args.baseline:
        readers.append((f"reader at {args.baseline}", module_at(args.baseline)))
    for name, module in readers:
        pairs = read_sample(module, entries, data)
        print("\n".join(sample_table(f"\n== hand-checked sample, {name} ({len(pairs)} of {len(entries)} read)",
                                     pairs)))
        if args.list:
            print("\n".join(["-- read differently:", *wrong(pairs, data)]))
    if not args.no_corpus:
        print("\n== full corpus, reader in src/\n" + "\n".join(corpus_table(parsing, data)))
        print("\n== full corpus, styles whose format fixes the reading (leading star count, lone letter), "
              "reader in src/\n" + "\n".join(format_table(parsing, data, show=20 if args.list else 0)))


if __name__ == "__main__":
    main()
