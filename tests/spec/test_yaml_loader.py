from __future__ import annotations

import pytest

from agentspec.core.source import SourceFile
from agentspec.spec.yaml_loader import load_yaml

TEXT = """\
a: 1
on: final
b:
  block: |
    state.page ==
      "item"
  folded: >
    one
    two
  quoted: "x + y"
  single: 'it''s z'
"""


def load(text: str):
    return load_yaml(SourceFile("t.yaml", text))


def test_values_and_yaml_12_booleans() -> None:
    value, _, diagnostics = load(TEXT)
    assert diagnostics == []
    assert value["on"] == "final"  # not True, as YAML 1.1 would have it
    assert value["b"]["block"] == 'state.page ==\n  "item"\n'
    assert value["b"]["folded"] == "one two\n"


def test_key_and_value_spans() -> None:
    _, source_map, _ = load(TEXT)
    key = source_map.key_span(("b", "quoted"))
    assert (key.line, key.column) == (10, 3)
    value = source_map.value_span(("b", "quoted"))
    assert (value.line, value.column) == (10, 11)
    # A missing path falls back to its nearest ancestor.
    assert source_map.value_span(("b", "nope")) == source_map.value_span(("b",))


def test_offsets_inside_scalars_map_to_the_file() -> None:
    value, source_map, _ = load(TEXT)
    block = source_map.locator(("b", "block"))
    assert block is not None
    i = value["b"]["block"].index('"item"')
    span = block.span(i, i + 6)
    assert (span.line, span.column, span.end_column) == (6, 7, 13)

    folded = source_map.locator(("b", "folded"))
    assert folded is not None
    span = folded.span(4, 7)  # "two"
    assert (span.line, span.column) == (9, 5)

    quoted = source_map.locator(("b", "quoted"))
    assert quoted is not None
    span = quoted.span(4, 5)  # "y"
    assert (span.line, span.column) == (10, 16)

    single = source_map.locator(("b", "single"))
    assert single is not None
    span = single.span(5, 6)  # "z" after the doubled quote
    assert (span.line, span.column) == (11, 18)


def test_duplicate_keys_are_errors() -> None:
    _, _, diagnostics = load("a: 1\nb: 2\na: 3\n")
    assert [(d.code, d.span.line, d.span.column) for d in diagnostics] == [("E102", 3, 1)]  # type: ignore[union-attr]
    assert diagnostics[0].hint and "line 1" in diagnostics[0].hint


def test_syntax_error_position() -> None:
    value, _, diagnostics = load("a: [1, 2\nb: 3\n")
    assert value is None
    assert diagnostics[0].code == "E101"
    assert diagnostics[0].span is not None and diagnostics[0].span.line == 1


def test_merge_keys() -> None:
    value, _, diagnostics = load("base: &b {x: 1, y: 2}\nc:\n  <<: *b\n  y: 3\n")
    assert diagnostics == []
    assert value["c"] == {"x": 1, "y": 3}


def test_yaml_12_exponents_are_numbers() -> None:
    # YAML 1.1 reads these as text (it wants a dot and a signed exponent).
    value, _, diagnostics = load(
        "a: 1e-4\nb: 1E5\nc: 2.5e3\nd: -3e+2\ne: .5e1\nf: '1e-4'\ng: 1e\nh: e5\n"
    )
    assert diagnostics == []
    assert value == {
        "a": 1e-4, "b": 1e5, "c": 2500.0, "d": -300.0, "e": 5.0, "f": "1e-4", "g": "1e", "h": "e5"
    }  # fmt: skip
    assert all(isinstance(value[k], float) for k in "abcde")


@pytest.mark.parametrize(
    "tagged",
    ["!!int abc", "!!float ''", "!!int '-'", "!!timestamp garbage", "!!bool maybe", "!!int '0b'"],
)
@pytest.mark.parametrize("where", ["value", "key"])
def test_a_tag_its_text_does_not_fit_is_an_error_at_the_scalar(tagged: str, where: str) -> None:
    text = f"a: 1\nb: {tagged}\n" if where == "value" else f"a: 1\n{tagged}: 2\n"
    value, _, diagnostics = load(text)
    assert value is None
    assert [(d.code, d.span.line) for d in diagnostics] == [("E101", 2)]  # type: ignore[union-attr]
    assert "is not a valid !!" in diagnostics[0].message


def test_integers_read_as_yaml_12_does() -> None:
    value, _, diagnostics = load("a: [017, 0o17, 0x1f, -5, +7, 1:30, 1_000, 0b101]\n")
    assert diagnostics == []
    assert value == {"a": [17, 15, 31, -5, 7, "1:30", "1_000", "0b101"]}
    value, _, diagnostics = load("a: [5., .5e2, -.inf, 1_000.5, 1:30.0]\n")
    assert value == {"a": [5.0, 50.0, float("-inf"), "1_000.5", "1:30.0"]}


@pytest.mark.parametrize(
    "tagged", ["!!set {x, y}", "!!python/tuple [1, 2]", "!!omap [{x: 1}]", "!mine [1]"]
)
def test_a_tag_on_a_collection_is_an_error_not_dropped(tagged: str) -> None:
    value, _, diagnostics = load(f"a: 1\nb: {tagged}\n")
    assert value is None
    assert [(d.code, d.span.line) for d in diagnostics] == [("E101", 2)]  # type: ignore[union-attr]
    assert "is not read: write a plain" in diagnostics[0].message
