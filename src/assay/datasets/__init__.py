"""Datasets: each is one card (:mod:`assay.datasets.catalog`); the shipped cards form the registry.

``load_dataset("topical-chat")`` loads the bundled copy named by its card; ``load_dataset("summeval:/my/copy.jsonl")``
reads a user's copy in that card's layout; ``load_dataset("my_data.yaml")`` reads a user's card (the same format,
usually with a field mapping: see :mod:`assay.datasets.generic`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from assay.datasets.catalog import CATALOG, DatasetInfo, card_of, get_info, parse_card
from assay.datasets.generic import load_records_mapped
from assay.datasets.loaders import READERS
from assay.datasets.readers import read_records
from assay.errors import ConfigError, InputError
from assay.types import Dimension, Sample

__all__ = ["CATALOG", "Dataset", "DatasetInfo", "card_of", "get_info", "list_datasets", "load_card", "load_dataset"]


@dataclass(frozen=True)
class Dataset:
    """Samples with what is known about them.

    Attributes:
        info: Task, dimensions, scales and correlation level.
        samples: The samples, in file order.
        sha256: Hash of the data file's bytes, recorded in every run manifest.
        path: Where the data was read from.
        pool: All samples of the file when ``samples`` is a selection of them (see :meth:`select`);
            methods that show human-rated examples (GER-Eval's demonstrations) draw from it.
    """

    info: DatasetInfo
    samples: list[Sample]
    sha256: str
    path: str
    pool: list[Sample] | None = None

    @property
    def all_samples(self) -> list[Sample]:
        """Every sample of the file, selected for this run or not."""
        return self.pool if self.pool is not None else self.samples

    @property
    def name(self) -> str:
        return self.info.name

    def select(self, *, limit: int | None = None, docs: int | None = None) -> Dataset:
        """The first ``docs`` source documents (all their outputs), then the first ``limit`` samples.

        Raises:
            ConfigError: ``limit`` or ``docs`` below 1 (a negative slice would silently drop the tail).
            InputError: Nothing left to judge.
        """
        for name, value in (("docs", docs), ("limit", limit)):
            if value is not None and (isinstance(value, bool) or value < 1):
                raise ConfigError(f"{name} (--{name}) must be at least 1, got {value!r}")
        samples = self.samples
        if docs is not None:
            keep: list[str] = []
            for s in samples:
                if s.doc_id not in keep:
                    keep.append(s.doc_id)
            chosen = set(keep[:docs])
            samples = [s for s in samples if s.doc_id in chosen]
        if limit is not None:
            samples = samples[:limit]
        check_not_empty(samples, self.path, "after selection")
        return replace(self, samples=samples, pool=self.all_samples)

    @classmethod
    def from_samples(
        cls, samples: list[Sample], dimensions: list[Dimension], *, name: str = "custom",
        task: str = "Evaluate the quality of generated text.", input_name: str = "input",
        output_name: str = "output", level: str = "dataset",
    ) -> Dataset:
        """A dataset from Samples built in Python; its hash covers the samples' content."""
        if not dimensions:
            raise ConfigError("samples given directly need their Dimension objects (dimensions=[Dimension(...)])")
        check_not_empty(samples, "samples")
        check_unique(samples, None)
        check_ratings(samples, dimensions, None)
        info = DatasetInfo(
            name=name, file="", task=task, input_name=input_name, output_name=output_name,
            dimensions=tuple(dimensions), default_dimensions=tuple(d.name for d in dimensions),
            level=level, contrast_field=dimensions[0].name, provenance="samples passed from Python")
        blob = "\n".join(s.model_dump_json() for s in samples).encode()
        return cls(info=info, samples=list(samples), sha256=hashlib.sha256(blob).hexdigest(), path="<python>")

    def dimensions(self, names: list[str] | None = None) -> list[Dimension]:
        """The named dimensions (checked), or the dataset's default ones."""
        return [self.info.dimension(n) for n in (names or self.info.default_dimensions)]


def list_datasets() -> list[DatasetInfo]:
    """The shipped dataset cards, in registry order."""
    return list(CATALOG.values())


def load_dataset(spec: str) -> Dataset:
    """Load a dataset by name, ``name:path`` or card-file path.

    Raises:
        ConfigError: Unknown name.
        InputError: A card or data file that is missing or malformed, or a bad or duplicate record.
    """
    if spec.endswith((".yaml", ".yml")):
        path = Path(spec)
        return load_card(parse_card(path), card_bytes=path.read_bytes())
    name, _, path_s = spec.partition(":")
    return load_card(get_info(name), Path(path_s) if path_s else None)


def load_card(info: DatasetInfo, path: Path | None = None, *, card_bytes: bytes = b"") -> Dataset:
    """The samples of a card's data file (or of ``path``, a copy in the same layout), checked.

    Args:
        info: The card.
        path: A file to read instead of the card's own.
        card_bytes: The card file's bytes, hashed with the data when the card is the user's (its mapping
            decides what the samples are); empty for a shipped card, whose hash is the data file's alone.

    Raises:
        InputError: Missing or malformed file, a bad or duplicate record, or a human rating off the scale the
            card declares for it.
    """
    path = path if path is not None else Path(info.file)
    if info.reader is not None:
        samples = READERS[info.reader](path)
    elif info.fields is not None:
        samples = load_records_mapped(path, info.fields, info.human)
    else:
        raise InputError("the card says neither how to read its file (`reader`) nor which field holds what "
                         "(`fields`)", file=info.name, field="reader")
    check_not_empty(samples, path)
    check_unique(samples, path)
    check_ratings(samples, info.human_dimensions(), path, field_of=info.human.get)
    digest = hashlib.sha256(path.read_bytes() + card_bytes).hexdigest()
    return Dataset(info=info, samples=samples, sha256=digest, path=str(path))


def check_unique(samples: list[Sample], file: str | Path | None) -> None:
    """Raise on the first repeated sample id, naming both records.

    Args:
        samples: The samples, one per record of ``file`` in file order.
        file: Their data file (read again on error, to name lines); None for samples made in Python.
    """
    first: dict[str, int] = {}
    for i, s in enumerate(samples):
        if s.id in first:
            where = read_records(file).where if file is not None else (lambda k: k)
            raise InputError(f"duplicate id {s.id!r} (first at record {where(first[s.id])})",
                             file=str(file) if file is not None else "samples", record=where(i), field="id")
        first[s.id] = i


def check_not_empty(samples: list[Sample], file: str | Path, when: str = "") -> None:
    """Refuse a dataset with no samples, which would otherwise make a run that judges nothing."""
    if not samples:
        raise InputError(f"no samples to judge{' ' + when if when else ''}", file=str(file))


def check_ratings(samples: list[Sample], dimensions: Iterable[Dimension], file: str | Path | None,
                  field_of: Callable[[str], str | None] | None = None) -> None:
    """Raise on the first human rating outside its dimension's scale, naming file, record and field.

    A rating off the scale is a mislabelled column or a scale declared wrong; either way every
    correlation with it would be quietly wrong. Checked against the scale the card declares for the human
    ratings (a dimension's ``human_scale``, which may differ from the judge's, as QAGS's 0-1 share does).

    Args:
        samples: The samples, one per record of ``file`` in file order.
        dimensions: The dataset's dimensions (ratings of other names are not checked).
        file: Their data file (read again on error, to name the line); None for samples made in Python.
        field_of: The record field holding a dimension's rating, when it is not the dimension's name.
    """
    scales = {d.name: d.scale for d in dimensions}
    for i, s in enumerate(samples):
        for dim, value in s.human.items():
            scale = scales.get(dim)
            if scale is not None and not scale.low <= value <= scale.high:
                where = read_records(file).where(i) if file is not None else s.id
                raise InputError(f"human rating {value:g} for {dim!r} is off its scale {scale.label()}",
                                 file=str(file) if file is not None else "samples", record=where,
                                 field=(field_of(dim) if field_of else None) or dim)
