"""Finding a checklist by name or path: the YAML files shipped with assay and the papers' released pools."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from assay.datasets.catalog import CATALOG, DatasetInfo, card_of
from assay.errors import ConfigError, did_you_mean
from assay.methods.checkeval.checklist import Checklist, parse_checklist
from assay.methods.checkeval.paper import PAPER_DIR, PAPER_POOLS, paper_checklist


def shipped_dir() -> Path:
    """Where the package's checklists live."""
    return Path(str(resources.files("assay.methods.checkeval") / "checklists"))


def shipped_checklists() -> list[str]:
    """Names of the checklists shipped with assay: assay's YAML files and the papers' released pools."""
    return sorted([p.stem for p in shipped_dir().glob("*.yaml")] + list(PAPER_POOLS))


def checklist_path(spec: str) -> Path:
    """The file behind a checklist name or path (for a paper pool, the folder of its released files).

    Raises:
        ConfigError: Neither an existing file nor a shipped name.
    """
    path = Path(spec).expanduser()
    if path.is_file():
        return path
    if spec in PAPER_POOLS:
        return Path(str(resources.files("assay.methods.checkeval") / PAPER_DIR / PAPER_POOLS[spec].folder))
    if spec in shipped_checklists():
        return shipped_dir() / f"{spec}.yaml"
    if spec.endswith((".yaml", ".yml")) or "/" in spec:
        raise ConfigError(f"checklist file {spec} not found")
    raise ConfigError(f"unknown checklist {spec!r}." + did_you_mean(spec, shipped_checklists()))


def load_checklist(spec: str) -> Checklist:
    """Load a checklist by shipped name (``summeval``, ``topical-chat``, ``qags``, the released pools
    ``summeval-paper`` and ``topical-chat-paper``) or file path."""
    if spec in PAPER_POOLS and not Path(spec).expanduser().is_file():
        return paper_checklist(spec)
    path = checklist_path(spec)
    return parse_checklist(path.read_text(encoding="utf-8"), str(path))


def default_checklist(dataset: str | DatasetInfo, *, paper: bool = False) -> str:
    """The checklist a dataset's card names (``artifacts.checkeval``), used when none is named.

    Args:
        dataset: The dataset's card, or the name of a shipped one.
        paper: The authors' released question pool instead (``artifacts.checkeval_paper``, CheckEval's
            paper preset).

    Raises:
        ConfigError: The card names none; the message says how to make one.
    """
    info = card_of(dataset)
    if paper:
        if info.artifacts.checkeval_paper is None:
            pools = sorted(n for n, c in CATALOG.items() if c.artifacts.checkeval_paper)
            raise ConfigError(f"checkeval --preset paper: the authors released question pools for "
                              f"{', '.join(pools)}, not {info.name!r}; pass --checklist")
        return info.artifacts.checkeval_paper
    if info.artifacts.checkeval is None:
        raise ConfigError(f"no checklist is shipped for dataset {info.name!r}: pass --checklist FILE "
                          f"(write one, or build one with `assay checklist build`, or name one in the dataset's "
                          f"card as `artifacts: {{checkeval: FILE}}`). Shipped: {', '.join(shipped_checklists())}.")
    return info.artifacts.checkeval
