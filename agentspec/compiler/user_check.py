"""Checking the `user:` section: its sites (instructions, each reply's `when`
and `say`, `otherwise`) and the checks of a rule-based user as a whole.

Functions of the checker (`checker` is the running check, a `CheckState`):
`user_sites` yields the sites the checker's visitor types like every other;
`unreachable_replies` warns (W811) of a rule that can never reply, and
`user_never_ends` (W812) of a user that never ends the conversation.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from agentspec.compiler.scopes import Site
from agentspec.compiler.types import BOOL, INT, STR, ListOf, Type

if TYPE_CHECKING:
    from agentspec.compiler.check_state import CheckState
    from agentspec.spec.user import UserSpec

__all__ = ["USER_FIELDS", "user_sites"]

USER_FIELDS: dict[str, Type] = {
    "ended": BOOL,  # the user ended the conversation (a reply with `end: true`, or the stop signal)
    "said": STR,  # the user's last reply ("" before the first)
    "turns": INT,  # how many times the user replied
    "replied": ListOf(STR),  # the names of the rules that replied, in order
}

_REPLY_ROOTS = ("state", "sample", "step", "action", "user")


def user_sites(checker: CheckState) -> Iterator[Site]:
    """The user's instructions, each reply's `when` and `say`, and `otherwise`."""
    user = checker.spec.user
    if user is None:
        return
    yield Site(("user", "instructions"), "template", checker.make_scope("sample"))
    for name, reply in user.replies.items():
        if isinstance(reply.when, str):
            yield Site(
                ("user", "replies", name, "when"), "condition", checker.make_scope(*_REPLY_ROOTS)
            )
        yield Site(("user", "replies", name, "say"), "template", checker.make_scope(*_REPLY_ROOTS))
    if user.otherwise is not None:
        yield Site(("user", "otherwise"), "template", checker.make_scope(*_REPLY_ROOTS))
    unreachable_replies(checker, user)
    user_never_ends(checker, user)


def _always(when: bool | str) -> bool | None:
    """True or False for a `when` that is decided as written, else None."""
    if isinstance(when, bool):
        return when
    text = when.strip()
    return {"true": True, "True": True, "false": False, "False": False}.get(text)


def unreachable_replies(checker: CheckState, user: UserSpec) -> None:
    """W811 for a rule after one whose `when` always holds, or whose own never does."""
    shadow: str | None = None
    for name, reply in user.replies.items():
        span = checker.map.key_span(("user", "replies", name))
        if shadow is not None:
            checker.error(
                "W811",
                f"user reply '{name}' can never be chosen: '{shadow}' before it always holds",
                span,
                hint=f"move '{name}' above '{shadow}', or give '{shadow}' a `when`",
            )
        elif _always(reply.when) is False:
            checker.error(
                "W811",
                f"user reply '{name}' can never be chosen: its `when` is false",
                span,
                hint="remove the rule, or give it the condition it should reply under",
            )
        if shadow is None and _always(reply.when) is True:
            shadow = name
    if shadow is not None and user.otherwise is not None:
        checker.error(
            "W811",
            f"`otherwise` can never reply: '{shadow}' always holds",
            checker.map.key_span(("user", "otherwise")),
            hint=f"give '{shadow}' a `when`, or remove `otherwise`",
        )


def user_never_ends(checker: CheckState, user: UserSpec) -> None:
    """W812 for a rule-based user with no way to end the conversation: every
    episode would run to `max_steps` unless the state ends it."""
    if user.model is not None or user.otherwise is None:
        return  # a model user ends by its stop signal; without `otherwise`, silence ends
    texts = [reply.say for reply in user.replies.values()] + [user.otherwise]
    if any(reply.end for reply in user.replies.values()) or any(user.stop in t for t in texts):
        return
    checker.error(
        "W812",
        "the user never ends the conversation: no reply has `end: true` or says the stop signal",
        checker.map.key_span(("user", "replies")),
        hint="add `end: true` to the reply that closes the dialogue (e.g. the user's thanks)",
    )
