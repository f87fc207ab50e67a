"""A response of megabytes (a hostile client, a runaway model) is encoded only as far
as the response limit reaches, with the same tokens and ending as encoding all of it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentspec.runtime.episode.policy import SamplingParams
from agentspec.runtime.policies.scripted import encode_head, text_generation
from agentspec.runtime.text.byte_tokenizer import ByteTokenizer
from agentspec.runtime.text.tiny_model import build_tiny_tokenizer

CORPUS = [
    '<tool_call>{"name": "calculator", "arguments": {"expression": "3*(4+5)"}}</tool_call>',
    "<answer>42</answer> go[north] take[key] open[door] The red door swings open.",
] * 20


@pytest.fixture(scope="module")
def bpe() -> object:
    return build_tiny_tokenizer(CORPUS, vocab_size=400)


def full_generation(text: str, tokenizer: object, params: SamplingParams) -> tuple:
    """What text_generation gave before it bounded the encoding: all of it encoded."""
    cut = [i + len(s) for s in params.stop if (i := text.find(s)) != -1]
    if cut:
        text = text[: min(cut)]
    ids = tokenizer.encode(text, add_special_tokens=False)  # type: ignore[attr-defined]
    eos = tokenizer.eos_token_id  # type: ignore[attr-defined]
    if not cut and eos is not None:
        ids.append(eos)
    finish = "stop"
    if len(ids) > params.max_new_tokens:
        ids, finish = ids[: params.max_new_tokens], "length"
    return ids, finish


pieces = st.sampled_from(
    ["B", "  ", "\n", "<tool_call>", "{", '"', "9", "é", "🙂", "go[", "]", "answer", "\x00", "ab"]
)


@settings(max_examples=150, deadline=None)
@given(parts=st.lists(st.tuples(pieces, st.integers(1, 400)), max_size=12))
def test_a_long_response_gives_the_tokens_of_encoding_all_of_it(bpe: object, parts: list) -> None:
    text = "".join(piece * n for piece, n in parts)
    for tokenizer in (bpe, ByteTokenizer()):
        for limit in (1, 8, 48):
            params = SamplingParams(max_new_tokens=limit, stop=["</answer>"])
            gen = text_generation(text, tokenizer, params)  # type: ignore[arg-type]
            assert (gen.token_ids, gen.finish_reason) == full_generation(text, tokenizer, params)


def test_ten_megabytes_are_not_all_encoded(bpe: object) -> None:
    calls: list[int] = []

    class Counting:
        eos_token_id = bpe.eos_token_id  # type: ignore[attr-defined]

        def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
            calls.append(len(text))
            return bpe.encode(text, add_special_tokens=add_special_tokens)  # type: ignore[attr-defined]

    text = "<tool_call>" + "B" * 10_000_000
    ids = encode_head(Counting(), text, 48)  # type: ignore[arg-type]
    assert ids[:48] == bpe.encode(text[:100_000], add_special_tokens=False)[:48]  # type: ignore[attr-defined]
    assert max(calls) < 100_000


def test_a_text_far_past_the_limit_is_encoded_only_as_far_as_the_limit_needs(bpe: object) -> None:
    # The first shape of the hostile output corpus (tests/runtime/test_hostile_rollout.py:
    # a call with a huge number), far longer than the limit: at max_response_tokens 2^20
    # an 8 MB one was encoded whole, 49 s and 3.1 GB for one episode. What is encoded
    # must follow the limit, not the text.
    encoded: list[int] = []

    class Counting:
        eos_token_id = bpe.eos_token_id  # type: ignore[attr-defined]

        def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
            encoded.append(len(text))
            return bpe.encode(text, add_special_tokens=add_special_tokens)  # type: ignore[attr-defined]

    limit = 4096
    text = (
        '<tool_call>{"name": "calculator", "arguments": {"expression": '
        + "9" * (256 * limit)
        + "}}</tool_call>"
    )
    ids = encode_head(Counting(), text, limit)  # type: ignore[arg-type]
    full = bpe.encode(text[: 64 * limit], add_special_tokens=False)  # type: ignore[attr-defined]
    assert ids[:limit] == full[:limit]
    needed = len(bpe.decode(full[: limit + 8]))  # type: ignore[attr-defined]
    assert sum(encoded) < 3 * needed  # all prefixes together (16 times `needed` before)
