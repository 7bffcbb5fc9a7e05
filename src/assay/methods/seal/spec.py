"""SEAL's instantiations as data: which units, sub-dimensions and prompt pieces each dimension uses.

The shipped spec (``assay/methods/seal/spec.yaml``) follows the SEAL paper: unit types and
sub-dimension names from its Table 2, thresholds from Table 19, prompt structure from Tables 21-25
(in assay's own wording). A user spec with the same schema replaces it (``--spec my.yaml``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from assay.common.files import read_yaml, validate
from assay.errors import ConfigError, InputError, did_you_mean

if TYPE_CHECKING:
    from assay.datasets.catalog import DatasetInfo

UnitType = Literal["sentence", "adjacent_pair", "monadic_fact", "response", "triple"]
TextPart = Literal["source", "context", "reference"]

SHIPPED_SPEC = Path(__file__).resolve().parent / "spec.yaml"

#: Unit types judged as several units (gated by the threshold n); the others are one unit per output.
MULTI_UNIT: dict[str, Literal["sentence", "fact"]] = {
    "sentence": "sentence", "adjacent_pair": "sentence", "monadic_fact": "fact"}


class SpecError(InputError, ConfigError):
    """A SEAL spec file that cannot be read or does not validate: bad input (named file and field), and the
    method's configuration, so that callers catching either see it."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SubDimension(_Strict):
    """One verifiable criterion of a dimension.

    Attributes:
        name: The paper's sub-dimension name (Table 2).
        question: The yes/no question asked of each unit (1 = the criterion is met).
        holistic: The same question asked of the whole output, when it is judged as one unit;
            ``question`` is used when absent.
    """

    name: str
    question: str
    holistic: str | None = None

    def holistic_question(self) -> str:
        return self.holistic or self.question


class Recipe(_Strict):
    """How one dimension is instantiated: unit type, sub-dimensions, answer format and prompt pieces.

    Attributes:
        unit: What the output is decomposed into (Table 2).
        key: The JSON key of the judge's answer.
        answer: ``binary`` ("1,0,1" per unit) or ``support`` (the ids of supporting source facts per
            output fact, Table 22 consistency).
        show: Texts shown in full in the fine-grained (and single-unit) prompt.
        holistic_show: Texts shown when a multi-unit dimension falls back to one holistic unit.
        evidence: Fact lists shown beside the output's facts (monadic-fact units only).
        intro / rules: The fine-grained prompt's opening and its rules.
        holistic_intro: The opening of the holistic prompt (multi-unit recipes).
        criterion: One phrase naming what is judged, for the scalar rating of the w/o SV ablation.
        threshold: Overrides the spec's default n for this recipe.
        weights: ``joint``: a single-unit judgment asks for the weights in the same call (Tables 23-25);
            ``separate``: a call of its own (stage "weights").
        subdimensions: The sub-dimensions, in the order the answers are given.
    """

    unit: UnitType
    key: str
    answer: Literal["binary", "support"] = "binary"
    show: list[TextPart] = Field(default_factory=list)
    holistic_show: list[TextPart] | None = None
    evidence: list[Literal["source", "reference"]] = Field(default_factory=list)
    intro: str
    rules: list[str] = Field(default_factory=list)
    holistic_intro: str | None = None
    criterion: str
    threshold: int | None = Field(default=None, ge=1)
    weights: Literal["joint", "separate"] = "joint"
    subdimensions: list[SubDimension] = Field(min_length=1)

    @model_validator(mode="after")
    def _coherent(self) -> Recipe:
        if self.answer == "support" and (self.unit != "monadic_fact" or "source" not in self.evidence
                                         or len(self.subdimensions) != 1):
            raise ValueError("answer 'support' needs unit monadic_fact, 'source' in evidence and one sub-dimension")
        if self.unit == "monadic_fact" and not self.evidence:
            raise ValueError("monadic_fact units need evidence (source and/or reference facts)")
        if self.unit != "monadic_fact" and self.evidence:
            raise ValueError("evidence facts only apply to monadic_fact units")
        return self

    @property
    def multi_unit(self) -> bool:
        """Whether the output is split into several units (and gated by a threshold)."""
        return self.unit in MULTI_UNIT

    def shown_holistic(self) -> list[TextPart]:
        return list(self.holistic_show if self.holistic_show is not None else self.show)


