"""User functions declared in a spec's `functions` section, loaded lazily.

`impl: module.path:attribute` names the user's callable; with a `config`,
the attribute is a factory called once with the config as keyword arguments
(say, to build a search index) that returns the callable. `stdlib:NAME`
names a function of agentspec's library (`agentspec.stdlib.library`).
Nothing is imported until the first call, so compiling a spec never runs
user code; `spec_code_refused()` makes that a guarantee for a whole command
(`compile`'s package targets): every import of the spec's code goes through
`import_target`, every MCP server it starts through `check_spec_code_allowed`.

User modules are found in the spec's own folder first (`bind_spec_dir` puts
it at the front of `sys.path`, as Python does for a script's folder), then on
`sys.path`: a spec's `unitlib.py` beside it works from any working directory,
without PYTHONPATH. The same holds for every `module:attr` a spec names
(functions, oracle hooks, environment adapters, custom context policies).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

Impl = tuple[str, Mapping[str, Any]]


class FunctionLoadError(ImportError):
    """A declared function that cannot be imported or built."""


def add_import_root(folder: str | Path) -> Path:
    """Put a spec's folder at the front of `sys.path` (once) so its modules import."""
    root = Path(folder).resolve()
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
        importlib.invalidate_caches()
    return root


def bind_spec_dir(module: ModuleType, folder: str | Path) -> None:
    """Tell a generated module where its spec lives: relative data paths and
    user modules resolve against that folder from now on."""
    setattr(module, "SPEC_DIR", add_import_root(folder))  # noqa: B010 (a generated module's global)


def use_shipped_data(folder: str | Path) -> None:
    """Make ``folder`` the data root (`${AGENTSPEC_DATA}`) of this process when it
    exists: a verl run ships the data its spec names there, beside the agent loop, to
    workers that do not see the driver's data folder (docs/verl.md, "Multi-node")."""
    root = Path(folder)
    if root.is_dir():
        os.environ["AGENTSPEC_DATA"] = str(root.resolve())


class SpecCodeRefused(RuntimeError):
    """The spec's own code (a hook, a generator, an MCP server's program) was about to
    run inside `spec_code_refused()`. ``what`` names it (``module:attr`` or the command)."""

    def __init__(self, what: str) -> None:
        super().__init__(f"refused to run the spec's code: {what}")
        self.what = what


_refusals = 0
_refusals_lock = threading.Lock()


@contextlib.contextmanager
def spec_code_refused() -> Iterator[None]:
    """Inside, nothing of the spec's own runs: importing a module outside agentspec
    for the spec, or starting an MCP server's program, raises `SpecCodeRefused`.
    Process-wide (threads the command starts are covered too)."""
    global _refusals
    with _refusals_lock:
        _refusals += 1
    try:
        yield
    finally:
        with _refusals_lock:
            _refusals -= 1


def check_spec_code_allowed(what: str) -> None:
    """Raise `SpecCodeRefused` for ``what`` inside `spec_code_refused()`."""
    if _refusals:
        raise SpecCodeRefused(what)


def import_target(target: str) -> Any:
    """The object a `module.path:attr.sub` names. Raises ImportError (the module)
    or AttributeError (an attribute on the way), and `SpecCodeRefused` for a module
    outside agentspec inside `spec_code_refused()`."""
    module_name, _, attribute = target.partition(":")
    if module_name != "agentspec" and not module_name.startswith("agentspec."):
        check_spec_code_allowed(target)
    found: Any = importlib.import_module(module_name)
    for part in attribute.split(".") if attribute else ():
        found = getattr(found, part)
    return found


def resolve(impl: str, config: Mapping[str, Any]) -> Callable[..., Any]:
    """The callable an `impl` string names (built from `config` if given)."""
    if impl.startswith("stdlib:"):
        from agentspec.stdlib.library import load_library, lookup

        name = impl.removeprefix("stdlib:")
        factory = lookup(name)
        if factory is None:
            known = ", ".join(sorted(load_library())) or "none"
            raise FunctionLoadError(f"unknown stdlib function {name!r}; known: {known}")
        return factory(**config)
    module_name, _, attribute = impl.partition(":")
    try:
        target = import_target(impl)
    except ImportError as exc:
        raise FunctionLoadError(f"cannot import {module_name!r} for {impl!r}: {exc}") from None
    except AttributeError:
        raise FunctionLoadError(f"{module_name!r} has no attribute {attribute!r}") from None
    if not callable(target):
        raise FunctionLoadError(f"{impl!r} is not callable")
    return target(**config) if config else target


class UserFunctions:
    """Attribute access to a spec's functions: `user.search(query, 3)`.

    `spec_dir` returns the spec's folder (the generated module's `SPEC_DIR`,
    read at first call): relative file paths in a `config` resolve against it.
    """

    def __init__(
        self, declared: Mapping[str, Impl], spec_dir: Callable[[], Path | None] | None = None
    ):
        self._declared = dict(declared)
        self._spec_dir = spec_dir
        self._loaded: dict[str, Callable[..., Any]] = {}

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("_") or name not in self._declared:
            raise AttributeError(name)
        return self[name]

    def __getitem__(self, name: str) -> Callable[..., Any]:
        """Any declared name, also those that are not plain attributes (`user["class"]`)."""
        if name not in self._loaded:
            impl, config = self._declared[name]
            base = self._spec_dir() if self._spec_dir is not None else None
            self._loaded[name] = resolve(impl, resolve_config_paths(dict(config), base))
        return self._loaded[name]


def resolve_config_paths(config: dict[str, Any], base_dir: Path | None) -> dict[str, Any]:
    """Relative file paths among `config` values, resolved against the spec's folder.

    A value counts as a path when it names something that exists there (so
    `corpus: data/wiki.jsonl` beside the spec works from any directory);
    `${AGENTSPEC_DATA}` and absolute paths are left to `resolve_path`.
    """
    if base_dir is None:
        return config
    resolved = dict(config)
    for key, value in config.items():
        if isinstance(value, str) and value and not value.startswith(("$", "/", "~")):
            candidate = base_dir / value
            try:
                exists = ("/" in value or "." in value) and candidate.exists()
            except (OSError, ValueError):  # not a path after all
                exists = False
            if exists:
                resolved[key] = str(candidate)
    return resolved
