"""The simulated user of a spec (`user:`): turn taking and rule-based replies.

An agent turn with tool calls goes to the tools, as in any spec; a turn of
text alone (what would otherwise be the final answer) goes to the user, whose
reply is the step's observation (role `user`): the agent's next prompt holds
it as new tokens that are never trained, and the agent's turns remain the
steps of the trajectory. A turn that writes text *and* calls tools goes to
the tools only: the user hears only turns without a call, as in τ-bench
(a message or a tool call, never both).

A rule-based user replies with the first rule whose `when` holds; a model
user (`user.model`) is asked with its instructions and the dialogue as it
sees it (`runtime/compiled/user_model.py`). A reply with `end: true`, or one
that contains the stop signal, ends the conversation: `user.ended` becomes
true and the episode ends after the step (event `final`), so `on: final`
rewards and `episode.success` read the dialogue's outcome.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from agentspec.runtime.compiled.scope import ActionView, Scope, SpecTemplate, state_fields
from agentspec.runtime.compiled.user_model import model_reply
from agentspec.runtime.episode.envs import StepResult
from agentspec.runtime.episode.trajectory import Action, Event, EventKind, Observation
from agentspec.runtime.text.chat_reasoning import split_reasoning

__all__ = ["UserError", "UserRule", "UserRules", "UserTurns", "UserView"]


class UserError(RuntimeError):
    """The user could not reply (a rule's guard or template failed, a model user's
    server failed): that episode ends with `env_error`, the run goes on."""


@dataclass
class UserView:
    """`user` in expressions: what the user did so far in this episode."""

    ended: bool = False
    said: str = ""
    turns: int = 0
    replied: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class UserRule:
    """One compiled rule of `user.replies`."""

    name: str
    say: SpecTemplate
    when: Callable[[Scope], Any] | None = None  # None: always
    end: bool = False
    location: str = ""  # spec file:line of the rule


@dataclass(frozen=True)
class UserRules:
    """The compiled `user:` section."""

    instructions: SpecTemplate
    rules: tuple[UserRule, ...] = ()
    otherwise: SpecTemplate | None = None
    model: str | None = None
    temperature: float = 0.0
    max_tokens: int = 128
    seed: int | None = 0
    stop: str = "###STOP###"


@dataclass(frozen=True)
class Reply:
    """One reply of the user: its text as the agent sees it, the rule that gave it
    (`model` for a model user, `otherwise`, or `leave` when nothing answered)."""

    text: str
    rule: str
    end: bool


class UserTurns:
    """Mixed into a generated `SpecToolEnv` whose spec declares a `user`: text
    turns go to the user (`on_final`), and `user` joins every expression's scope."""

    user_rules: ClassVar[UserRules]
    observation_role: str  # the env's (`ToolEnv`)

    def __init__(self) -> None:
        self.user = UserView()
        # the conversation as the user sees it (its own turns: the assistant's)
        self.dialogue: list[dict[str, str]] = []
        super().__init__()

    async def reset(self, sample: Mapping[str, Any]) -> Observation:
        self.user = UserView()
        observation: Observation = await super().reset(sample)  # type: ignore[misc]
        opening = next(
            (m["content"] for m in reversed(observation.messages or []) if m["role"] == "user"), ""
        )
        self.dialogue = [{"role": "assistant", "content": opening}]
        return observation

    def scope(self, ahead: bool = False, **extra: Any) -> Scope:
        if "user" not in extra:
            extra["user"] = self.user
        return super().scope(ahead, **extra)  # type: ignore[misc]

    def user_instructions(self) -> str:
        """The user's private instructions for this episode's sample."""
        variables = {"sample": self.sample, "constants": self.constants}  # type: ignore[attr-defined]
        return str(self.user_rules.instructions.render(**variables))

    async def on_final(self, answer: str, action: Action) -> StepResult:
        self.action = ActionView(action.text, None, answer)
        if self.user.ended:  # (the episode ended with the user's last reply)
            return StepResult(done=True, events=[Event(EventKind.FINAL, message="user")])
        # the user hears the message, never the agent's reasoning (`<think>…</think>`)
        self.dialogue.append({"role": "user", "content": split_reasoning(answer)[1].strip()})
        reply = await self.user_reply(answer)
        return self.heard(reply)

    async def user_reply(self, answer: str) -> Reply:
        """The user's answer to the agent's message `answer`."""
        rules = self.user_rules
        if rules.model is not None:
            text = await model_reply(rules, self.user_instructions(), self.dialogue)
            return self._stopped(Reply(text, "model", False))
        return self._stopped(self.rule_reply())

    def rule_reply(self) -> Reply:
        """The first rule whose `when` holds, rendered; `otherwise`; or the user leaves."""
        rules = self.user_rules
        s = self.scope()
        variables = self._variables(s)
        for rule in rules.rules:
            try:
                if rule.when is not None and not rule.when(s):
                    continue
                text = str(rule.say.render(**variables))
            except Exception as exc:  # located: the episode ends as env_error
                where = f"user.replies.{rule.name} ({rule.location})"
                raise UserError(f"{where}: {type(exc).__name__}: {exc}") from exc
            return Reply(text, rule.name, rule.end)
        if rules.otherwise is None:
            return Reply("", "leave", True)
        try:
            return Reply(str(rules.otherwise.render(**variables)), "otherwise", False)
        except Exception as exc:
            raise UserError(f"user.otherwise: {type(exc).__name__}: {exc}") from exc

    def _variables(self, s: Scope) -> dict[str, Any]:
        return {
            "action": s.action,
            "state": state_fields(s.state),
            "sample": s.sample,
            "step": s.step,
            "constants": s.constants,
            "user": s.user,
        }

    def _stopped(self, reply: Reply) -> Reply:
        """The stop signal ends the conversation and is not shown to the agent."""
        stop = self.user_rules.stop
        if stop and stop in reply.text:
            return Reply(reply.text.replace(stop, "").strip(), reply.rule, True)
        return reply

    def heard(self, reply: Reply) -> StepResult:
        """The step after the user replied: the reply is the observation, or the
        conversation ended (the reply kept in the step's `info`)."""
        user = self.user
        user.turns += 1
        user.said = reply.text
        user.replied.append(reply.rule)
        user.ended = reply.end
        self.dialogue.append({"role": "assistant", "content": reply.text})
        info = {"user": {"rule": reply.rule, "reply": reply.text, "ended": reply.end}}
        if reply.end:
            return StepResult(done=True, events=[Event(EventKind.FINAL, message="user")], info=info)
        return StepResult(observation=Observation(reply.text, self.observation_role), info=info)
