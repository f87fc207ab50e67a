"""Which optional install a command needs, and the one line that says so when it is missing.

`pip install agentspec` is torch-free (validate, compile, run with the oracle...);
a command that needs more checks for it before starting (:func:`require`), and
:func:`missing_install` names the install of any module of an extra that a
command still fails to import (the entry point's last resort).
"""

from __future__ import annotations

import importlib.util

from agentspec.cli.app import fail

__all__ = ["EXTRAS", "missing_install", "require"]

EXTRAS: dict[str, tuple[str, ...]] = {
    "train": ("torch", "transformers", "safetensors", "gguf", "matplotlib", "tensorboard"),
    "verl": ("verl", "ray", "hydra", "omegaconf", "pandas", "pyarrow"),
    "mcp": ("mcp",),
    "openenv": ("openenv",),
    "recipes": ("bm25s", "Stemmer", "thefuzz", "textworld"),
}
"""The top-level modules each extra brings (pyproject.toml's optional-dependencies)."""

CHECKED = {"train": ("torch", "transformers"), "verl": ("verl", "ray", "torch")}
"""What :func:`require` looks for: the modules without which the command cannot start."""


def require(command: str, extra: str) -> None:
    """Stop `command` with one line if the modules of `extra` are not installed."""
    missing = [m for m in CHECKED.get(extra, EXTRAS[extra]) if not _installed(m)]
    if missing:
        raise fail(_needs(command, extra, missing[0]))


def missing_install(command: str, module: str | None) -> str | None:
    """The line for a ModuleNotFoundError of `module`, if an extra brings it."""
    root = (module or "").partition(".")[0]
    for extra, modules in EXTRAS.items():
        if root in modules:
            return _needs(command, extra, root)
    return None


def _needs(command: str, extra: str, module: str) -> str:
    return f"{command} needs the {extra} extra: pip install 'agentspec-rl[{extra}]' ({module} is not installed)"


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a broken or half-installed package
        return False
