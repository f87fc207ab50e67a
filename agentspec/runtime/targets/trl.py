"""`agentspec compile SPEC --target trl -o DIR`: the spec as a TRL `environment_factory`.

Writes ``DIR/NAME_trl.py`` (and the spec beside it, with the local files it
reads at run time: :mod:`agentspec.compiler.package_files`): a class with one typed,
documented method per spec tool — so that `transformers.utils.get_json_schema`,
which TRL reads tools with, gives the spec's own schema — plus one reward
function per declared component and the spec's samples as TRL dataset rows::

    from calculator_trl import REWARD_FUNCS, REWARD_WEIGHTS, CalculatorEnv, dataset
    GRPOTrainer(model, reward_funcs=REWARD_FUNCS, train_dataset=Dataset.from_list(dataset()),
                environment_factory=CalculatorEnv,
                args=GRPOConfig(reward_weights=REWARD_WEIGHTS, ...))
"""

from __future__ import annotations

import json
import keyword
import shutil
from pathlib import Path
from typing import Any

from agentspec.compiler.emit import py_comment
from agentspec.compiler.package_files import copy_spec_files
from agentspec.runtime.serve.spec import ServedSpec
from agentspec.runtime.targets import TargetRequest, Written

__all__ = ["python_type", "write_trl_target"]

JSON_TYPES = {
    "string": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "object": "dict",
}


def python_type(schema: dict[str, Any]) -> str:
    """The type hint `get_json_schema` reads back as ``schema``'s type."""
    kind = schema.get("type")
    if kind == "array":
        items = schema.get("items")
        return f"list[{python_type(items)}]" if isinstance(items, dict) and items else "list"
    if isinstance(kind, str) and kind in JSON_TYPES:
        return JSON_TYPES[kind]
    return "str"  # a schema without one JSON type: the model writes text


def write_trl_target(spec_path: Path, out: Path) -> list[Path]:
    spec = ServedSpec.unplayed(spec_path)
    out.mkdir(parents=True, exist_ok=True)
    module = out / f"{spec.name.replace('-', '_')}_trl.py"
    # the spec's data and modules beside its copy, where the copy reads them
    copied = copy_spec_files(spec_path, out, reserved=[module])
    spec_copy = out / spec_path.name
    if spec_copy.resolve() != spec_path.resolve():
        shutil.copyfile(spec_path, spec_copy)
    module.write_text(_module(spec, spec_path.name), encoding="utf-8")
    return [spec_copy, *copied, module]


def _class_name(name: str) -> str:
    return "".join(part.capitalize() for part in name.replace("-", "_").split("_")) + "Env"


def _module(spec: ServedSpec, spec_file: str) -> str:
    cls = _class_name(spec.name)
    methods = "\n".join(_method(tool["function"]) for tool in spec.tool_schemas)
    rewards = ", ".join(f"component_reward({name!r})" for name in spec.reward_names)
    weights = ", ".join(repr(w) for w in spec.reward_weights.values())
    return f'''"""TRL `environment_factory` of the agentspec spec `{spec.name}`.

Written by `agentspec compile --target trl`; the spec is `{py_comment(spec_file)}` beside this file.
"""

from pathlib import Path

from agentspec.runtime.serve.trl_env import AgentspecTRLEnv, component_reward, dataset_rows

SPEC = Path(__file__).resolve().parent / {spec_file!r}


class {cls}(AgentspecTRLEnv):
    """One episode of `{spec.name}` per rollout; each tool call is one step."""

    spec_path = SPEC
{methods}

REWARD_FUNCS = [{rewards}]
"""One TRL reward function per reward component of the spec (the episode's total of it)."""

REWARD_WEIGHTS = [{weights}]
"""The components' weights, in `REWARD_FUNCS`' order: `GRPOConfig(reward_weights=...)`."""


def dataset(split: str | None = None, limit: int | None = None) -> list[dict]:
    """The spec's samples as TRL rows: `prompt` and the sample's fields."""
    return dataset_rows(SPEC, split, limit)
'''


def _docstring_body(text: str) -> str:
    """``text`` as the inside of a triple-quoted docstring that reads back as ``text``.

    The spec's words are data: a quote, a backslash, or a line break other than
    ``\\n`` (Python's tokenizer also ends a line at ``\\r``) is escaped, never
    written raw, so no description can close the docstring or start a statement.
    """
    out = []
    for ch in text:
        if ch in '\\"':
            out.append("\\" + ch)
        elif ch != "\n" and not (ch.isprintable() or ch == " "):
            out.append(ch.encode("unicode_escape").decode("ascii"))
        else:
            out.append(ch)
    return "".join(out)


def _method(function: dict[str, Any]) -> str:
    name = function["name"]
    parameters = function.get("parameters", {})
    properties: dict[str, Any] = parameters.get("properties", {})
    required = set(parameters.get("required", []))
    signature, args_doc, passed = ["self"], [], []
    for arg, schema in properties.items():
        safe = f"{arg}_" if keyword.iskeyword(arg) else arg
        hint = python_type(schema)
        signature.append(f"{safe}: {hint}" if arg in required else f"{safe}: {hint} | None = None")
        # transformers wants every argument described: the spec's words, else its name
        described = " ".join(str(schema.get("description") or arg).splitlines())
        if "enum" in schema:  # transformers reads the choices back with json.loads
            described += f" (choices: {json.dumps(schema['enum'], ensure_ascii=False)})"
        args_doc.append(f"            {safe}: {described}")
        passed.append((arg, safe))
    description = str(function.get("description", name)).strip()
    doc = _docstring_body(
        description + ("\n\n        Args:\n" + "\n".join(args_doc) if args_doc else "")
    )
    call = ", ".join(f"{arg!r}: {safe}" for arg, safe in passed)
    return f'''
    def {name}({", ".join(signature)}) -> str:
        """{doc}
        """
        arguments = {{{call}}}
        return self._call_tool({name!r}, {{k: v for k, v in arguments.items() if v is not None}})
'''


def write(request: TargetRequest) -> Written:
    return Written(write_trl_target(request.spec, request.out))
