"""Datasets: the named benchmarks (bundled), any file in their layouts, and any file with a field mapping.

``load_dataset("topical-chat")`` loads the bundled copy; ``load_dataset("summeval:/my/copy.jsonl")``
reads a user's copy in one of that benchmark's public layouts; ``load_dataset("my_data.yaml")``
reads a dataset described by a spec file (see :mod:`assay.datasets.generic`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path

from assay.datasets import loaders
from assay.datasets.catalog import CATALOG, DatasetInfo
from assay.datasets.readers import read_records
from assay.errors import ConfigError, InputError, did_you_mean
from assay.types import Dimension, Sample

__all__ = ["CATALOG", "Dataset", "DatasetInfo", "list_datasets", "load_dataset"]


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
            name=name, loader="python", file="", task=task, input_name=input_name, output_name=output_name,
            dimensions=tuple(dimensions), default_dimensions=tuple(d.name for d in dimensions),
            level=level, contrast_field=dimensions[0].name, provenance="samples passed from Python")
        blob = "\n".join(s.model_dump_json() for s in samples).encode()
        return cls(info=info, samples=list(samples), sha256=hashlib.sha256(blob).hexdigest(), path="<python>")

    def dimensions(self, names: list[str] | None = None) -> list[Dimension]:
        """The named dimensions (checked), or the dataset's default ones."""
        return [self.info.dimension(n) for n in (names or self.info.default_dimensions)]


def list_datasets() -> list[DatasetInfo]:
    """The named benchmarks, in registry order."""
    return list(CATALOG.values())


def get_info(name: str) -> DatasetInfo:
    if name not in CATALOG:
        raise ConfigError(f"unknown dataset {name!r}." + did_you_mean(name, list(CATALOG)))
    return CATALOG[name]


def load_dataset(spec: str) -> Dataset:
    """Load a dataset by name, ``name:path`` or spec-file path.

    Raises:
        ConfigError: Unknown name.
        InputError: A file that is missing, malformed, or has a bad or duplicate record.
    """
    if spec.endswith((".yaml", ".yml")):
        from assay.datasets.generic import load_spec_file

        return load_spec_file(Path(spec))
    name, _, path_s = spec.partition(":")
    info = get_info(name)
    if path_s:
        path = Path(path_s)
        data = path.read_bytes() if path.exists() else b""
    else:
        ref = resources.files("assay.datasets") / "data" / info.file
        data = ref.read_bytes()
        path = Path(str(ref))
    samples = getattr(loaders, info.loader)(path)
    check_not_empty(samples, path)
    check_unique(samples, path)  # no scale check: a benchmark's human scale may differ from the judge's (QAGS 0-1)
    return Dataset(info=info, samples=samples, sha256=hashlib.sha256(data).hexdigest(), path=str(path))


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
    correlation with it would be quietly wrong. Checked where the user declares the scale (a dataset
    spec, samples made in Python); a benchmark may rate on another scale than its judge's (QAGS: 0-1).

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
