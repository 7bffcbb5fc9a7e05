"""G-Eval's own prompts as released (``--criteria paper``): loading, their scales and steps, filling them safely.

The CheckEval authors published the G-Eval prompts they ran for SummEval and Topical-Chat (taken from
the G-Eval release; ``assay/methods/geval/paper_prompts/``, MIT, provenance beside them). With
``criteria: paper`` G-Eval uses them as they are: the released introduction, criteria and evaluation
steps (no steps call), the scale each prompt states (SummEval fluency is 1-3 there, 1-5 in the data)
and only the texts each prompt shows (the fluency prompt shows the summary, not the article). The one
change is where the judged texts go: each ``{{Placeholder}}`` (with the quotes the Topical-Chat
prompts put around it) becomes assay's fenced, neutralised block, as in every assay prompt.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import yaml

from assay.answers.fence import MATERIAL_NOTE, fence
from assay.common.hashing import content_hash
from assay.datasets.catalog import CATALOG, DatasetInfo, card_of
from assay.errors import ConfigError, InputError
from assay.types import Dimension, Sample, Scale

PAPER_DIR = "paper_prompts"  # a dataset's card names its file (``artifacts.geval_paper``)
_PLACEHOLDER = re.compile(r'"?\{\{(Document|Summary|Response|Fact)\}\}"?')
_STEPS = re.compile(r"Evaluation Steps:[ \t]*\n(.*?)\n\s*\n\s*Example:", re.DOTALL)


@dataclass(frozen=True)
class PaperPrompt:
    """One dimension's released G-Eval prompt and what assay reads from it.

    Attributes:
        dimension: The dimension's name (a key of the released file).
        template: The released prompt text, placeholders and all.
        scale: The rating scale the prompt states (``Fluency (1-3)``).
        steps: The prompt's evaluation steps, verbatim, or None where it has none (SummEval fluency).
        file: The released file's name.
        file_sha256: The sha256 of that file's bytes (as in its provenance).
    """

    dimension: str
    template: str
    scale: Scale
    steps: str | None
    file: str
    file_sha256: str

    @property
    def source(self) -> str:
        """How the manifest and traces name these criteria: ``paper:<file>``."""
        return f"paper:{self.file}"

    def digest(self) -> str:
        """The short hash of the dimension's template, like every criteria hash in a run."""
        return content_hash(self.template)


@lru_cache(maxsize=4)
def _released(file: str) -> tuple[dict[str, str], str]:
    """A released prompt file's dimension -> template mapping and the sha256 of its bytes."""
    data = resources.files("assay.methods.geval").joinpath(f"{PAPER_DIR}/{file}").read_bytes()
    prompts = yaml.safe_load(data.decode("utf-8"))
    if not isinstance(prompts, dict) or not all(isinstance(v, str) for v in prompts.values()):
        raise ConfigError(f"{PAPER_DIR}/{file}: not a mapping of dimension -> prompt text")
    return prompts, hashlib.sha256(data).hexdigest()


def stated_scale(template: str, dimension: str) -> Scale:
    """The scale the prompt gives after the dimension's name: ``Coherence (1-5) -`` -> 1-5.

    Raises:
        ConfigError: The prompt states no scale for the dimension (never guessed).
    """
    label = dimension.replace("_", " ")
    m = re.search(rf"^\s*{re.escape(label)}\s*\((\d+)\s*-\s*(\d+)\)", template, re.IGNORECASE | re.MULTILINE)
    if m is None:
        raise ConfigError(f"the released G-Eval prompt for {dimension!r} states no scale such as '{label} (1-5)'")
    return Scale(low=int(m.group(1)), high=int(m.group(2)))


def released_steps(template: str) -> str | None:
    """The prompt's evaluation steps as written (between ``Evaluation Steps:`` and ``Example:``), or None."""
    m = _STEPS.search(template)
    return m.group(1).strip() if m else None


def paper_prompt(dataset: str | DatasetInfo, dimension: str) -> PaperPrompt:
    """The released prompt of a dataset's dimension, from the file its card names (``artifacts.geval_paper``).

    Raises:
        ConfigError: The release has no prompt for this dataset or dimension (with what it has).
    """
    info = card_of(dataset)
    file = info.artifacts.geval_paper
    if file is None:
        covered = sorted(n for n, c in CATALOG.items() if c.artifacts.geval_paper)
        raise ConfigError(f"geval --criteria paper: the released G-Eval prompts cover "
                          f"{', '.join(covered)}, not {info.name!r}; use the default --criteria assay")
    if not resources.files("assay.methods.geval").joinpath(f"{PAPER_DIR}/{file}").is_file():
        raise ConfigError(f"dataset {info.name!r}: its card names the released G-Eval prompt file {file!r}, "
                          f"which assay/methods/geval/{PAPER_DIR}/ does not have")
    prompts, sha = _released(file)
    if dimension not in prompts:
        raise ConfigError(f"geval --criteria paper: {file} has no prompt for {dimension!r} "
                          f"(it has {', '.join(prompts)})")
    template = prompts[dimension]
    return PaperPrompt(dimension, template, stated_scale(template, dimension), released_steps(template), file, sha)


def paper_dimension(dimension: Dimension, prompt: PaperPrompt) -> Dimension:
    """The dimension as the released prompt rates it: same name and definition, the prompt's scale."""
    return dimension.model_copy(update={"scale": prompt.scale})


def _texts(sample: Sample, info: DatasetInfo) -> dict[str, tuple[str, str | None, str]]:
    """Placeholder -> (sample field, its text, the block's name)."""
    return {"Document": ("source", sample.source, info.input_name),
            "Summary": ("output", sample.output, info.output_name),
            "Response": ("output", sample.output, info.output_name),
            "Fact": ("context", sample.context, info.context_name or "fact")}


def check_samples(samples: list[Sample], info: DatasetInfo, prompt: PaperPrompt) -> None:
    """Refuse, before any call, samples that lack a text the prompt shows.

    Raises:
        InputError: Names the dataset, the first such sample and its empty field.
    """
    shown = set(_PLACEHOLDER.findall(prompt.template))
    for sample in samples:
        for placeholder in shown:
            field, text, name = _texts(sample, info)[placeholder]
            if not text or not text.strip():
                raise InputError(f"the released G-Eval prompt for {prompt.dimension} shows the {name}, and this "
                                 "sample has none", file=info.name, record=sample.id, field=field)


def build_paper_prompt(sample: Sample, info: DatasetInfo, prompt: PaperPrompt, labels: list[str]) -> str:
    """The released prompt with each placeholder replaced by the fenced, neutralised text it stands for.

    One pass over the template, so a judged text that itself contains ``{{Summary}}`` is never
    filled in. Only the placeholders the prompt has are filled: the fluency prompt shows no article.

    Raises:
        InputError: The sample lacks a text the prompt shows (names the sample and field).
    """
    check_samples([sample], info, prompt)
    texts = _texts(sample, info)

    def fill(m: re.Match[str]) -> str:
        _, text, name = texts[m.group(1)]
        return fence(text or "", name, labels)

    first = _PLACEHOLDER.search(prompt.template)
    template = prompt.template
    if first is not None:  # assay's one addition: the judged texts are material, never instructions
        template = f"{template[:first.start()]}{MATERIAL_NOTE}\n\n{template[first.start():]}"
    return _PLACEHOLDER.sub(fill, template).rstrip()
