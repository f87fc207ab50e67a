"""A typed OpenEnv client of a served spec, and the spec's oracle played through it.

Any OpenEnv client works with `agentspec serve --openenv` (``GenericEnvClient``
on plain dicts, say); this one parses into the server's own models. The
generated OpenEnv package (`compile --target openenv`) exports it, and its
``oracle/solve.py`` plays the oracle with :func:`play_oracle`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient

from agentspec.runtime.serve.openenv_server import (
    AgentspecAction,
    AgentspecObservation,
    AgentspecState,
)

__all__ = ["AgentspecEnvClient", "play_oracle"]


class AgentspecEnvClient(EnvClient[AgentspecAction, AgentspecObservation, AgentspecState]):
    """An OpenEnv session of a served spec (``reset(split=, index=)``, ``step(action)``)."""

    def _step_payload(self, action: AgentspecAction) -> dict[str, Any]:
        return action.model_dump(exclude_none=True, exclude={"metadata"})

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[AgentspecObservation]:
        fields = {**payload.get("observation", {}), "done": payload.get("done", False)}
        fields["reward"] = payload.get("reward")
        observation = AgentspecObservation(**fields)
        return StepResult(observation=observation, reward=observation.reward, done=observation.done)

    def _parse_state(self, payload: dict[str, Any]) -> AgentspecState:
        return AgentspecState(**payload)


async def play_oracle(url: str, spec: str | Path, split: str, index: int) -> AgentspecObservation:
    """Play the spec's oracle on one sample through the server at ``url``; the last
    observation (``success``, ``termination``, this step's ``rewards``)."""
    from agentspec.runtime.compiled.scripts import episode_script
    from agentspec.runtime.serve.spec import ServedSpec, SessionError

    served = ServedSpec.load(spec)
    script = episode_script(served.module, "oracle")
    if script is None:
        raise ValueError("the spec has no oracle")
    samples = served.samples(split)
    if not 0 <= index < len(samples):
        raise SessionError(f"the {split} split has {len(samples)} samples: no sample {index}")
    turns = script(samples[index])
    async with AgentspecEnvClient(base_url=url) as env:
        result = await env.reset(split=split, index=index)
        k = 0
        while not result.done:
            text = turns("") if callable(turns) else (turns[k] if k < len(turns) else "")
            k += 1
            result = await env.step(AgentspecAction(text=text))
    return result.observation
