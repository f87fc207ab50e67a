"""A small name → object registry: estimators, losses, algorithm presets, tool-call formats, context policies.

The shape follows verl's ``register_adv_est`` / ``register_policy_loss``: a
decorator adds an entry, a second entry under the same name is an error, and an
unknown name raises an error that lists the valid names (plus a "did you mean"
suggestion) instead of silently falling back to a default.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

__all__ = ["DuplicateNameError", "Registry", "RegistryError", "UnknownNameError"]

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., object])
C = TypeVar("C", bound=type)


class RegistryError(ValueError):
    """Base class of registry errors."""


class DuplicateNameError(RegistryError):
    """A second entry was registered under a name that is already taken."""


class UnknownNameError(RegistryError):
    """A name was looked up that no entry was registered under.

    Attributes:
        kind: what the registry holds, e.g. ``"advantage estimator"``.
        name: the name that was asked for.
        valid: the registered names, sorted.
    """

    def __init__(self, kind: str, name: str, valid: tuple[str, ...]) -> None:
        self.kind = kind
        self.name = name
        self.valid = valid
        message = f"unknown {kind} {name!r}; valid names: {', '.join(valid) or '(none)'}"
        close = difflib.get_close_matches(name, valid, n=1)
        if close:
            message += f". Did you mean {close[0]!r}?"
        super().__init__(message)


class Registry(Generic[T]):
    """Named entries of one kind.

    Args:
        kind: what the entries are, used in error messages
            (``"advantage estimator"``, ``"policy loss"``).
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, T] = {}

    def add(self, name: str, entry: T) -> T:
        """Register ``entry`` under ``name``; raise :class:`DuplicateNameError` if taken."""
        if not name or not isinstance(name, str):
            raise RegistryError(f"{self.kind} name must be a non-empty string, got {name!r}")
        if name in self._entries:
            raise DuplicateNameError(f"{self.kind} {name!r} is already registered")
        self._entries[name] = entry
        return entry

    def register(self, name: str) -> Callable[[F], F]:
        """Decorator form of :meth:`add` for registries whose entries are the decorated objects."""

        def decorator(obj: F) -> F:
            self.add(name, obj)  # type: ignore[arg-type]
            return obj

        return decorator

    def register_class(self, name: str) -> Callable[[C], C]:
        """Decorator for registries of classes that know their own name: adds the
        class and sets its ``name`` attribute (tool-call formats, context policies)."""

        def decorator(cls: C) -> C:
            self.add(name, cls)  # type: ignore[arg-type]
            cls.name = name  # type: ignore[attr-defined]
            return cls

        return decorator

    def get(self, name: str) -> T:
        """Return the entry registered under ``name``; raise :class:`UnknownNameError` if none."""
        try:
            return self._entries[name]
        except KeyError:
            raise UnknownNameError(self.kind, name, self.names()) from None

    def names(self) -> tuple[str, ...]:
        """The registered names, sorted."""
        return tuple(sorted(self._entries))

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, names={list(self.names())})"
