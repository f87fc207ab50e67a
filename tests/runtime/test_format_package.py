"""The formats package: its public names, a cheap import, and small modules and functions."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import agentspec.formats as formats
from agentspec.core.registry import DuplicateNameError, UnknownNameError
from agentspec.formats import FORMATS, available_formats, get_format, register_format
from agentspec.formats.base import ToolCallFormat

PACKAGE = Path(formats.__file__).parent


def test_public_names_keep_working() -> None:
    for name in formats.__all__:
        assert hasattr(formats, name), name
    assert available_formats() == ["bracket", "harmony", "hermes", "json", "react"]
    assert list(FORMATS.names()) == available_formats()
    assert get_format("hermes").name == "hermes"
    fmt = get_format("react")
    assert get_format(fmt) is fmt


def test_duplicate_and_unknown_names_are_errors() -> None:
    class Hermes2(ToolCallFormat):
        def parse_answer(self, text: str, tools: Any = None) -> formats.ParsedResponse:
            return formats.ParsedResponse(final_answer=text)

        def render_result(self, result: Any) -> str:
            return str(result.text)

        def usage(self) -> str:
            return ""

    with pytest.raises(DuplicateNameError):
        register_format("hermes")(Hermes2)
    assert FORMATS.get("hermes") is not Hermes2
    with pytest.raises(UnknownNameError, match="Did you mean 'hermes'"):
        get_format("hermez")


def test_importing_the_formats_is_cheap() -> None:
    code = (
        "import sys, agentspec.formats\n"
        "heavy = [m for m in ('torch', 'numpy', 'transformers', 'agentspec.runtime.episode.tools', "
        "'jsonschema') if m in sys.modules]\n"
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_modules_and_functions_stay_small() -> None:
    for path in sorted(PACKAGE.glob("*.py")):
        source = path.read_text(encoding="utf-8")
        assert source.count("\n") < 500, f"{path.name} has over 500 lines"
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                assert length <= 60, f"{path.name}: {node.name} has {length} lines"


def test_the_spec_language_accepts_every_registered_format() -> None:
    from pydantic import ValidationError

    from agentspec.spec.model import EpisodeSpec

    for name in available_formats():
        assert EpisodeSpec.model_validate({"tool_format": name}).tool_format == name
    with pytest.raises(ValidationError):
        EpisodeSpec.model_validate({"tool_format": "hermez"})
