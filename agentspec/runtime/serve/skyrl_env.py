"""A spec as a SkyRL-Gym text environment (``skyrl_gym.envs.base_text_env.BaseTextEnv``).

SkyRL's generator makes one environment per rollout with
``skyrl_gym.make(env_class, env_config=..., extras=row)``, asks ``init(prompt)`` for
the first prompt, then calls ``step(model_text)`` per turn until ``done``; each
step's ``reward`` is that turn's (SkyRL keeps per-turn rewards). Here every call
plays the spec through an :class:`~agentspec.runtime.serve.session.EpisodeSession`,
the code `run` and `train` use:

- ``init`` starts the episode on the row's sample (``extras["split"]`` and
  ``extras["index"]``, as :func:`skyrl_rows` writes them) and returns the spec's own
  first messages: the dataset's ``prompt`` is only what SkyRL tokenises for length;
- ``step`` plays the model's text as one agentspec step (its tool calls in the
  spec's format), returns the observation as the next user message, the step's
  weighted reward and whether the episode ended; ``metadata`` carries the step's
  named rewards, and at the end the termination and success.

The context policy is the spec's for what the environment reads (state,
observations), but SkyRL keeps and sends the whole conversation itself: a spec
whose context policy drops or rewrites earlier turns (``sliding_window``,
``summary``) is trained on what SkyRL sends, not on that view (docs/skyrl.md).

Requires the ``skyrl-gym`` package (imported here, never by agentspec itself).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput

from agentspec.runtime.serve.session import End, SyncEpisodeSession, first_turn
from agentspec.runtime.serve.trl_env import served

__all__ = ["SpecTextEnv", "skyrl_rows"]


class SpecTextEnv(BaseTextEnv):
    """One SkyRL rollout of a spec's episode.

    Args:
        env_config: ``{"spec": PATH}``, the spec to play (or ``extras["spec"]``).
        extras: the dataset row: ``split`` and ``index`` choose the sample.
    """

    def __init__(
        self, env_config: Mapping[str, Any] | None = None, extras: Mapping[str, Any] | None = None
    ) -> None:
        super().__init__()
        extras = dict(extras or {})
        spec_path = dict(env_config or {}).get("spec") or extras.get("spec")
        if not isinstance(spec_path, str | Path):
            raise ValueError("SpecTextEnv needs the spec's path: env_config={'spec': PATH}")
        self.spec = served(spec_path)
        self.session = SyncEpisodeSession(self.spec)
        self.split = str(extras.get("split") or self.spec.default_split)
        self.index = int(extras.get("index", 0))
        self.max_turns = int(self.spec.module.ENV_CLASS.max_steps)

    def init(self, prompt: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        turn = self.session.start(split=self.split, index=self.index)
        return list(turn.messages), {"sample_id": turn.sample_id}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        self.turns += 1
        turn = self.session.act(action)
        metadata: dict[str, Any] = {"rewards": dict(turn.rewards)}
        if isinstance(turn, End):
            metadata.update(termination=turn.termination, success=turn.success)
            observations = []
        else:
            observations = [{"role": "user", "content": turn.observation or ""}]
        return BaseTextEnvStepOutput(
            observations=observations, reward=turn.reward, done=turn.done, metadata=metadata
        )

    def close(self) -> None:
        self.session.close()


def skyrl_rows(
    spec_path: str | Path, env_class: str, split: str | None = None, limit: int | None = None
) -> list[dict[str, Any]]:
    """SkyRL dataset rows of a spec: ``prompt`` (the first messages), ``env_class`` (the
    id the environment is registered under), and ``split``/``index``, which reach
    :class:`SpecTextEnv` as ``extras``."""
    spec = served(spec_path)
    split = split or spec.default_split
    return [
        {
            "prompt": first_turn(spec, sample).messages,
            "env_class": env_class,
            "split": split,
            "index": index,
        }
        for index, sample in enumerate(spec.samples(split)[:limit])
    ]
