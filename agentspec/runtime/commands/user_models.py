"""Model users that are loaded into this process (`user.model: hf:MODEL`,
`smollm2`, a model path, `openai:URL` with a tokenizer folder after `|`):
the loader `compiled/user_model.py` asks for when a spec's user is no
`chat:URL`. Registered when the commands are imported (`run`, `eval`,
`test`, `explore`, `serve`); `chat:URL` needs no loader and works everywhere,
training workers included."""

from __future__ import annotations

from typing import Any

from agentspec.runtime.commands.run import make_policy
from agentspec.runtime.compiled.user_model import register_user_loader
from agentspec.runtime.episode.policy import SamplingParams

__all__ = ["LoadedUser", "register"]


class LoadedUser:
    """A user played by a policy over token ids: the dialogue rendered with the
    model's own chat template (ChatML where it has none), sampled, decoded."""

    def __init__(self, policy: Any, tokenizer: Any) -> None:
        self.policy, self.tokenizer = policy, tokenizer

    def prompt_ids(self, messages: list[dict[str, str]]) -> list[int]:
        if self.tokenizer.chat_template:
            text = self.tokenizer.apply_chat_template(
                messages, add_generation_prompt=True, tokenize=False
            )
        else:
            text = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
            text += "<|im_start|>assistant\n"
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    async def reply(
        self, messages: list[dict[str, str]], max_tokens: int, temperature: float, seed: int | None
    ) -> str:
        params = SamplingParams(max_new_tokens=max_tokens, temperature=temperature, seed=seed)
        (generation,) = await self.policy.generate([self.prompt_ids(messages)], params)
        if generation.error is not None:
            raise RuntimeError(f"the model user failed: {generation.error}")
        text: str = self.tokenizer.decode(generation.token_ids, skip_special_tokens=True)
        return text.strip()


def _load(name: str) -> LoadedUser:
    model, _, tokenizer_dir = name.partition("|")
    policy, tokenizer = make_policy(model, tokenizer_dir=tokenizer_dir or None)
    return LoadedUser(policy, tokenizer)


def register() -> None:
    """Teach `user.model` every model name `--policy` loads (but `chat:`, built in)."""
    for kind in ("hf", "openai", "model"):
        register_user_loader(kind, _load)


register()
