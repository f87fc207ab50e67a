"""Build a spec from YAML text, import its generated module, play scripted episodes."""

from __future__ import annotations

import asyncio
import importlib.util
import itertools
import sys
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from agentspec.compiler.build import compile_spec
from agentspec.runtime import AgentEnv, ScriptedPolicy, Trajectory
from agentspec.runtime.text.byte_tokenizer import ByteTokenizer

_counter = itertools.count()

HEAD = """\
agentspec: 1
name: t
data: {source: "jsonl:none.jsonl", fields: {q: str, n: int, items: "list[str]"}}
prompt: {user: "{{ sample.q }}"}
"""


def build(body: str, tmp_path: Path, head: str = HEAD) -> ModuleType:
    """Compile a spec (HEAD + body) and import the generated module."""
    path = tmp_path / f"spec{next(_counter)}.yaml"
    path.write_text(head + textwrap.dedent(body), encoding="utf-8")
    return import_source(compile_spec(path).source)


def import_source(source: str) -> ModuleType:
    name = f"generated_test_{next(_counter)}"
    spec = importlib.util.spec_from_loader(name, loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)
    return module


def play(
    module: ModuleType, actions: Sequence[str], sample: Mapping[str, Any] | None = None
) -> tuple[Trajectory, AgentEnv]:
    """One episode with scripted turns and a byte tokenizer; returns it and its env."""
    tokenizer = ByteTokenizer()
    flow = module.FLOW_CLASS(ScriptedPolicy(list(actions), tokenizer), tokenizer)
    flow.config = type(flow.config)(
        **{**flow.config.__dict__, "sampling": type(flow.config.sampling)(max_new_tokens=4000)}
    )
    envs: list[AgentEnv] = []

    def factory() -> AgentEnv:
        envs.append(module.ENV_CLASS())
        return envs[-1]

    flow.env_factory = factory
    sample = dict(sample or {"q": "question", "n": 3, "items": ["a", "b"]})
    traj = asyncio.run(flow.run(sample, sample_id="s0", group_id="s0"))
    return traj, envs[0]


def call(tool: str, **arguments: Any) -> str:
    import json

    return f"<tool_call>{json.dumps({'name': tool, 'arguments': arguments})}</tool_call>"
