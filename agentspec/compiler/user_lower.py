"""Lowering of the `user:` section: the models the module template renders as
`USER_RULES` (a `runtime.compiled.user.UserRules`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agentspec.compiler.ir import CheckResult
from agentspec.compiler.lower_sections import location

if TYPE_CHECKING:
    from agentspec.compiler.expr_writer import ExpressionWriter

__all__ = ["UserModel", "UserRuleModel", "user_model"]


@dataclass
class UserRuleModel:
    name: str
    say: str  # the template's source
    when: str | None  # Python over `s`; None: always
    end: bool
    location: str


@dataclass
class UserModel:
    instructions: str
    rules: list[UserRuleModel] = field(default_factory=list)
    otherwise: str | None = None
    model: str | None = None
    temperature: float = 0.0
    max_tokens: int = 128
    seed: int | None = 0
    stop: str = "###STOP###"


def user_model(checked: CheckResult, writer: ExpressionWriter, spec_file: str) -> UserModel | None:
    """The `user:` section in Python spelling, or None for a spec without a user."""
    user = checked.spec.user
    if user is None:
        return None
    rules = []
    for name, reply in user.replies.items():
        path = ("user", "replies", name, "when")
        if isinstance(reply.when, str):
            when: str | None = writer.write(checked.expressions[path].node)
        else:
            when = None if reply.when else "False"
        where = location(checked, ("user", "replies", name), spec_file)
        rules.append(UserRuleModel(name, reply.say, when, reply.end, where))
    sampling = user.sampling
    return UserModel(
        user.instructions,
        rules,
        user.otherwise,
        user.model,
        sampling.temperature,
        sampling.max_tokens,
        sampling.seed,
        user.stop,
    )
