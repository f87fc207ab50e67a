"""The rollout's fast encode / decode path gives exactly the tokenizer's own ids and text.

`encode_chat` encodes the framing once and only the text around each content
per call, calling the Rust tokenizer directly; these tests compare it with
encoding the whole rendered text through the tokenizer's public `encode`, on
random contents (whitespace, digits, non-ASCII, text that looks like framing),
for the byte tokenizer, agentspec's `BPETokenizer` and a Hugging Face fast
tokenizer.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from agentspec.runtime.episode.context import observation_ids
from agentspec.runtime.text.byte_tokenizer import ByteTokenizer
from agentspec.runtime.text.fast_codec import chat_plan, codec
from agentspec.runtime.text.tokenizer import (
    BPETokenizer,
    ChatTemplate,
    decode_text,
    encode_chat,
    framing_ids,
)

ALPHABET = [*"ab Z19\n\n\t .,{}\"<>/|é漢🙂-_'", " user", "assistant\n", "im_end", "\r\n", "  "]


def random_text(rng: random.Random) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 12)))


@pytest.fixture(params=["byte", "bpe", "hf"])
def tokenizer(request: pytest.FixtureRequest, tok: BPETokenizer) -> Any:
    if request.param == "byte":
        return ByteTokenizer()
    if request.param == "bpe":
        return tok
    import transformers  # the train extra: a missing install fails

    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok._tok, eos_token=tok.eos_token, pad_token=tok.pad_token
    )


def reference(tokenizer: Any, text: str) -> list[int]:
    return list(tokenizer.encode(text, add_special_tokens=False))


def test_the_plan_is_used_for_every_supported_tokenizer(tokenizer: Any) -> None:
    """Not vacuous: the cached framing is what these tokenizers get."""
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    assert chat_plan(tokenizer, ChatTemplate(), messages, "", True) is not None


def test_encode_chat_equals_encoding_the_whole_text(tokenizer: Any) -> None:
    chat, rng = ChatTemplate(), random.Random(0)
    for _ in range(300):
        roles = rng.choice([["user"], ["system", "user"], ["tool"], ["user", "assistant", "user"]])
        messages = [{"role": r, "content": random_text(rng)} for r in roles]
        prefix = rng.choice(["", "\n", "<|im_end|>\n", "x"])
        generation = rng.random() < 0.8
        expected = reference(tokenizer, prefix + chat.render(messages, generation))
        got = encode_chat(
            tokenizer, chat, messages, prefix=prefix, add_generation_prompt=generation
        )
        assert got == expected, (messages, prefix)


def test_observation_ids_equal_encoding_the_continuation(tokenizer: Any) -> None:
    chat, rng = ChatTemplate(), random.Random(1)
    (eot,) = framing_ids(tokenizer, chat.end_of_turn)
    for _ in range(200):
        text, role = random_text(rng), rng.choice(["user", "tool"])
        for response, ended in (([5, 6], False), ([5, eot], True)):
            continuation = chat.continuation([{"role": role, "content": text}], ended)
            assert observation_ids(tokenizer, chat, response, text, role) == reference(
                tokenizer, continuation
            )


def test_a_template_without_special_tokens_is_still_exact(tokenizer: Any) -> None:
    """Framing with no special token to split at: the whole text is encoded (or the
    plan is proven equal on the probes)."""
    chat = ChatTemplate(
        message="### {role}:\n{content}\n", generation_prompt="### assistant:\n", end_of_turn="\n"
    )
    rng = random.Random(2)
    for _ in range(100):
        messages = [{"role": "user", "content": random_text(rng)}]
        assert encode_chat(tokenizer, chat, messages) == reference(tokenizer, chat.render(messages))


def test_decode_text_equals_the_tokenizers_decode(tokenizer: Any) -> None:
    rng = random.Random(3)
    for _ in range(100):
        ids = reference(
            tokenizer, ChatTemplate().render([{"role": "user", "content": random_text(rng)}])
        )
        assert decode_text(tokenizer, ids) == tokenizer.decode(ids, skip_special_tokens=True)


def test_state_left_on_a_hugging_face_backend_is_respected(tok: BPETokenizer) -> None:
    """Truncation set on the shared Rust tokenizer by another caller: the fast
    path falls back to the wrapper, which resets it, rather than truncating."""
    import transformers  # the train extra: a missing install fails

    hf = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok._tok.__class__.from_str(tok._tok.to_str()),
        eos_token=tok.eos_token,
        pad_token=tok.pad_token,
    )
    hf.backend_tokenizer.enable_truncation(max_length=2)
    text = "a long enough text to be truncated"
    assert codec(hf).encode(text) == reference(hf, text)
    assert len(reference(hf, text)) > 2


def test_a_rendered_conversation_encodes_piece_by_piece_as_a_whole(tokenizer: Any) -> None:
    """`encode_rendered` (the model templates' path) gives the ids of encoding the
    whole text, for the pieces it remembers and for texts it sees once."""
    fast, rng = codec(tokenizer), random.Random(1)
    specials = ["<|im_start|>", "<|im_end|>", "\n", " ", ""]
    for _ in range(300):
        text = "".join(rng.choice(specials) + random_text(rng) for _ in range(rng.randint(0, 6)))
        assert fast.encode_rendered(text) == reference(tokenizer, text), text
    assert fast._splits()  # not vacuous: these tokenizers take the piecewise path
