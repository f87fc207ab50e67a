"""The reward of benchmarks/train_throughput_trl.py (TRL's side of the throughput benchmark)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "train_throughput_trl.py"
spec = importlib.util.spec_from_file_location("train_throughput_trl", SCRIPT)
assert spec is not None and spec.loader is not None
worker = importlib.util.module_from_spec(spec)
spec.loader.exec_module(worker)


def test_answer_reward_scores_the_tagged_answer() -> None:
    completions = [
        [{"role": "assistant", "content": "<answer>12</answer>"}],
        [{"role": "assistant", "content": "<answer> 12.0 </answer>"}],
        [{"role": "assistant", "content": "<answer>13</answer>"}],
        [{"role": "assistant", "content": "12"}],
        "<answer>x</answer>",
    ]
    assert worker.answer_reward(completions, [12] * 5) == [1.0, 1.0, 0.0, 0.0, 0.0]
