"""The dataset card (one YAML file says all assay knows of a dataset) and the registry of the shipped cards.

A card names its data file and how to read it, its provenance and licence, the task, what input and
output are called, every human-rated dimension (definition, the judge's scale, the human ratings' scale
where it differs), the correlation level, and the method artifacts made for it (CheckEval checklist,
SEAL spec entry, G-Eval criteria, GER-Eval task). The shipped cards live in ``assay/datasets/cards/``;
a user's card is the same format (``load_dataset("my_data.yaml")``). Methods look their artifacts up
through the card, never through a table of dataset names of their own.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, model_validator

from assay.common.files import load_model
from assay.datasets.loaders import READERS
from assay.errors import ConfigError, InputError, did_you_mean
from assay.types import Dimension, Scale

Level = Literal["sample", "system", "dataset"]
DEFAULT_TASK = "Evaluate the quality of generated text."


class FieldMap(BaseModel):
    """Which record field holds each part of a Sample (only ``output`` is required)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str | None = None
    doc_id: str | None = None
    system_id: str | None = None
    source: str | None = None
    output: str
    reference: str | None = None
    context: str | None = None


class ArtifactNames(BaseModel):
    """The method artifacts made for a dataset, by name; a method without one says what it did instead.

    Attributes:
        checkeval: Shipped checklist (``assay/methods/checkeval/checklists/<name>.yaml``) or a checklist file
            (``.yaml``/``.yml``, relative to the card).
        checkeval_paper: The authors' released question pool used under ``--preset paper``.
        seal: Entry of the SEAL spec's ``datasets:`` table (dimension -> recipe); the dataset's name when absent.
        geval: Task of ``assay/methods/geval/criteria.yaml`` whose criteria the judge is given.
        geval_paper: Released G-Eval prompt file (``assay/methods/geval/paper_prompts/``) for ``--criteria paper``.
        gereval: Entry of ``assay/methods/gereval/gereval_tasks.yaml`` and ``human_rubrics.yaml``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    checkeval: str | None = None
    checkeval_paper: str | None = None
    seal: str | None = None
    geval: str | None = None
    geval_paper: str | None = None
    gereval: str | None = None


class DatasetInfo(BaseModel):
    """A dataset card: what assay knows about a dataset.

    Attributes:
        name: Registry name.
        file: The data file (a card file gives it relative to itself; held resolved).
        reader: Name of the layout reader in :data:`assay.datasets.loaders.READERS` (a benchmark's
            public layout); None when ``fields`` maps the records instead.
        fields: Which record field holds each part of a sample (any JSON/JSONL/CSV/Parquet file).
        human: Dimension -> record field holding its human rating (with ``fields``).
        task: Plain description of the task, used by prompts (G-Eval's task introduction,
            GER-Eval's task description).
        input_name / output_name: What the input and output are called in prompts.
        context_name: What the extra grounding is called, if the set has one.
        reference_name: What the reference (a human-written output) is called, where the set has one (the
            viewer labels it so).
        dimensions: Every human-rated dimension, with the definition and scale a judge is given.
        human_scales: The scale of a dimension's human ratings where it is not the judge's (QAGS
            consistency: a share of sentences, 0-1, judged on 1-5); a card writes it as the
            dimension's ``human_scale``.
        default_dimensions: The dimensions the papers report, judged when none is named.
        level: The conventional correlation level for this set in the literature.
        contrast_field: The human rating that picks high/low examples (GER-Eval's contrastive prompt).
        provenance: Origin of the data.
        licence: The data's licence, where known.
        artifacts: The method artifacts made for this dataset, by name.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    file: str
    reader: str | None = None
    fields: FieldMap | None = None
    human: dict[str, str] = {}
    task: str = DEFAULT_TASK
    input_name: str = "input"
    output_name: str = "output"
    context_name: str | None = None
    reference_name: str = "reference"
    dimensions: tuple[Dimension, ...]
    human_scales: dict[str, Scale] = {}
    default_dimensions: tuple[str, ...] = ()
    level: Level = "dataset"
    contrast_field: str = ""
    provenance: str = ""
    licence: str | None = None
    artifacts: ArtifactNames = ArtifactNames()

    @model_validator(mode="before")
    @classmethod
    def _human_scales_from_dimensions(cls, data: Any) -> Any:
        """A card writes a dimension's human scale beside it; it is held apart so that the Dimension a
        method receives (and records) stays the judge's."""
        if not isinstance(data, dict) or not isinstance(data.get("dimensions"), list):
            return data
        dims, scales = [], dict(data.get("human_scales") or {})
        for d in data["dimensions"]:
            if isinstance(d, dict) and "human_scale" in d:
                d = dict(d)
                scales[d.get("name")] = d.pop("human_scale")
            dims.append(d)
        return {**data, "dimensions": dims, "human_scales": scales}

    def dimension(self, name: str) -> Dimension:
        for d in self.dimensions:
            if d.name == name:
                return d
        raise ConfigError(f"dataset {self.name!r} has no dimension {name!r}."
                          + did_you_mean(name, [d.name for d in self.dimensions]))

    def human_scale(self, name: str) -> Scale:
        """The scale of the human ratings of a dimension: its own ``human_scale``, else the judge's."""
        return self.human_scales.get(name) or self.dimension(name).scale

    def human_dimensions(self) -> list[Dimension]:
        """The dimensions with the scale their human ratings are on (for checking and comparing ratings)."""
        return [d.model_copy(update={"scale": self.human_scale(d.name)}) for d in self.dimensions]


def card_problems(info: DatasetInfo) -> list[tuple[str, str]]:
    """What is inconsistent inside a card, as (field, message): the schema alone cannot see these."""
    names = [d.name for d in info.dimensions]
    out: list[tuple[str, str]] = []
    if not names:
        out.append(("dimensions", "define at least one dimension"))
    out += [(f"dimensions.{i}", f"dimension {n!r} is defined twice") for i, n in enumerate(names) if n in names[:i]]
    if (info.reader is None) == (info.fields is None):
        out.append(("reader", "give either `reader` (a benchmark layout: " + ", ".join(sorted(READERS))
                    + ") or `fields` (which record field holds what), not both"))
    elif info.reader is not None and info.reader not in READERS:
        out.append(("reader", f"unknown reader {info.reader!r}." + did_you_mean(info.reader, list(READERS))))
    if info.human and info.fields is None:
        out.append(("human", "`human` maps record fields and goes with `fields`"))
    known = ", ".join(names)
    out += [(f"human.{d}", f"a human rating for {d!r}, which is not a dimension defined under 'dimensions' ({known})")
            for d in info.human if d not in names]
    out += [(f"dimensions.{d}.human_scale", f"{d!r} is not a dimension") for d in info.human_scales if d not in names]
    out += [("default_dimensions", f"{d!r} is not a dimension ({known})")
            for d in info.default_dimensions if d not in names]
    if info.contrast_field and info.contrast_field not in names:
        out.append(("contrast_field", f"{info.contrast_field!r} is not a dimension ({known})"))
    return out


def parse_card(path: Path) -> DatasetInfo:
    """A card from its YAML file, its data file resolved against the card's folder and its defaults filled in.

    Raises:
        InputError: Missing file, bad YAML, or a field that is missing, unknown or inconsistent (named).
    """
    if not path.is_file():
        raise InputError("file not found", file=str(path))
    info = load_model(path, DatasetInfo, what="dataset card",
                      mapping="a dataset card is a mapping (name, file, dimensions, ...)")
    problems = card_problems(info)
    if problems:
        raise InputError(problems[0][1], file=str(path), field=problems[0][0])
    names = tuple(d.name for d in info.dimensions)
    beside = {k: str((path.parent / v).resolve()) for k, v in info.artifacts.model_dump().items()
              if isinstance(v, str) and v.endswith((".yaml", ".yml", ".json")) and (path.parent / v).is_file()}
    if beside:  # an artifact file the card names beside it (a user's own checklist): found wherever the run starts
        info = info.model_copy(update={"artifacts": info.artifacts.model_copy(update=beside)})
    return info.model_copy(update={
        "file": str((path.parent / info.file).resolve()),
        "default_dimensions": info.default_dimensions or names,
        "contrast_field": info.contrast_field or names[0],
        "provenance": info.provenance or f"user data from {path}",
    })


def cards_dir() -> Path:
    """Where the shipped cards live."""
    return Path(str(resources.files("assay.datasets") / "cards"))


@cache
def _shipped_names() -> tuple[str, ...]:
    """The shipped cards' names, in file-name order (a card is named as its file)."""
    return tuple(sorted(path.stem for path in cards_dir().glob("*.yaml")))


@cache
def shipped_card(name: str) -> DatasetInfo:
    """One shipped card, parsed on first use: a run reads its own dataset's card, not all of them.

    Raises:
        KeyError: No card has that name.
    """
    if name not in _shipped_names():
        raise KeyError(name)
    path = cards_dir() / f"{name}.yaml"
    card = parse_card(path)
    if card.name != name:
        raise InputError(f"a shipped card is named as its file ({name!r})", file=str(path), field="name")
    return card


class _Registry(Mapping[str, DatasetInfo]):
    """The shipped cards as a read-only mapping, each read on first use."""

    def __getitem__(self, name: str) -> DatasetInfo:
        return shipped_card(name)

    def __iter__(self) -> Iterator[str]:
        return iter(_shipped_names())

    def __len__(self) -> int:
        return len(_shipped_names())


CATALOG: Mapping[str, DatasetInfo] = _Registry()


def get_info(name: str) -> DatasetInfo:
    """The shipped card of a dataset name.

    Raises:
        ConfigError: Unknown name (with the nearest ones).
    """
    if name not in CATALOG:
        raise ConfigError(f"unknown dataset {name!r}." + did_you_mean(name, list(CATALOG)))
    return CATALOG[name]


def card_of(dataset: str | DatasetInfo) -> DatasetInfo:
    """A dataset's card: given, or the shipped card of a name (methods accept either)."""
    return dataset if isinstance(dataset, DatasetInfo) else get_info(dataset)
