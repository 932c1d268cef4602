"""jsontext writes what `json.dumps(..., ensure_ascii=False, separators=(",", ":"))` writes."""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pensa.jsontext import dumps

values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner) | st.tuples(inner, inner),
    max_leaves=25,
)


def reference(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


@settings(max_examples=500, deadline=None)
@given(values)
def test_every_value_pensa_prints_is_written_as_json_writes_it(data: Any) -> None:
    assert dumps(data) == reference(data)


def test_every_control_character_and_the_quotes_are_escaped_as_json_escapes_them() -> None:
    text = "".join(chr(i) for i in range(0x80)) + '"\\\u2028\ud800ü'
    assert dumps({text: [text]}) == reference({text: [text]})


class Colour(StrEnum):
    RED = "red"


@pytest.mark.parametrize(
    "data", [1.5, {1: "int key"}, [Colour.RED], {"nested": {"x": float("inf")}}, True]
)
def test_other_types_are_left_to_json(data: Any) -> None:
    assert dumps(data) == reference(data)
