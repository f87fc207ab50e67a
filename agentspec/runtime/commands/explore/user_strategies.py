"""Explore's strategies for a spec with a rule-based user (`user:`).

The user is part of the environment: explore plays against it like against
the tools. Besides every other strategy, on each oracle sample it plays the
agents a dialogue task must not pay: one that never asks (the oracle's tool
calls alone, then a closing message), one that promises without acting (the
oracle's messages alone), and one that stops talking once it has acted (the
oracle's turns up to its last call). Any of them succeeding is then a
finding of the detectors like any other strategy's (success without the
work, reward without success).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentspec.runtime.commands.explore.unguided import Search

__all__ = ["CLOSING", "user_strategies", "user_variants"]

CLOSING = "It is done. Is there anything else?"
"""The message an agent that never asks ends with, so a user whose guards read
only the state can answer it."""


def user_variants(turns: list[str], is_call: Any) -> list[tuple[str, list[str]]]:
    """(origin, turns) of each dialogue strategy over the oracle's `turns`;
    `is_call(text)` tells a turn with tool calls from a message to the user."""
    calls = [t for t in turns if is_call(t)]
    messages = [t for t in turns if not is_call(t)]
    last_call = max((i for i, t in enumerate(turns) if is_call(t)), default=-1)
    variants = []
    if calls and messages:
        variants.append(("an agent that never asks the user", [*calls, CLOSING]))
        variants.append(("an agent that promises without acting", messages))
    if 0 <= last_call < len(turns) - 1:
        variants.append(("an agent that stops talking once it has acted", turns[: last_call + 1]))
    return variants


def user_strategies(search: Search, checked: Any, keep: int = 0) -> None:
    """Play the dialogue strategies on every oracle sample (a spec with a
    rule-based user only: a model user's replies are not the spec's to search)."""
    user = checked.spec.user
    if user is None or user.model is not None or search.space.adapter:
        return
    jobs = []
    for index, facts in sorted(search.facts.items()):
        turns = list(facts.oracle.turns)
        for origin, variant in user_variants(turns, lambda t: bool(search.space.calls_of(t))):
            jobs.append(search.job(index, variant, origin))
    search.driver.play(search.spare(jobs, keep))
