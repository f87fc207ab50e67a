"""A spec's `context: {policy: custom, custom: module:attr}`.

The target is a `ContextPolicy` subclass (built with the spec's
`max_prompt_tokens` and `overflow`) or a callable `fn(view)` returning the
prompt as token ids or as chat messages (`[{"role": …, "content": …}]`).
What the user's code does wrong — a target of another shape, an import that
fails, a call that returns something else — is an error that names the
spec line and ends the episode at its prompt (`env_error`), as any failure
of an environment does; it never crashes the run. `agentspec validate`
reports the shapes it can see first (E903).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agentspec.runtime.episode.context import ContextPolicy, ContextView, CustomContext

__all__ = ["CustomContextError", "custom_context"]

Built = Sequence[int] | Sequence[Mapping[str, str]]


class CustomContextError(ValueError):
    """The `context.custom` target is not a policy, or its prompt is not one."""


def custom_context(target: str, location: str, **settings: Any) -> ContextPolicy:
    """The context policy `target` names, or one whose every prompt fails with
    the reason it cannot be (so each episode ends with that error, located)."""
    where = f"context.custom ({location}): '{target}'"
    try:
        from agentspec.stdlib.user import import_target

        found = import_target(target)
    except Exception as exc:  # the user's module: any import-time error
        message = f"{where} cannot be loaded: {type(exc).__name__}: {exc}"
        return CustomContext(_failing(message), **settings)
    if isinstance(found, type) and issubclass(found, ContextPolicy):
        try:
            return found(**settings)
        except Exception as exc:
            message = (
                f"{where} cannot be built with {sorted(settings)}: {type(exc).__name__}: {exc}"
            )
            return CustomContext(_failing(message), **settings)
    if isinstance(found, type) or not callable(found):
        shape = (
            "a class, not a ContextPolicy subclass" if isinstance(found, type) else "not callable"
        )
        message = f"{where} is {shape}: it must be a ContextPolicy subclass or a function fn(view)"
        return CustomContext(_failing(message), **settings)
    return CustomContext(_checked(found, where), **settings)


def _failing(message: str) -> Callable[[ContextView], Built]:
    def fail(view: ContextView) -> Built:
        raise CustomContextError(message)

    return fail


def _checked(fn: Callable[[ContextView], Any], where: str) -> Callable[[ContextView], Built]:
    """`fn`, whose result must be token ids or chat messages."""

    def build(view: ContextView) -> Built:
        try:
            out = fn(view)
        except Exception as exc:  # the user's code
            raise CustomContextError(f"{where} failed: {type(exc).__name__}: {exc}") from exc
        problem = _shape_problem(out)
        if problem is not None:
            raise CustomContextError(
                f"{where} returned {problem}; it must return token ids (a list of int) or chat"
                ' messages (a list of {"role": …, "content": …})'
            )
        return list(out)

    return build


def _shape_problem(out: Any) -> str | None:
    if not isinstance(out, (list, tuple)):
        name = type(out).__name__
        return f"{'an' if name[0] in 'aeiou' else 'a'} {name} ({str(out)[:60]!r})"
    if not out:
        return "an empty list"
    if all(isinstance(item, int) and not isinstance(item, bool) for item in out):
        return None
    for item in out:
        fields = isinstance(item, Mapping) and set(item) >= {"role", "content"}
        if not fields or not all(isinstance(item[k], str) for k in ("role", "content")):
            return f"a list holding {type(item).__name__} {str(item)[:60]!r}"
    return None
