"""Functions a spec can declare as `impl: stdlib:NAME`.

Each entry is a factory: called once with the declaration's `config`, it
returns the function expressions call. The modules that register entries
are imported on the first lookup (`lookup`), so importing `agentspec.stdlib`
stays cheap.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

LIBRARY: dict[str, Callable[..., Callable[..., Any]]] = {}

# Modules whose import registers library functions (imported on first lookup).
LIBRARY_MODULES = (
    "agentspec.stdlib.metrics",
    "agentspec.stdlib.retrieval",
    "agentspec.stdlib.webshop",
    "agentspec.stdlib.papers",
)


def register(
    name: str,
) -> Callable[[Callable[..., Callable[..., Any]]], Callable[..., Callable[..., Any]]]:
    def decorate(factory: Callable[..., Callable[..., Any]]) -> Callable[..., Callable[..., Any]]:
        if name in LIBRARY:
            raise ValueError(f"stdlib function {name!r} is already registered")
        LIBRARY[name] = factory
        return factory

    return decorate


def load_library() -> dict[str, Callable[..., Callable[..., Any]]]:
    """Every registered factory, after importing the library's modules."""
    for module in LIBRARY_MODULES:
        importlib.import_module(module)
    return LIBRARY


def lookup(name: str) -> Callable[..., Callable[..., Any]] | None:
    """The factory registered as `name`, or None."""
    if name not in LIBRARY:
        load_library()
    return LIBRARY.get(name)
