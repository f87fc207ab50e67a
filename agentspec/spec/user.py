"""The `user:` section: a simulated user the agent talks with.

A user has private instructions (a template over the sample: what a model
user is prompted with, and the documentation of a rule-based one) and
replies either by rules — templates chosen by guards over the dialogue and
the state, the first whose `when` holds — or by a model (any policy agentspec
runs, prompted with the instructions and the dialogue as the user sees it).
The opening message is `prompt.user`. See docs/users.md.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from agentspec.spec.base import Expression, Identifier, Section, Template

__all__ = ["STOP_SIGNAL", "UserReplySpec", "UserSamplingSpec", "UserSpec"]

STOP_SIGNAL = "###STOP###"
"""τ-bench's end signal: a user reply that contains it ends the conversation."""


class UserReplySpec(Section):
    """One rule of a rule-based user: when it holds, the user says `say`."""

    when: Expression | bool = Field(
        True,
        description="The rule applies when this holds (over `action` — the agent's message, `action.text` —, `state`, `sample`, `step`, `constants`, `user`). The first rule in written order that holds gives the reply.",
    )
    say: Template = Field(
        description="Template of the reply (over `action`, `state`, `sample`, `step`, `constants`, `user`)."
    )
    end: bool = Field(
        False,
        description="This reply ends the conversation (`user.ended` becomes true; the episode ends after the step).",
    )


class UserSamplingSpec(Section):
    """How a model user samples its replies (its own settings, never the agent's)."""

    temperature: float = Field(0.0, ge=0.0, le=2.0, description="Sampling temperature.")
    max_tokens: int = Field(128, ge=1, le=4096, description="Token limit of one reply.")
    seed: int | None = Field(0, description="Seed of the user's sampler (null: none).")


class UserSpec(Section):
    """A simulated user: private instructions, and replies by rules or by a model."""

    instructions: Template = Field(
        "",
        description="The user's private instructions (goal, identity, constraints), a template over `sample` and `constants`. A model user is prompted with them; the agent never sees them, and a served spec never sends them.",
    )
    replies: dict[Identifier, UserReplySpec] = Field(
        default_factory=dict,
        description="A rule-based user: named rules, tried in written order; the first whose `when` holds gives the reply (`user.replied` lists the names of the rules that replied so far).",
    )
    otherwise: Template | None = Field(
        None,
        description="The reply when no rule holds; without it, a message no rule answers ends the conversation (the user leaves).",
    )
    model: str | None = Field(
        None,
        description="A model user instead of rules: a policy agentspec runs (`chat:URL`; `hf:MODEL`, `smollm2` or `openai:URL` where a loader for it is installed). Its replies are observations of the agent's steps, never trained.",
        pattern=r"^\S+$",
    )
    sampling: UserSamplingSpec = Field(
        default_factory=UserSamplingSpec, description="A model user's sampling settings."
    )
    stop: str = Field(
        STOP_SIGNAL,
        min_length=1,
        description="A reply that contains this text ends the conversation (τ-bench's `###STOP###`); the text is removed from what the agent sees.",
    )

    @model_validator(mode="after")
    def _one_kind(self) -> UserSpec:
        if bool(self.replies) == (self.model is not None):
            raise ValueError(
                "a user replies either by rules (`replies:`) or by a model (`model:`): give exactly one"
            )
        if self.model is not None and self.otherwise is not None:
            raise ValueError("`otherwise` is a rule-based user's: a model user always replies")
        return self
