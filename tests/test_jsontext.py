"""assay.common.jsontext.loads: the HTTP judge's reader of answers reads what json.loads reads, the same way."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.common.jsontext import loads

_SCALARS = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
            | st.text(alphabet=st.characters(blacklist_categories=("Cs",))))
_VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=4)
                       | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(value=_VALUES, ascii_only=st.booleans(), as_bytes=st.booleans())
def test_reads_every_json_text_as_json_loads_does(value, ascii_only: bool, as_bytes: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)
    data = text.encode() if as_bytes else text
    got = loads(data)
    assert got == json.loads(data)
    assert json.dumps(got) == json.dumps(json.loads(data))  # float values bit for bit, key order


@pytest.mark.parametrize("data", [b'\xef\xbb\xbf{"a": 1}', '"\\ud800 lone"', b'{"a": 1, "a": 2}', b"1e400",
                                  b"123456789012345678901234567890", b'{"x": NaN, "y": -Infinity}'])
def test_what_pydantic_core_reads_otherwise_or_refuses_is_read_as_json_loads_reads_it(data) -> None:
    got, want = loads(data), json.loads(data)
    if isinstance(want, dict) and "x" in want:
        assert math.isnan(got["x"]) and got["y"] == want["y"] == -math.inf
    else:
        assert got == want


@pytest.mark.parametrize("data", [b"<html>busy</html>", b'{"choices": [', b"\xff\xfe\x00", b""])
def test_what_json_loads_refuses_is_refused(data) -> None:
    with pytest.raises(ValueError):
        json.loads(data)
    with pytest.raises(ValueError):
        loads(data)
