"""Named sets of method options (``preset: paper``) applied the same way for every method."""

from __future__ import annotations

from typing import Any


def apply_preset(values: Any, presets: dict[str, dict[str, Any]], method: str) -> Any:
    """Fill in a preset's options; an option given with another value than the preset's is an error.

    Refusing the conflict (rather than letting either win) keeps ``preset: paper`` in a manifest
    meaning exactly the paper's settings. Values are compared as given or as numbers, so that the
    command line's ``--temperature 1`` agrees with a preset's ``1.0``.
    """
    if not isinstance(values, dict) or values.get("preset") is None:
        return values
    name = values["preset"]
    if name not in presets:
        raise ValueError(f"unknown {method} preset {name!r} (known: {', '.join(presets)})")
    out = dict(values)
    for key, value in presets[name].items():
        given = out.get(key)
        same = str(given) == str(value) or (_number(given) is not None and _number(given) == _number(value))
        if given is not None and not same:
            raise ValueError(f"preset {name!r} sets {key}={value}; drop --{key.replace('_', '-')} {given} "
                             "or the preset")
        out[key] = value
    return out


def _number(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None
