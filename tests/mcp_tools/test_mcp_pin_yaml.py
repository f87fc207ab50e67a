"""`agentspec mcp pin` writes whatever a server says as YAML that loads back to the same
values: control characters, line separators, keys YAML would read as null or true, numbers
YAML 1.1 would read as text. (A description with U+0080 made the spec an E101; a tool named
`null` became a YAML null key.)"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from agentspec.cli import app
from agentspec.core.source import SourceFile
from agentspec.runtime.mcp.pin import PinError, _rewrite, pinned_text, yaml_value
from agentspec.spec.yaml_loader import load_yaml

runner = CliRunner()

ODD_DESCRIPTION = (
    "C1 control \x80 and \x9f, NEL \x85, line\u2028and paragraph\u2029separators,"
    ' DEL \x7f, BOM \ufeff, NUL \x00, tab\t, quote " and backslash \\, emoji 😀.'
)
ODD_SERVER = f"""
from mcp.server.mcpserver import MCPServer

server = MCPServer("odd")


@server.tool(name="null", description={ODD_DESCRIPTION!r})
def null_tool(x: float = 1e-05) -> str:
    return "0"


@server.tool(name="yes", description="Named like a YAML 1.1 boolean.")
def yes_tool() -> str:
    return "1"


server.run()
"""


def _spec(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "odd_server.py").write_text(ODD_SERVER)
    spec = folder / "odd.yaml"
    spec.write_text(
        textwrap.dedent(
            """\
            agentspec: 1
            name: odd
            prompt: {user: hi}
            mcp:
              odd:
                command: [python, odd_server.py]
            rewards:
              r: {on: final, value: 1.0}
            """
        )
    )
    return spec


def _loaded_pins(spec: Path, server: str) -> Any:
    data, _, diagnostics = load_yaml(SourceFile(str(spec), spec.read_text(encoding="utf-8")))
    assert not [d for d in diagnostics if d.is_error], diagnostics
    return data["mcp"][server]["tools"]


def test_pinned_server_text_loads_back_as_the_server_wrote_it(tmp_path: Path) -> None:
    spec = _spec(tmp_path / "task")
    result = runner.invoke(app, ["mcp", "pin", str(spec)])
    assert result.exit_code == 0, result.output
    pins = _loaded_pins(spec, "odd")
    assert list(pins) == ["null", "yes"]  # names, not YAML's null and true
    assert pins["null"]["description"] == ODD_DESCRIPTION
    assert pins["null"]["parameters"]["properties"]["x"]["default"] == 1e-05  # not "1e-05"
    assert runner.invoke(app, ["validate", str(spec)]).exit_code == 0
    check = runner.invoke(app, ["mcp", "pin", "--check", str(spec)])
    assert check.exit_code == 0 and "up to date" in check.output


def test_a_flow_style_server_is_rewritten_as_loadable_yaml_too(tmp_path: Path) -> None:
    spec = _spec(tmp_path / "task")
    spec.write_text(
        spec.read_text().replace(
            "  odd:\n    command: [python, odd_server.py]\n",
            "  odd: {command: [python, odd_server.py]}\n",
        )
    )
    result = runner.invoke(app, ["mcp", "pin", str(spec)])
    assert result.exit_code == 0, result.output
    assert _loaded_pins(spec, "odd")["null"]["description"] == ODD_DESCRIPTION


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(
    name=st.text(min_size=1),
    description=st.text(st.characters(exclude_categories=())),  # surrogates, controls too
    parameters=st.dictionaries(st.text(), json_values, max_size=4),
)
def test_any_pin_loads_back_to_the_same_values(
    name: str, description: str, parameters: dict[str, Any]
) -> None:
    pins = {"odd": {name: {"description": description, "parameters": parameters}}}
    for text in (
        "mcp:\n  odd:\n    command: [x]\n",  # block style: a `tools:` block is added
        "mcp:\n  odd: {command: [x]}\n",  # flow style: the server is one mapping
    ):
        new = _rewrite(text, yaml.compose(text), pins)
        data, _, diagnostics = load_yaml(SourceFile("t.yaml", new))
        assert not [d for d in diagnostics if d.is_error], (new, diagnostics)
        assert data["mcp"]["odd"]["tools"] == pins["odd"]


@pytest.mark.parametrize("number", [float("inf"), float("-inf"), float("nan")])
def test_a_non_finite_number_cannot_be_pinned(number: float) -> None:
    with pytest.raises(PinError, match="not a finite number"):
        yaml_value({"default": number})


def test_yaml_values_are_json_where_json_can_say_it() -> None:
    value = {"a": [1, 2.5, None, True], "b": "plain é"}
    assert json.loads(yaml_value(value)) == value
    assert pinned_text("x\u2028y") == '"x\\u2028y"'
