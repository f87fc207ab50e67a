"""Functions a spec can declare as `impl: stdlib:NAME`.

Each entry is a factory: called once with the declaration's `config`, it
returns the function expressions call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

LIBRARY: dict[str, Callable[..., Callable[..., Any]]] = {}


def register(
    name: str,
) -> Callable[[Callable[..., Callable[..., Any]]], Callable[..., Callable[..., Any]]]:
    def decorate(factory: Callable[..., Callable[..., Any]]) -> Callable[..., Callable[..., Any]]:
        if name in LIBRARY:
            raise ValueError(f"stdlib function {name!r} is already registered")
        LIBRARY[name] = factory
        return factory

    return decorate
