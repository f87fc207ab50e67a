"""`environment: {adapter: openenv, config: {url: ...}}`: a running OpenEnv server as a
spec's environment.

Each episode opens its own OpenEnv session (a WebSocket) with OpenEnv's own
``GenericEnvClient``: ``reset`` with the spec's reset arguments (fixed ones in
``reset``, per-sample ones in ``reset_from_sample``: reset argument → sample
field), then one ``step`` per model response, the response (stripped) sent as the
action's ``action_field``. The observation shown to the model is its
``observation_field`` (else the first text field OpenEnv environments use:
``text``, ``observation``, ``message``, ``echoed_message``, ``prompt``; else the
observation as JSON).

The environment's reward reaches the spec as ``env.reward`` (this step's) and
``env.total_reward``, so a reward component names it::

    rewards:
      task: {on: step, value: env.reward}

``env.done`` ends the episode; ``env.observation`` is the whole observation.
Config: ``url`` (required), ``action_field`` (default ``text``),
``observation_field``, ``reset``, ``reset_from_sample``, ``timeout_s``, and
``capacity`` (default 1, OpenEnv's own default of ``max_concurrent_envs``): the
most sessions this process holds open on the server at once. Episodes beyond it
wait for a session to close, so a server of capacity 1 plays them one after
another instead of refusing all but one; a server that refuses a session all the
same is an error that names the setting.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

from agentspec.stdlib.adapters import EnvironmentAdapter, register_adapter

TEXT_FIELDS = ("text", "observation", "message", "echoed_message", "prompt", "content")


class OpenEnvAdapter(EnvironmentAdapter):
    """One OpenEnv session per episode, text in, text out."""

    def __init__(
        self,
        url: str,
        action_field: str = "text",
        observation_field: str | None = None,
        reset: Mapping[str, Any] | None = None,
        reset_from_sample: Mapping[str, str] | None = None,
        timeout_s: float = 60.0,
        capacity: int = 1,
    ) -> None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ValueError(f"the openenv adapter's url must be http(s)://HOST:PORT, not {url!r}")
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
            raise ValueError(
                f"the openenv adapter's capacity must be an integer >= 1, not {capacity!r}"
            )
        self.capacity = capacity
        self._slot: asyncio.Semaphore | None = None
        self.url = url
        self.action_field = action_field
        self.observation_field = observation_field
        self.reset_arguments = dict(reset or {})
        self.sample_arguments = dict(reset_from_sample or {})
        self.timeout_s = timeout_s
        self.client: Any = None
        self.info: dict[str, Any] = {}

    async def reset(self, sample: Mapping[str, Any]) -> str:
        from openenv.core.generic_client import GenericEnvClient

        await self.close()
        arguments = dict(self.reset_arguments)
        for argument, field in self.sample_arguments.items():
            if field not in sample:
                raise KeyError(f"reset_from_sample: the sample has no field {field!r}")
            arguments[argument] = sample[field]
        self._slot = _sessions(self.url, self.capacity)
        await self._slot.acquire()
        try:
            self.client = GenericEnvClient(base_url=self.url, message_timeout_s=self.timeout_s)
            await self.client.connect()
            result = await self.client.reset(**arguments)
        except Exception as exc:
            await self.close()
            raise self._refused(exc) from None
        self.info = {"reward": 0.0, "total_reward": 0.0, "done": bool(result.done)}
        return self._seen(result)

    async def step(self, command: str) -> str:
        if self.client is None:
            raise RuntimeError("the OpenEnv session is not open (reset first)")
        result = await self.client.step({self.action_field: command})
        reward = float(result.reward or 0.0)
        self.info = {
            "reward": reward,
            "total_reward": self.info.get("total_reward", 0.0) + reward,
            "done": bool(result.done),
        }
        return self._seen(result)

    def _seen(self, result: Any) -> str:
        observation = result.observation if isinstance(result.observation, Mapping) else {}
        self.info["observation"] = dict(observation)
        return observation_text(observation, self.observation_field)

    def _refused(self, exc: Exception) -> Exception:
        """The error of a session the server would not open, naming `capacity`."""
        return RuntimeError(
            f"the OpenEnv server at {self.url} did not open a session"
            f" ({type(exc).__name__}: {exc or 'connection closed'}); this process holds at most"
            f" {self.capacity} at once (environment.config.capacity): set it to the server's"
            " max_concurrent_envs, and check that the server is running"
        )

    async def close(self) -> None:
        client, self.client = self.client, None
        slot, self._slot = self._slot, None
        try:
            if client is not None:
                await client.close()
        finally:
            if slot is not None:
                slot.release()


_SLOTS: dict[tuple[str, int, int], asyncio.Semaphore] = {}


def _sessions(url: str, capacity: int) -> asyncio.Semaphore:
    """The sessions this process may hold on ``url``, shared by its episodes (per event
    loop: a semaphore belongs to the loop it waits on)."""
    key = (url, capacity, id(asyncio.get_running_loop()))
    if key not in _SLOTS:
        _SLOTS[key] = asyncio.Semaphore(capacity)
    return _SLOTS[key]


def observation_text(observation: Mapping[str, Any], field: str | None = None) -> str:
    """What the model reads of an OpenEnv observation (see the module's docstring)."""
    if field is not None:
        value = observation.get(field)
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    for name in TEXT_FIELDS:
        value = observation.get(name)
        if isinstance(value, str) and value:
            return value
    messages = observation.get("messages")
    if isinstance(messages, list) and messages and isinstance(messages[-1], Mapping):
        # an agentspec server's first turn: its task, and how to write its tool calls
        task = str(messages[-1].get("content", ""))
        instructions = observation.get("tool_instructions")
        return (
            f"{task}\n\n{instructions}" if isinstance(instructions, str) and instructions else task
        )
    return json.dumps(dict(observation), ensure_ascii=False, sort_keys=True, default=str)


@register_adapter("openenv")
def openenv_adapter(name: str = "openenv", **config: Any) -> OpenEnvAdapter:
    """`adapter: openenv` with its `config` (see the module's docstring)."""
    return OpenEnvAdapter(**config)
