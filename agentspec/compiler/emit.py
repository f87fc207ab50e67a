"""Emission: a `ModuleModel` → formatted Python source, plus the manifest.

Jinja2 renders `templates/module.py.j2`; the imports are computed from the
names the body uses (so a spec without data does not import the data
loader); `ruff format` makes the layout canonical. The same spec always
gives the same bytes.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from functools import cache
from typing import Any

from agentspec.compiler.lower import ModuleModel

# name used in the body → the import that provides it
_IMPORTS: dict[str, str] = {
    "dataclasses": "import dataclasses",
    "Path": "from pathlib import Path",
    "Iterator": "from collections.abc import Iterator",
    "Any": "from typing import Any",
    "ClassVar": "from typing import ClassVar",
    "AgentEnvLoop": "from agentspec.runtime import AgentEnvLoop",
    "ChatTemplate": "from agentspec.runtime import ChatTemplate",
    "LoopConfig": "from agentspec.runtime import LoopConfig",
    "Policy": "from agentspec.runtime import Policy",
    "SamplingParams": "from agentspec.runtime import SamplingParams",
    "Tokenizer": "from agentspec.runtime import Tokenizer",
    "make_context_policy": "from agentspec.runtime import make_context_policy",
    "RewardComponent": "from agentspec.runtime.spec_env import RewardComponent",
    "Scope": "from agentspec.runtime.spec_env import Scope",
    "OracleStep": "from agentspec.runtime.oracle import OracleStep",
    "oracle_turns": "from agentspec.runtime.oracle import oracle_turns",
    "SpecAdapterEnv": "from agentspec.runtime.spec_env import SpecAdapterEnv",
    "SpecTool": "from agentspec.runtime.spec_env import SpecTool",
    "SpecToolEnv": "from agentspec.runtime.spec_env import SpecToolEnv",
    "template": "from agentspec.runtime.spec_env import template",
    "make_adapter": "from agentspec.stdlib.adapters import make_adapter",
    "load_source": "from agentspec.stdlib.data import load_samples as load_source",
    "fn": "from agentspec.stdlib.functions import fn",
    "UserFunctions": "from agentspec.stdlib.user import UserFunctions",
}


def _py(value: Any) -> str:
    """A Python literal for a YAML/JSON value: `repr`, the only way user data enters code."""
    return repr(value)


def _py_comment(value: Any) -> str:
    """Text safe inside a comment or a docstring: one line, no quotes or backslashes."""
    text = " ".join(str(value).split())
    return text.replace("\\", "/").replace('"""', "'''")


def _py_docstring(value: Any) -> str:
    """A docstring statement; falls back to a plain string literal for odd text."""
    text = " ".join(str(value).split())
    if '"' in text or "\\" in text or not text:
        return repr(text)
    return f'"""{text}"""'


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
    env.filters.update(py=_py, py_comment=_py_comment, py_docstring=_py_docstring)
    return env


def _imports(body: str) -> str:
    used = [name for name in _IMPORTS if re.search(rf"(?<![\w.]){re.escape(name)}\b", body)]
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


def render_module(model: ModuleModel) -> str:
    """The generated module's source, formatted."""
    module_template = _environment().get_template("module.py.j2")
    body = module_template.render(m=model, imports="")
    source = module_template.render(m=model, imports=_imports(body))
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
        "spec": {"name": model.spec_name, "path": model.spec_path, "sha256": model.spec_sha256},
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
