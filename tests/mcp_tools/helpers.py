"""What the MCP tests share: copies of a test spec with its server, and ways to play it."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def copy_spec(tmp_path: Path, name: str, server: str, *edits: tuple[str, str]) -> Path:
    """``HERE/name`` with its ``server`` script and data in a fresh folder, with text
    ``edits`` (old, new) applied to the spec."""
    folder = tmp_path / "task"
    folder.mkdir(parents=True)
    shutil.copy(HERE / server, folder)
    shutil.copytree(HERE / "data", folder / "data")
    text = (HERE / name).read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    spec = folder / name
    spec.write_text(text)
    return spec


def play(spec: Path, turns: list[str]) -> Any:
    """One scripted episode on the first sample, tokenised by the task tokenizer (as
    `agentspec run` does)."""
    from agentspec.compiler.build import import_spec
    from agentspec.runtime import ScriptedPolicy, run_episodes
    from agentspec.runtime.compiled.task_text import task_bpe_tokenizer

    module = import_spec(spec)
    samples = module.load_samples()
    tok = task_bpe_tokenizer(module, samples, spec.parent / "tokenizer")
    flow = module.FLOW_CLASS(ScriptedPolicy(turns, tok), tok)
    (traj,) = asyncio.run(run_episodes(flow, samples[:1]))
    return traj


def play_oracle(spec: Path, first: int = 0, count: int | None = None) -> list[Any]:
    """The oracle's episodes on samples ``first`` to ``first + count``, all at once."""
    from agentspec.compiler.build import import_spec
    from agentspec.runtime.commands.run import rollout
    from agentspec.runtime.compiled.task_text import task_bpe_tokenizer

    module = import_spec(spec)
    samples = module.load_samples()
    tok = task_bpe_tokenizer(module, samples, spec.parent / "tokenizer")
    chosen = samples[first : None if count is None else first + count]
    return asyncio.run(rollout(module, chosen, "oracle", task_tokenizer=tok))


def call(name: str, **arguments: Any) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


def tool_errors(traj: Any) -> list[tuple[str, str]]:
    return [(e.code, e.message) for s in traj.steps for e in s.events if e.kind == "tool_error"]


def call_outcomes(traj: Any) -> list[str]:
    """Per tool call of the episode, in order: "ok" or its error code."""
    return [
        "ok" if e.kind == "tool" else e.code
        for s in traj.steps
        for e in s.events
        if e.kind in ("tool", "tool_error")
    ]
