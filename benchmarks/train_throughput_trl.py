"""The TRL side of benchmarks/train_throughput.py, run in TRL's own virtual environment.

Imports only torch, transformers, datasets and trl (never agentspec), so it runs in
the venv that train_throughput.py creates for it. Reads from `--work`:

    model/          the tiny model and its tokenizer (save_pretrained)
    job.json        GRPO settings, torch threads, the dataset rows (prompt messages, answer)

and prints one JSON line: `{"trl": version, "torch": version, "results": [[tokens, seconds], ...]}`,
one pair per optimizer step after the first (a warm-up), timed from TRL's
`on_step_begin` to `on_step_end` (generation, reward, advantages, update);
tokens are TRL's own count (`num_input_tokens_seen`: prompt + completion tokens).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import warnings
from pathlib import Path
from typing import Any


def answer_reward(completions: list[Any], answer: list[int], **_: Any) -> list[float | None]:
    """1.0 when the completion's `<answer>N</answer>` equals the sample's answer."""
    scores: list[float | None] = []
    for completion, expected in zip(completions, answer, strict=True):
        text = completion[-1]["content"] if isinstance(completion, list) else str(completion)
        found = re.search(r"<answer>(.*?)</answer>", text, re.DOTALL)
        try:
            value = float(found.group(1).strip()) if found else None
        except ValueError:
            value = None
        scores.append(1.0 if value is not None and value == float(expected) else 0.0)
    return scores


def run(work: Path) -> dict[str, Any]:
    import torch
    import trl
    from datasets import Dataset
    from transformers import (
        AutoModelForCausalLM,
        PreTrainedTokenizerFast,
        PrinterCallback,
        TrainerCallback,
    )
    from transformers.utils import logging as hf_logging
    from trl import GRPOConfig, GRPOTrainer

    warnings.filterwarnings("ignore")
    hf_logging.set_verbosity_error()
    job = json.loads((work / "job.json").read_text(encoding="utf-8"))
    torch.set_num_threads(job["threads"])
    torch.manual_seed(job["seed"])
    model = AutoModelForCausalLM.from_pretrained(work / "model", dtype=torch.float32)
    tokenizer = PreTrainedTokenizerFast.from_pretrained(work / "model")
    args = GRPOConfig(
        output_dir=str(work / "trl"),
        use_cpu=True,
        bf16=False,
        fp16=False,
        report_to=[],
        max_steps=job["steps"],
        per_device_train_batch_size=job["batch"],
        gradient_accumulation_steps=1,
        num_generations=job["group_size"],
        steps_per_generation=1,
        num_iterations=1,
        max_completion_length=job["max_new_tokens"],
        temperature=job["temperature"],
        top_p=1.0,
        beta=0.0,
        learning_rate=job["learning_rate"],
        lr_scheduler_type="constant",
        warmup_steps=0,
        max_grad_norm=job["max_grad_norm"],
        logging_steps=1,
        save_strategy="no",
        disable_tqdm=True,
        dataloader_num_workers=0,
        seed=job["seed"],
    )

    class StepTimer(TrainerCallback):
        def __init__(self) -> None:
            self.results: list[tuple[int, float]] = []
            self.started = 0.0
            self.tokens = 0

        def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.started = time.perf_counter()
            self.tokens = state.num_input_tokens_seen

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            seconds = time.perf_counter() - self.started
            self.results.append((int(state.num_input_tokens_seen - self.tokens), seconds))

    timer = StepTimer()
    grpo = GRPOTrainer(
        model=model,
        reward_funcs=answer_reward,
        args=args,
        train_dataset=Dataset.from_list(job["rows"]),
        processing_class=tokenizer,
        callbacks=[timer],
    )
    grpo.remove_callback(PrinterCallback)  # the logs are computed (logging_steps=1), not printed
    grpo.train()
    return {"trl": trl.__version__, "torch": torch.__version__, "results": timer.results[1:]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, required=True)
    options = parser.parse_args()
    print(json.dumps(run(options.work)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
