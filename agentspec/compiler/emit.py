"""Emission: a `ModuleModel` → formatted Python source, plus the manifest.

Jinja2 renders `templates/module.py.j2`; the imports are computed from the
names the body uses (so a spec without data does not import the data
loader), in isort's order; `ruff format` makes the layout canonical. The same spec always
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
    """`code` as a bool: `bool(code)`, or the code itself where its value is already one
    (a constant, `bool(True)` being ruff's UP018; a comparison, `not`, or `and`/`or` of those)."""
    return code if _is_bool_valued(ast.parse(code, mode="eval").body) else f"bool({code})"


def _is_bool_valued(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, bool)
    if isinstance(node, ast.BoolOp):  # `a and b` is one of its operands
        return all(_is_bool_valued(value) for value in node.values)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return node.func.id in ("eq", "ne")  # how `x == true` is written (expr_writer)
    # A comparison of the JSON values a spec holds (numbers, text, lists, dicts) is a bool.
    return isinstance(node, ast.Compare) or (
        isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)
    )


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


def _member_key(member: str) -> tuple[int, str]:
    """isort's order within one `from` import (ruff's default `order-by-type`):
    constants, then classes, then the rest, each case-insensitively."""
    name = member.split(" as ")[0]
    kind = 0 if name.isupper() and len(name) > 1 else 1 if name[:1].isupper() else 2
    return kind, name.lower()


def _from_lines(grouped: dict[str, list[str]], modules: list[str]) -> list[str]:
    """One `from` line per module, an aliased member on a line of its own after it."""
    lines = []
    for module in sorted(modules, key=str.lower):
        members = sorted(grouped[module], key=_member_key)
        plain = [m for m in members if " as " not in m]
        if plain:
            lines.append(f"from {module} import {', '.join(plain)}")
        lines += [f"from {module} import {m}" for m in members if " as " in m]
    return lines


def _imports(body: str) -> str:
    """The import block of the names ``body`` reads, already in isort's order, so that
    one `ruff format` is the only subprocess a compile runs."""
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
    sections = [plain + _from_lines(grouped, stdlib), _from_lines(grouped, ours)]
    return "\n\n".join("\n".join(lines) for lines in sections if lines)


def render_module(model: ModuleModel) -> str:
    """The generated module's source, formatted."""
    module_template = _environment().get_template("module.py.j2")
    body = module_template.render(m=model, imports="")
    return format_source(module_template.render(m=model, imports=_imports(body)))


def format_source(source: str) -> str:
    """`ruff format` the source: one canonical layout (the imports come sorted)."""
    command = [sys.executable, "-m", "ruff", "format", "--isolated", "--line-length", "100"]
    command += ["--target-version", "py310", "-"]
    done = subprocess.run(command, input=source, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"generated code did not format (a bug in agentspec): {done.stderr}")
    return done.stdout


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
