"""A model user (`user.model`): a policy agentspec runs, asked for the user's
next message.

It is prompted with the user's private instructions (the system message) and
the dialogue as the user sees it: its own messages as the assistant's, the
agent's text turns as the user's — no tool calls, no tool results, no
reasoning. It samples with its own settings and seed (`user.sampling`). Its
text becomes an observation of the agent's step: never a trained token.

`chat:URL` (any chat-completions server) is built here; other kinds of model
(`hf:MODEL`, `smollm2`, `openai:URL`) need a loader that turns the name into
an object with `async reply(messages, max_tokens, temperature, seed) -> str`,
registered with `register_user_loader` by the layer that loads models.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from agentspec.runtime.episode.conversation import Conversation
from agentspec.runtime.episode.policy import SamplingParams
from agentspec.runtime.policies.chat import ChatPolicy
from agentspec.runtime.text.byte_tokenizer import ByteTokenizer

if TYPE_CHECKING:
    from agentspec.runtime.compiled.user import UserRules

__all__ = ["ChatUser", "ModelUser", "model_reply", "register_user_loader"]

GUIDELINES = (
    "You are playing the customer in a conversation with an agent. Follow your"
    " instructions; disclose information only when the agent asks for it; never"
    " invent facts that are not in your instructions. Write only your next message."
)


class ModelUser(Protocol):
    async def reply(
        self, messages: list[dict[str, str]], max_tokens: int, temperature: float, seed: int | None
    ) -> str: ...


class ChatUser:
    """A user played by a chat-completions server (`chat:URL`)."""

    def __init__(self, base_url: str) -> None:
        self.tokenizer = ByteTokenizer()  # bytes round-trip: the reply's text comes back whole
        self.policy = ChatPolicy(base_url, "default", self.tokenizer, max_retries=2)

    async def reply(
        self, messages: list[dict[str, str]], max_tokens: int, temperature: float, seed: int | None
    ) -> str:
        params = SamplingParams(max_new_tokens=max_tokens, temperature=temperature, seed=seed)
        generation = await self.policy.generate_chat(Conversation(messages), params)
        if generation.error is not None:
            raise RuntimeError(f"the model user failed: {generation.error}")
        return self.tokenizer.decode(generation.token_ids, skip_special_tokens=True).strip()


_LOADERS: dict[str, Callable[[str], ModelUser]] = {}
_USERS: dict[str, ModelUser] = {}


def register_user_loader(kind: str, loader: Callable[[str], ModelUser]) -> None:
    """Teach `user.model: KIND:…` (or a bare model name, kind `model`) to load."""
    _LOADERS[kind] = loader


def _user(name: str) -> ModelUser:
    """One model user per name and process: its server or weights are shared by episodes."""
    user = _USERS.get(name)
    if user is None:
        kind, _, location = name.partition(":")
        if kind == "chat":
            user = ChatUser(location)
        elif kind in _LOADERS or "model" in _LOADERS:
            user = _LOADERS.get(kind, _LOADERS.get("model"))(name)  # type: ignore[misc]
        else:
            raise RuntimeError(
                f"user.model {name!r}: this process has no loader for it; `chat:URL` always works"
            )
        _USERS[name] = user
    return user


def user_messages(instructions: str, dialogue: Sequence[dict[str, str]]) -> list[dict[str, str]]:
    """What the model user reads: its instructions, then the dialogue from its side."""
    system = f"{GUIDELINES}\n\n{instructions}".strip()
    messages = [{"role": "system", "content": system}]
    # a chat must open with a user turn: the agent's side speaks first from the user's view
    messages.append({"role": "user", "content": "(The agent is waiting for your message.)"})
    messages += [dict(m) for m in dialogue]
    return messages


async def model_reply(
    rules: UserRules, instructions: str, dialogue: Sequence[dict[str, str]]
) -> str:
    """The model user's next message."""
    user = _user(rules.model or "")
    call: Awaitable[str] = user.reply(
        user_messages(instructions, dialogue), rules.max_tokens, rules.temperature, rules.seed
    )
    return await call
