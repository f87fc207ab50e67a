"""`agentspec test`'s check of `expect.user`: the simulated user's replies, the
rules that gave them and whether it ended the conversation, read from the
trajectory (each step the user answered holds `info.user`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentspec.core.source import Span
from agentspec.runtime.episode.trajectory import Trajectory
from agentspec.spec.testing import UserExpect
from agentspec.spec.yaml_loader import Path as YamlPath

__all__ = ["user_failures"]


def user_failures(
    expect: UserExpect | None,
    traj: Trajectory,
    where: YamlPath,
    span: Callable[[YamlPath], Span],
    text_problem: Callable[[Any, str | None], str | None],
    failure: Callable[[str, Span], Any],
) -> list[Any]:
    """What the user did that `expect.user` (at `where`) does not allow."""
    if expect is None:
        return []
    heard = [s.info["user"] for s in traj.steps if isinstance(s.info.get("user"), dict)]
    replies = [str(h.get("reply", "")) for h in heard]
    base = (*where, "user")
    failures = []
    for i, wanted in enumerate(expect.replies or []):
        got = replies[i] if i < len(replies) else None
        problem = None if wanted is None else text_problem(wanted, got)
        if problem is not None:
            failures.append(failure(f"user reply {i + 1}: {problem}", span((*base, "replies", i))))
    if expect.replies is not None and len(replies) > len(expect.replies):
        extra = ", ".join(repr(r) for r in replies[len(expect.replies) :])
        message = (
            f"the user replied {len(replies)} times, {len(expect.replies)} expected; then: {extra}"
        )
        failures.append(failure(message, span((*base, "replies"))))
    rules = [str(h.get("rule", "")) for h in heard]
    if expect.rules is not None and rules != expect.rules:
        failures.append(
            failure(f"user rules: expected {expect.rules}, got {rules}", span((*base, "rules")))
        )
    ended = bool(heard and heard[-1].get("ended"))
    if expect.ended is not None and ended != expect.ended:
        failures.append(
            failure(f"user ended: expected {expect.ended}, got {ended}", span((*base, "ended")))
        )
    return failures