class SplitPrompt(_Strict):
    intro: str
    rules: list[str]


class FactPrompt(_Strict):
    intro: str
    definition: str
    criteria: list[str]
    rules: list[str]


class Spec(_Strict):
    """A SEAL spec: prompts for stage 1, thresholds, recipes and its named entries (dimension -> recipe)."""

    name: str
    version: int
    source: str
    thresholds: dict[Literal["sentence", "fact"], int]
    split_prompt: SplitPrompt
    fact_prompt: FactPrompt
    datasets: dict[str, dict[str, str]]
    recipes: dict[str, Recipe]

    @model_validator(mode="after")
    def _known_recipes(self) -> Spec:
        for ds, dims in self.datasets.items():
            for dim, recipe in dims.items():
                if recipe not in self.recipes:
                    raise ValueError(f"datasets.{ds}.{dim}: unknown recipe {recipe!r}")
        if set(self.thresholds) != {"sentence", "fact"} or min(self.thresholds.values()) < 1:
            raise ValueError("thresholds needs positive 'sentence' and 'fact' entries")
        return self

    def threshold(self, recipe: Recipe) -> int | None:
        """The threshold n of a multi-unit recipe (its own, else the spec's for its unit kind)."""
        if not recipe.multi_unit:
            return None
        return recipe.threshold or self.thresholds[MULTI_UNIT[recipe.unit]]

    def recipe_for(self, dataset: str | DatasetInfo, dimension: str, overrides: dict[str, str]) -> tuple[str, Recipe]:
        """The recipe of a (dataset, dimension): an override first, then the spec's entry the dataset's card names.

        Raises:
            ConfigError: No recipe for it, with the ways to give one.
        """
        entry = spec_entry(dataset)
        name = overrides.get(dimension) or self.datasets.get(entry, {}).get(dimension)
        if name is None:
            of = getattr(dataset, "name", dataset)
            raise ConfigError(
                f"seal: no recipe for dimension {dimension!r} of dataset {of!r} (spec entry {entry!r}) in spec "
                f"{self.name!r}. "
                f"Map it with --recipe {dimension}=RECIPE (recipes: {', '.join(sorted(self.recipes))}) "
                "or pass --spec with your own.")
        if name not in self.recipes:
            raise ConfigError(f"seal: unknown recipe {name!r}." + did_you_mean(name, list(self.recipes)))
        return name, self.recipes[name]


def spec_entry(dataset: str | DatasetInfo) -> str:
    """The entry of a spec's ``datasets:`` table a dataset uses: its card's ``seal``, else the one named as the
    dataset (a user's spec maps its own dataset by name); a name that is no shipped dataset is an entry name."""
    from assay.datasets.catalog import CATALOG

    if isinstance(dataset, str):
        if dataset not in CATALOG:
            return dataset
        dataset = CATALOG[dataset]
    return dataset.artifacts.seal or dataset.name


def parse_overrides(items: list[str]) -> dict[str, str]:
    """``["consistency=summary-consistency-facts"]`` -> ``{"consistency": "summary-consistency-facts"}``.

    Raises:
        ConfigError: An item without ``=``.
    """
    out: dict[str, str] = {}
    for item in items:
        dim, eq, recipe = item.partition("=")
        if not eq or not dim.strip() or not recipe.strip():
            raise ConfigError(f"seal: --recipe takes DIMENSION=RECIPE, got {item!r}")
        out[dim.strip()] = recipe.strip()
    return out


def load_spec(path: str | Path | None = None) -> tuple[Spec, str]:
    """Read and validate a spec file (the shipped one when ``path`` is None).

    Returns:
        The spec and its text (hashed and stored as a run artifact).

    Raises:
        SpecError: Missing file, bad YAML, or a schema violation (with its location).
    """
    file = Path(path).expanduser() if path is not None else SHIPPED_SPEC
    raw, text = read_yaml(file, what="SEAL spec", error=SpecError)
    return validate(Spec, raw, file=str(file), error=SpecError), text
