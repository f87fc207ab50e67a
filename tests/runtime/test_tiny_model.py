from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentspec.runtime import ChatTemplate, load_tokenizer

from .helpers import corpus_texts

CHAT = ChatTemplate()


def test_saved_model_reloads_identically(tiny_dir: Path, tiny: Any) -> None:
    import torch

    from agentspec.runtime.text.tiny_model import load_tiny

    model, tok = tiny
    again, _ = load_tiny(tiny_dir)
    ids = torch.tensor([tok.encode("What is 3+4?")])
    assert torch.equal(model(input_ids=ids).logits, again(input_ids=ids).logits)
    assert sum(p.numel() for p in model.parameters()) < 1_000_000
    assert model.config.hidden_size == 64 and model.config.num_hidden_layers == 2
    assert model.config.vocab_size == len(tok) <= 2048


def test_tokenizer_round_trips_and_has_chatml(tiny: Any, tiny_dir: Path) -> None:
    _, tok = tiny
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Ünïcødé 3+4 ✓"},
    ]
    text = CHAT.render(messages)
    ids = tok.encode(text, add_special_tokens=False)
    assert tok.decode(ids) == text
    assert tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True) == text
    assert tok.convert_ids_to_tokens(tok.eos_token_id) == "<|im_end|>"
    assert tok.convert_ids_to_tokens(tok.pad_token_id) == "<|endoftext|>"
    assert ids.count(tok.convert_tokens_to_ids("<|im_start|>")) == 3
    assert load_tokenizer(tiny_dir).encode(text) == ids
    assert [tok.decode([i]) for i in tok.encode("x 2026", add_special_tokens=False)][-4:] == list(
        "2026"
    )


def test_builder_is_deterministic(tmp_path: Path) -> None:
    import torch

    from agentspec.runtime.text.tiny_model import TinyModelConfig, build_tiny

    texts = corpus_texts()[:200]
    m1, t1 = build_tiny(texts, vocab_size=512, seed=3)
    m2, t2 = build_tiny(texts, tmp_path, vocab_size=512, seed=3)
    m3, _ = build_tiny(texts, vocab_size=512, seed=4)
    assert t1.get_vocab() == t2.get_vocab()
    s1, s2, s3 = m1.state_dict(), m2.state_dict(), m3.state_dict()
    assert all(torch.equal(s1[k], s2[k]) for k in s1)
    assert not all(torch.equal(s1[k], s3[k]) for k in s1)
    llama, _ = build_tiny(texts, vocab_size=512, config=TinyModelConfig(arch="llama"))
    assert type(llama).__name__ == "LlamaForCausalLM"
    with pytest.raises(ValueError, match="unknown arch"):
        build_tiny(texts, vocab_size=512, config=TinyModelConfig(arch="gpt9"))


def test_auto_tokenizer_encodes_like_tokenizer_json(tiny_dir: Path) -> None:
    """transformers' AutoTokenizer (a rebuilt Qwen2Tokenizer) and the torch-free loader agree."""
    from transformers import AutoTokenizer

    auto = AutoTokenizer.from_pretrained(str(tiny_dir))
    bare = load_tokenizer(tiny_dir)
    for text in [
        CHAT.render([{"role": "user", "content": "What is 12+345?"}]),
        "Ünïcødé   spaces\t\ttabs\n\n\nnewlines it's we'll ✓ 日本語 ＡＢＣ ①② <tool_call>{}</tool_call>",
    ]:
        assert auto.encode(text, add_special_tokens=False) == bare.encode(text)


def test_task_tokenizer_without_transformers_gives_the_same_ids(tmp_path: Path) -> None:
    # `agentspec run` on a plain install uses task_bpe_tokenizer; training uses
    # task_tokenizer. Same task text must give the same ids, from either cache.
    from agentspec.compiler.build import import_spec
    from agentspec.runtime.compiled.task_text import task_bpe_tokenizer, task_tokenizer

    module = import_spec(Path(__file__).parents[2] / "specs" / "calculator.yaml")
    samples = module.load_samples(limit=200)
    hf = task_tokenizer(module, samples, tmp_path / "hf")
    bare = task_bpe_tokenizer(module, samples, tmp_path / "bare")
    reloaded = task_bpe_tokenizer(module, samples, tmp_path / "hf")  # reads the HF files
    text = CHAT.render([{"role": "user", "content": samples[0]["question"] + " 12*(3+4) ✓"}])
    ids = hf.encode(text, add_special_tokens=False)
    assert bare.encode(text) == ids == reloaded.encode(text)
    assert (bare.eos_token_id, bare.pad_token_id) == (hf.eos_token_id, hf.pad_token_id)
    assert task_bpe_tokenizer(module, samples, tmp_path / "bare").encode(text) == ids


def test_a_tokenizer_cache_written_meanwhile_by_another_process_is_kept(
    tmp_path: Path,
) -> None:
    # Two processes that miss the cache at once both build; each writes a folder of
    # its own and renames it into place whole, so no reader sees half a tokenizer.
    from agentspec.compiler.build import import_spec
    from agentspec.runtime.compiled import task_text

    module = import_spec(Path(__file__).parents[2] / "specs" / "calculator.yaml")
    samples = module.load_samples(limit=50)
    cache = tmp_path / "cache" / "tokenizer"
    build_bare = task_text.task_bpe_tokenizer

    def other_process_won(folder: Path | None) -> str:
        assert folder is not None and folder.parent == cache.parent and folder != cache
        assert not (folder / "tokenizer.json").exists()  # an empty folder of its own
        build_bare(module, samples, cache)  # the other process finishes first
        (folder / "tokenizer.json").write_text("{}")
        return "built here"

    got = task_text._saved_or_built(cache, task_text.load_tokenizer, other_process_won)
    assert got == "built here"
    assert json.loads((cache / "tokenizer.json").read_text())["model"]  # the winner's, whole
    assert sorted(p.name for p in cache.parent.iterdir()) == ["tokenizer"]  # no staging left


def test_a_tokenizer_cache_folder_left_half_written_is_rebuilt(tmp_path: Path) -> None:
    from agentspec.compiler.build import import_spec
    from agentspec.runtime.compiled.task_text import task_bpe_tokenizer

    module = import_spec(Path(__file__).parents[2] / "specs" / "calculator.yaml")
    samples = module.load_samples(limit=50)
    cache = tmp_path / "tokenizer"
    cache.mkdir()
    (cache / "tokenizer_config.json").write_text("{")  # a process died before tokenizer.json
    built = task_bpe_tokenizer(module, samples, cache)
    assert task_bpe_tokenizer(module, samples, cache).encode("1 + 2") == built.encode("1 + 2")
    assert json.loads((cache / "tokenizer_config.json").read_text())["pad_token"]
    assert (cache.stat().st_mode & 0o777) == 0o755


def test_long_runs_are_cut_before_bpe_training() -> None:
    # BPE training time grows with the square of a word's length: `'a' * 999999` in a
    # prompt hung `run` before its first episode
    from agentspec.runtime.text.tiny_model import _broken_runs, train_tiny_bpe

    assert _broken_runs("short words stay") == "short words stay"
    cut = _broken_runs("x " + "a" * 300 + " y")
    assert cut.split() == ["x", "a" * 64, "a" * 64, "a" * 64, "a" * 64, "a" * 44, "y"]
    tok = train_tiny_bpe(["one two three", "b" * 200_000], vocab_size=300)
    assert tok.get_vocab_size() <= 300
