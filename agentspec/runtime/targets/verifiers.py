"""`agentspec compile SPEC --target verifiers -o DIR`: the spec as a verifiers v1 environment.

Writes an installable package ``DIR`` (``pyproject.toml``, the module
``NAME_vf/`` with the spec inside, and beside it the local files the spec reads
at run time, all package data: :mod:`agentspec.compiler.package_files`) exporting exactly one
``Taskset`` (the spec's samples: ``--env.taskset.split``,
``--env.taskset.limit``) and one ``Env``,
whose ``run`` plays the episode with the harness's agent as the policy:
each reply is one ``act`` of an :class:`~agentspec.runtime.serve.session.EpisodeSession`,
each observation the next user turn. Every declared reward component is
recorded on its own (``trace.record_reward``), the episode's ``success`` and
``steps`` as metrics, the ending and the per-step rewards in ``trace.info``.

verifiers 0.4 pins ``mcp==2.0.0``, which agentspec's ``[mcp]`` cannot share:
the package lives in a venv of its own (docs/verifiers.md).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from agentspec.compiler.emit import py_comment
from agentspec.compiler.package_files import (
    copy_spec_files,
    package_data,
    package_folders,
)
from agentspec.runtime.serve.spec import ServedSpec
from agentspec.runtime.targets import TargetRequest, Written
from agentspec.runtime.targets.dependency import agentspec_requirement

__all__ = ["write_verifiers_target"]


def write_verifiers_target(spec_path: Path, out: Path) -> list[Path]:
    spec = ServedSpec.unplayed(spec_path)
    package = f"{spec.name.replace('-', '_')}_vf"
    module_dir = out / package
    module_dir.mkdir(parents=True, exist_ok=True)
    init = module_dir / "__init__.py"
    copied = copy_spec_files(spec_path, module_dir, reserved=[init], exclude=[out])
    spec_copy = module_dir / spec_path.name
    if spec_copy.resolve() != spec_path.resolve():
        shutil.copyfile(spec_path, spec_copy)
    cls = "".join(part.capitalize() for part in spec.name.replace("-", "_").split("_"))
    packages = [package, *(f"{package}.{d}" for d in package_folders(module_dir, copied))]
    data = [spec_path.name, *package_data(module_dir, copied)]
    pyproject = PYPROJECT.format(
        name=spec.name,
        package=package,
        packages=json.dumps(packages),
        data=json.dumps(data),
        agentspec=json.dumps(agentspec_requirement()),
    )
    files = {
        out / "pyproject.toml": pyproject,
        init: MODULE.format(
            name=spec.name, spec=spec_path.name, spec_doc=py_comment(spec_path.name), cls=cls
        ),
        out / "README.md": README.format(name=spec.name, package=package),
    }
    for path, text in files.items():
        path.write_text(text, encoding="utf-8")
    return [spec_copy, *copied, *files]


PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "{package}"
version = "0.1.0"
description = "The agentspec spec `{name}` as a verifiers v1 environment"
requires-python = ">=3.11"
dependencies = ["verifiers>=0.4,<0.5", {agentspec}]

[tool.setuptools]
packages = {packages}

[tool.setuptools.package-data]
"{package}" = {data}
"""

README = """\
# {package}: the agentspec spec `{name}` for verifiers

Written by `agentspec compile --target verifiers`. Install it beside verifiers 0.4 and
agentspec, then run it with `vf-eval --env.taskset.id {package} ...` (see agentspec's
docs/verifiers.md).
"""

MODULE = '''"""The agentspec spec `{name}` as a verifiers v1 taskset and env.

Written by `agentspec compile --target verifiers`; the spec is `{spec_doc}` beside this file.
"""

from collections.abc import Iterator
from pathlib import Path

import verifiers.v1 as vf
from pydantic import Field, field_validator

from agentspec.core.json_value import json_value
from agentspec.runtime.serve.session import EpisodeSession, first_turn
from agentspec.runtime.serve.spec import ServedSpec

SPEC = Path(__file__).resolve().parent / {spec!r}
_SERVED: list[ServedSpec] = []


def served() -> ServedSpec:
    """The spec, loaded once per process."""
    if not _SERVED:
        _SERVED.append(ServedSpec.load(SPEC))
    return _SERVED[0]


class {cls}Config(vf.TasksetConfig):
    split: str = "train"
    """The spec's split the tasks come from."""
    limit: int | None = Field(None, ge=1)
    """At most this many tasks (the split's first)."""

    @field_validator("split")
    @classmethod
    def _known_split(cls, split: str) -> str:
        """An unknown split is a config error, said before any task loads."""
        splits = served().splits()
        if split not in splits:
            raise ValueError(f"unknown split {{split!r}}; splits: {{', '.join(splits)}}")
        return split


class {cls}Data(vf.TaskData):
    sample: dict
    """The spec's sample, which the env starts the episode on."""


class {cls}Task(vf.Task[{cls}Data, vf.State, vf.TaskConfig]):
    pass


class {cls}EnvConfig(vf.EnvConfig):
    player: vf.AgentConfig = vf.AgentConfig()


class {cls}Env(vf.Env[{cls}EnvConfig]):
    async def run(self, task, agents):
        session = EpisodeSession(served())
        turn = await session.start(sample=task.data.sample)
        async with agents.player.interaction(task) as interaction:
            segment = await interaction.turn()
            while not turn.done and not segment.terminated:
                turn = await session.act(segment.last_reply or "")
                if turn.done:
                    break
                segment = await interaction.turn(turn.observation or "")
            # The steps played, read before `close` (which drops the episode): when the
            # agent stops first, the rewards of the steps it played still count.
            steps = list(session.trajectory.steps) if session.trajectory is not None else []
            if not turn.done:  # the agent stopped first: the episode ends without it
                await session.close()
            trace = interaction.trace
            totals = dict.fromkeys(served().reward_names, 0.0)
            for step in steps:
                for reward_name, value in step.rewards.items():
                    totals[reward_name] = totals.get(reward_name, 0.0) + value
            weights = served().reward_weights
            for reward_name, value in totals.items():
                trace.record_reward(reward_name, value, weights.get(reward_name, 1.0))
            success = getattr(turn, "success", None)
            trace.record_metrics({{"success": float(bool(success)), "steps": float(len(steps))}})
            trace.info["agentspec_termination"] = getattr(turn, "termination", "agent_stopped")
            trace.info["agentspec_step_rewards"] = [
                {{**dict.fromkeys(totals, 0.0), **step.rewards}} for step in steps
            ]


class {cls}Taskset(vf.Taskset[{cls}Task, {cls}Config]):
    def load(self) -> Iterator[{cls}Task]:
        spec = served()
        samples = spec.samples(self.config.split)
        if self.config.limit is not None:
            samples = samples[: self.config.limit]
        for sample in samples:
            first = first_turn(spec, sample)
            system = next((m["content"] for m in first.messages if m["role"] == "system"), None)
            if system and first.tool_instructions:
                system = f"{{system}}\\n\\n{{first.tool_instructions}}"
            prompt = [m for m in first.messages if m["role"] != "system"]
            yield {cls}Task(
                {cls}Data(
                    id=first.sample_id,
                    name=f"{name}/{{first.sample_id}}",
                    prompt=prompt,
                    system_prompt=system,
                    sample=json_value(sample),
                ),
                self.config.task,
            )


__all__ = ["{cls}Env", "{cls}Taskset"]
'''


def write(request: TargetRequest) -> Written:
    return Written(write_verifiers_target(request.spec, request.out))
