"""Emission: a `ModuleModel` → formatted Python source, plus the manifest.

Jinja2 renders `templates/module.py.j2`; the imports are computed from the
names the body uses (so a spec without data does not import the data
loader); `ruff format` makes the layout canonical. The same spec always
gives the same bytes.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from functools import cache
from typing import Any

from agentspec.compiler.literals import py_literal
from agentspec.compiler.lower import ModuleModel
from agentspec.compiler.names import IMPORTS as _IMPORTS


def _py(value: Any) -> str:
    """A Python literal for a YAML/JSON value, the only way user data enters code."""
    return py_literal(value)


def py_comment(value: Any) -> str:
    """Text safe inside a comment or a docstring: one printable line, no quotes or backslashes."""
    text = " ".join(str(value).split())
    text = "".join(ch if ch.isprintable() else "?" for ch in text)
    return text.replace("\\", "/").replace('"""', "'''")


def _py_docstring(value: Any) -> str:
    """A docstring statement; falls back to a plain string literal for odd text
    (quotes, backslashes, and characters no source line may hold, such as NUL)."""
    text = " ".join(str(value).split())
    if '"' in text or "\\" in text or not text or not text.isprintable():
        return repr(text)
    return f'"""{text}"""'


def _as_bool(code: str) -> str:
    """`bool(code)`, or the constant itself (`bool(True)` is ruff's UP018)."""
    return code if code in ("True", "False") else f"bool({code})"


@cache
def _environment() -> Any:
    from jinja2 import Environment, PackageLoader, StrictUndefined

    env = Environment(
        loader=PackageLoader("agentspec.compiler", "templates"),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters.update(py=_py, py_comment=py_comment, py_docstring=_py_docstring, as_bool=_as_bool)
    return env


def _names_used(body: str) -> set[str]:
    """The global names the body's code reads (never words inside its strings)."""
    return {node.id for node in ast.walk(ast.parse(body)) if isinstance(node, ast.Name)}


def _imports(body: str) -> str:
    names = _names_used(body)
    used = [name for name in _IMPORTS if name in names]
    plain = sorted({_IMPORTS[n] for n in used if _IMPORTS[n].startswith("import ")})
    grouped: dict[str, list[str]] = {}
    for name in used:
        line = _IMPORTS[name]
        if line.startswith("from "):
            module, _, imported = line.removeprefix("from ").partition(" import ")
            grouped.setdefault(module, []).append(imported)
    stdlib = [m for m in grouped if not m.startswith("agentspec")]
    ours = [m for m in grouped if m.startswith("agentspec")]
    lines = plain + [f"from {m} import {', '.join(sorted(grouped[m]))}" for m in sorted(stdlib)]
    return (
        "\n".join(lines)
        + "\n\n"
        + "\n".join(f"from {m} import {', '.join(grouped[m])}" for m in sorted(ours))
    )


def _compares_with_bool(body: str) -> bool:
    """Whether the code has `x == True`-style comparisons (ruff's E712)."""
    for node in ast.walk(ast.parse(body)):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        for op, left, right in zip(node.ops, sides[:-1], sides[1:], strict=True):
            if isinstance(op, (ast.Eq, ast.NotEq)) and any(
                isinstance(side, ast.Constant) and isinstance(side.value, bool)
                for side in (left, right)
            ):
                return True
    return False


def render_module(model: ModuleModel) -> str:
    """The generated module's source, formatted."""
    module_template = _environment().get_template("module.py.j2")
    body = module_template.render(m=model, imports="", exempt_e712=False)
    source = module_template.render(
        m=model, imports=_imports(body), exempt_e712=_compares_with_bool(body)
    )
    return format_source(source)


def format_source(source: str) -> str:
    """Sort the imports and `ruff format` the source: one canonical layout."""
    ruff = [sys.executable, "-m", "ruff"]
    settings = ["--isolated", "--line-length", "100", "--target-version", "py310"]
    steps = [
        [*ruff, "check", *settings, "--select", "I", "--fix", "--quiet", "--exit-zero", "-"],
        [*ruff, "format", *settings, "-"],
    ]
    for command in steps:
        done = subprocess.run(command, input=source, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"generated code did not format (a bug in agentspec): {done.stderr}")
        source = done.stdout
    return source


def render_manifest(model: ModuleModel, module_file: str) -> str:
    manifest = {
        "agentspec_version": model.version,
        "spec": {"name": model.spec_name, "file": model.spec_file, "sha256": model.spec_sha256},
        "module": module_file,
        "classes": {
            "env": model.env_class,
            "flow": model.flow_class,
            "tools": {t.spec_name: t.class_name for t in model.tools},
        },
        "layout": model.layout,
        "context_policy": model.context_policy,
        "tool_format": model.tool_format,
    }
    return json.dumps(manifest, indent=2, sort_keys=True) + "\n"
