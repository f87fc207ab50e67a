"""Tokens per second of one rollout + update iteration: agentspec's local trainer vs TRL.

Both sides train the same model (agentspec's `builtin:tiny`, built from the
calculator task's text with the same seed) with GRPO on the calculator task's
prompts (the env's own first messages: the system prompt with the tool
instructions, then the question, framed by the same ChatML template): the same
prompts × group size per iteration, the same max new tokens (the spec's
`max_response_tokens`), temperature 1, one epoch of one gradient step over the
whole batch, no KL term, the same learning rate and torch threads.

    agentspec   `trainer.train_iteration` (rollout through the generated env,
                scoring, advantages, update), timed around the call
    TRL         `GRPOTrainer` (generation, reward, advantages, update), timed
                from `on_step_begin` to `on_step_end` of each optimizer step

Tokens = prompt + generated tokens of the iteration's rollouts, counted once
per episode: for agentspec the last step's prompt (which, with the task's
`full_history` context, holds the whole episode before it, tool results
included) plus its response; for TRL its own count (`num_input_tokens_seen`:
prompt + completion tokens). The first iteration of each round is a warm-up and
is not timed. Reports the median over all timed iterations and the ratio.

    pip install -c constraints.txt trl      # a benchmark-only dependency
    .venv/bin/python benchmarks/train_throughput.py [--rounds 3 --iterations 3]

The two loops differ in what an iteration can do: agentspec's episodes are
multi-turn (the calculator tool; up to 4 turns), TRL's are one completion. With
the untrained tiny model almost every episode is one turn (no tool call), so
the work per iteration is comparable; the token counts are printed.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "specs" / "calculator.yaml"
MODEL = "builtin:tiny"


def setup(threads: int, prompts: int, group: int, seed: int) -> dict[str, Any]:
    """What both sides share: the compiled task, its samples, the resolved config."""
    from agentspec.compiler.codegen import import_spec
    from agentspec.runtime.backends.local.config import resolve_config
    from agentspec.runtime.backends.local.trainer import split_samples
    from agentspec.spec.model import TrainingSpec

    module = import_spec(SPEC)
    cfg = resolve_config(
        TrainingSpec.model_validate(module.TRAINING),
        {
            "algorithm": "grpo",
            "model": MODEL,
            "seed": seed,
            "prompts_per_iteration": prompts,
            "group_size": group,
            "epochs": 1,
            "minibatch_size": prompts * group,
            "warm_start": 0,
            "kl_coef": 0.0,
            "temperature": 1.0,
            "learning_rate": 1e-3,
            "torch_threads": threads,
            "eval_every": 10**6,
            "trace_samples": 0,
        },
    )
    train_samples, _ = split_samples(module, cfg)
    spec = yaml.safe_load(SPEC.read_text(encoding="utf-8"))
    return {
        "module": module,
        "cfg": cfg,
        "samples": train_samples,
        "max_new_tokens": int(spec["episode"]["max_response_tokens"]),
    }


def tiny_model(shared: dict[str, Any], tokenizer_dir: Path) -> tuple[Any, Any]:
    from agentspec.runtime.backends.local.models import load_policy

    cfg = shared["cfg"]
    return load_policy(
        MODEL, shared["module"], shared["samples"][:2000], tokenizer_dir, cfg.seed
    )  # the trainer's own call (build_models)


# ----------------------------------------------------------------- agentspec


def run_agentspec(shared: dict[str, Any], iterations: int, work: Path) -> list[tuple[int, float]]:
    """(tokens, seconds) of `iterations` timed iterations after one warm-up.

    Also records the mean turns per episode (`shared["turns"]`) and the share of
    the iteration spent in the rollout (`shared["rollout_share"]`).
    """
    import torch

    from agentspec.runtime.backends.local import trainer
    from agentspec.runtime.backends.local.runlog import RunLog

    cfg = shared["cfg"]
    torch.manual_seed(cfg.seed)
    models = trainer.build_models(cfg, shared["module"], shared["samples"], work)
    run = RunLog(work / "run")
    pack = shared["module"].LAYOUT == "packed"  # as `trainer.train` decides
    episodes: list[Any] = []
    original = trainer.rollout

    rollout_seconds = [0.0]

    def recording_rollout(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        trajectories = original(*args, **kwargs)
        rollout_seconds[0] = time.perf_counter() - started
        episodes.extend(trajectories)
        return trajectories

    trainer.rollout = recording_rollout  # count the iteration's episodes; the work is unchanged
    results = []
    try:
        for iteration in range(1, iterations + 2):
            episodes.clear()
            started = time.perf_counter()
            trainer.train_iteration(
                shared["module"], models, "grpo", shared["samples"], cfg, pack, iteration, run
            )
            seconds = time.perf_counter() - started
            tokens = sum(
                len(t.steps[-1].prompt_ids) + len(t.steps[-1].response_ids)
                for t in episodes
                if t.steps
            )
            if iteration > 1:
                results.append((tokens, seconds))
                shared.setdefault("turns", []).append(
                    sum(len(t.steps) for t in episodes) / max(len(episodes), 1)
                )
                shared.setdefault("rollout_share", []).append(rollout_seconds[0] / seconds)
    finally:
        trainer.rollout = original
        run.close()
    return results


# ----------------------------------------------------------------------- TRL


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


def run_trl(shared: dict[str, Any], iterations: int, work: Path) -> list[tuple[int, float]]:
    import torch
    from datasets import Dataset
    from transformers import PrinterCallback, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    cfg = shared["cfg"]
    torch.manual_seed(cfg.seed)
    model, tokenizer = tiny_model(shared, work / "tokenizer")
    batch = cfg.prompts_per_iteration * cfg.group_size
    steps = iterations + 1
    needed = cfg.prompts_per_iteration * steps
    rows = shared["samples"][:needed]
    env = shared["module"].ENV_CLASS()  # the same first prompt: system + tool instructions + user
    dataset = Dataset.from_list(
        [{"prompt": env.initial_messages(s), "answer": int(s["answer"])} for s in rows]
    )
    args = GRPOConfig(
        output_dir=str(work / "trl"),
        use_cpu=True,
        bf16=False,
        fp16=False,
        report_to=[],
        max_steps=steps,
        per_device_train_batch_size=batch,
        gradient_accumulation_steps=1,
        num_generations=cfg.group_size,
        steps_per_generation=1,
        num_iterations=1,
        max_completion_length=shared["max_new_tokens"],
        temperature=cfg.temperature,
        top_p=1.0,
        beta=0.0,
        learning_rate=cfg.learning_rate,
        lr_scheduler_type="constant",
        warmup_steps=0,
        max_grad_norm=cfg.max_grad_norm,
        logging_steps=1,
        save_strategy="no",
        disable_tqdm=True,
        dataloader_num_workers=0,
        seed=cfg.seed,
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
            self.results.append(
                (
                    int(state.num_input_tokens_seen - self.tokens),
                    time.perf_counter() - self.started,
                )
            )

    timer = StepTimer()
    grpo = GRPOTrainer(
        model=model,
        reward_funcs=answer_reward,
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        callbacks=[timer],
    )
    grpo.remove_callback(PrinterCallback)  # the logs are computed (logging_steps=1), not printed
    grpo.train()
    return timer.results[1:]


# ---------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", type=int, default=16, help="prompts per iteration")
    parser.add_argument("--group", type=int, default=4, help="episodes per prompt")
    parser.add_argument("--rounds", type=int, default=3, help="fresh models per side")
    parser.add_argument("--iterations", type=int, default=3, help="timed iterations per round")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (both sides)")
    parser.add_argument("--seed", type=int, default=0)
    options = parser.parse_args(argv)

    import torch
    from transformers.utils import logging as hf_logging

    warnings.filterwarnings("ignore")
    hf_logging.set_verbosity_error()
    torch.set_num_threads(options.threads)
    shared = setup(options.threads, options.prompts, options.group, options.seed)
    runners: dict[str, Callable[[dict[str, Any], int, Path], list[tuple[int, float]]]] = {
        "agentspec": run_agentspec,
        "trl": run_trl,
    }
    measured: dict[str, list[tuple[int, float]]] = {name: [] for name in runners}
    for round_ in range(options.rounds):
        for name, runner in runners.items():  # interleaved: both see the same machine load
            with tempfile.TemporaryDirectory() as tmp:
                measured[name] += runner(shared, options.iterations, Path(tmp))
            last = measured[name][-options.iterations :]
            print(
                f"round {round_ + 1} {name:9s} "
                + "  ".join(f"{t} tok / {s:.2f} s" for t, s in last),
                file=sys.stderr,
            )

    import trl

    cfg = shared["cfg"]
    print(
        f"calculator · {MODEL} · {cfg.prompts_per_iteration} prompts × {cfg.group_size} "
        f"· max {shared['max_new_tokens']} new tokens · 1 epoch · {options.threads} torch threads "
        f"· {options.rounds} rounds × {options.iterations} timed iterations "
        f"· torch {torch.__version__} · trl {trl.__version__}"
    )
    print()
    print("| trainer | turns / episode | tokens / iteration | s / iteration | tokens/s (median) |")
    print("|---|---|---|---|---|")
    rates = {}
    turns = {"agentspec": f"{statistics.mean(shared['turns']):.2f}", "trl": "1"}
    for name, rows in measured.items():
        rates[name] = statistics.median(t / s for t, s in rows)
        print(
            f"| {name} | {turns[name]} | {statistics.median(t for t, _ in rows):.0f} "
            f"| {statistics.median(s for _, s in rows):.2f} | {rates[name]:,.0f} |"
        )
    print()
    print(f"ratio agentspec / TRL: {rates['agentspec'] / rates['trl']:.2f}×")
    share = statistics.median(shared["rollout_share"])
    print(f"agentspec: {share:.0%} of an iteration is the rollout (median)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
