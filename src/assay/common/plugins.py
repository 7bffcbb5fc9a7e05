"""Registries of named classes (methods, judges): built-ins and entry-point plugins, imported on first use."""

from __future__ import annotations

import importlib
import importlib.util
from importlib.metadata import entry_points

from assay.errors import ConfigError, did_you_mean


class Registry:
    """Names mapped to ``"module:Class"`` targets: the built-ins, then the plugins of one entry-point group.

    Built-ins are read from a dict (so that an uninstalled checkout works) and declared exactly like plugins;
    a plugin never shadows a built-in. Nothing is imported until a name is asked for, so a broken plugin
    only breaks its own name.

    Args:
        group: The entry-point group, e.g. ``assay.methods``.
        kind: What a name is, for error messages ("method", "judge backend").
        builtin: The built-in names and targets.
        base: The class every target must subclass.
    """

    def __init__(self, group: str, kind: str, builtin: dict[str, str], base: type) -> None:
        self.group, self.kind, self.builtin, self.base = group, kind, builtin, base

    def targets(self) -> dict[str, str]:
        """Every registered name and its target whose module can be found here."""
        targets = dict(self.builtin)
        for ep in entry_points(group=self.group):
            targets.setdefault(ep.name, ep.value)
        return {n: t for n, t in targets.items() if _findable(t.split(":")[0])}

    def names(self) -> list[str]:
        """The names that can be loaded here, sorted."""
        return sorted(self.targets())

    def check(self, name: str) -> None:
        """Raise a did-you-mean ConfigError unless ``name`` is registered (imports nothing)."""
        self._target(name)

    def _target(self, name: str) -> str:
        """``name``'s target (one scan of the entry points), or the did-you-mean error."""
        targets = self.targets()
        if name not in targets:
            raise ConfigError(f"unknown {self.kind} {name!r}." + did_you_mean(name, list(targets)))
        return targets[name]

    def get(self, name: str) -> type:
        """The class registered under ``name``.

        Raises:
            ConfigError: Unknown name (with a did-you-mean hint), or a target that is not a subclass of ``base``.
        """
        target = self._target(name)
        module, _, attr = target.partition(":")
        cls = getattr(importlib.import_module(module), attr, None)
        if not (isinstance(cls, type) and issubclass(cls, self.base)):
            raise ConfigError(f"{self.kind} {name!r}: {target} is not an assay {self.base.__name__}")
        return cls


def _findable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package that is missing or broken
        return False
