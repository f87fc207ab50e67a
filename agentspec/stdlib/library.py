"""Functions a spec can declare as `impl: stdlib:NAME`.

Each entry is a factory: called once with the declaration's `config`, it
returns the function expressions call. The modules that register entries
are imported on the first lookup (`lookup`), so importing `agentspec.stdlib`
stays cheap.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

LIBRARY: dict[str, Callable[..., Callable[..., Any]]] = {}


@dataclass(frozen=True)
class CallSignature:
    """What the built function accepts, in the spec's type spelling: `validate`
    checks a declaration's `params` / `returns` against it without building it."""

    params: tuple[str, ...]
    returns: str = "any"
    required: int | None = None  # leading params that must be given (default: all)

    @property
    def min_args(self) -> int:
        return len(self.params) if self.required is None else self.required

    def spelled(self, name: str) -> str:
        shown = [p if i < self.min_args else f"{p} (optional)" for i, p in enumerate(self.params)]
        return f"{name}({', '.join(shown)}) -> {self.returns}"


SIGNATURES: dict[str, CallSignature] = {}

# Modules whose import registers library functions (imported on first lookup).
LIBRARY_MODULES = (
    "agentspec.stdlib.metrics",
    "agentspec.stdlib.retrieval",
    "agentspec.stdlib.webshop",
    "agentspec.stdlib.papers",
)


def register(
    name: str,
    signature: CallSignature | None = None,
) -> Callable[[Callable[..., Callable[..., Any]]], Callable[..., Callable[..., Any]]]:
    """Register a factory: its keyword arguments are the function's `config`
    keys; `signature` describes the function it builds."""

    def decorate(factory: Callable[..., Callable[..., Any]]) -> Callable[..., Callable[..., Any]]:
        if name in LIBRARY:
            raise ValueError(f"stdlib function {name!r} is already registered")
        LIBRARY[name] = factory
        if signature is not None:
            SIGNATURES[name] = signature
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
