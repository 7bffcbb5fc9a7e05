"""JSON text written and read for every unit (request bodies, traces, answers): pydantic-core, json where it cannot."""

from __future__ import annotations

import json
from typing import Any

import pydantic_core


def dumps(value: Any, *, ensure_ascii: bool = False) -> str:
    """``value`` as JSON text that ``json.loads`` reads back as ``json.dumps``'s would be read.

    pydantic-core's encoder takes a fifth of ``json.dumps``'s time on a long prompt or a G-Eval trace. It writes
    non-ASCII characters as they are and NaN and infinities as ``json.dumps`` does. What it cannot encode (a lone
    surrogate in a text decoded from broken JSON, an object it does not know) goes to ``json.dumps``, which encodes
    it (a lone surrogate as its ``\\u`` escape where ``ensure_ascii``) or refuses it as it always did.
    """
    try:
        return pydantic_core.to_json(value, inf_nan_mode="constants").decode()
    except pydantic_core.PydanticSerializationError:
        return json.dumps(value, ensure_ascii=ensure_ascii)


def loads(data: bytes | str) -> Any:
    """JSON text read as ``json.loads`` reads it (the same values, the same texts refused).

    pydantic-core's parser takes half ``json.loads``'s time on an answer with its top-20 log-probabilities. What it
    refuses goes to ``json.loads``, which reads what it accepts that pydantic-core does not (a byte-order mark, a
    lone surrogate escape) and refuses the rest.

    Raises:
        ValueError: Not JSON (``json.JSONDecodeError``, ``UnicodeDecodeError``).
    """
    try:
        return pydantic_core.from_json(data)
    except ValueError:
        return json.loads(data)
