"""External environment adapters for a spec's `environment` section.

`make_adapter(name, config)` builds one: a registered name (`textworld`, …)
or `module.path:attribute` of the user's own `EnvironmentAdapter` class.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

from agentspec.stdlib.user import import_target


class EnvironmentAdapter:
    """An external environment: text in, text out, plus facts (`env.NAME`).

    Adapters implement `reset(sample) -> str` and `step(command) -> str`, and
    keep `info` (a dict exposed to expressions as `env`, e.g. `score`, `won`,
    `done`) up to date.
    """

    info: dict[str, Any]

    async def reset(self, sample: Mapping[str, Any]) -> str:
        raise NotImplementedError

    async def step(self, command: str) -> str:
        raise NotImplementedError

    async def close(self) -> None:
        return None

    def walkthrough(self, sample: Mapping[str, Any]) -> list[str]:
        """Commands that solve the sample's game (the `walkthrough` oracle), if known."""
        raise NotImplementedError


ADAPTERS: dict[str, Callable[..., EnvironmentAdapter]] = {}

# Modules whose import registers adapters (imported when a name is not found).
ADAPTER_MODULES = ("agentspec.stdlib.textworld", "agentspec.stdlib.openenv_env")


def register_adapter(
    name: str,
) -> Callable[[Callable[..., EnvironmentAdapter]], Callable[..., EnvironmentAdapter]]:
    def decorate(factory: Callable[..., EnvironmentAdapter]) -> Callable[..., EnvironmentAdapter]:
        if name in ADAPTERS:
            raise ValueError(f"adapter {name!r} is already registered")
        ADAPTERS[name] = factory
        return factory

    return decorate


def make_adapter(name: str, config: Mapping[str, Any]) -> EnvironmentAdapter:
    """An adapter instance for `environment.adapter` with its `config`."""
    if ":" in name:
        adapter = import_target(name)(**config)
    else:
        if name not in ADAPTERS:
            for module in ADAPTER_MODULES:
                importlib.import_module(module)
        if name not in ADAPTERS:
            known = ", ".join(sorted(ADAPTERS)) or "none installed"
            raise ValueError(f"unknown environment adapter {name!r}; known: {known}")
        adapter = ADAPTERS[name](name=name, **config)
    if not isinstance(adapter, EnvironmentAdapter):
        raise TypeError(f"{name!r} did not build an EnvironmentAdapter")
    return adapter
