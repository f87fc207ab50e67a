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
is not timed. Reports the median over all timed iterations, the ratio, and the
share of agentspec's iteration time in each phase (rollout generation, and within
it the model's decoding; scoring; update; other), timed around the trainer's own
functions. With the whole batch in one minibatch (as here) the trainer scores
nothing before the update: the update's first forward pass gives the old
log-probs, so `score` is ~0 %.

TRL runs in its own virtual environment (`runs/bench-venvs/trl`, created on first
use: the same local torch build, then trl and transformers under
constraints.txt), as a subprocess (benchmarks/train_throughput_trl.py) that loads
the model, tokenizer and prompts this script saves; the project's `.venv` is
never changed. Rounds alternate between the two sides, so both see the same
machine load.

    .venv/bin/python benchmarks/train_throughput.py --threads 1 [--rounds 3 --iterations 3]

The two loops differ in what an iteration can do: agentspec's episodes are
multi-turn (the calculator tool; up to 4 turns), TRL's are one completion. With
the untrained tiny model almost every episode is one turn (no tool call), so
the work per iteration is comparable; the token counts are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
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
    from agentspec.compiler.build import import_spec
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


PHASES = ("rollout", "score", "update")
"""The trainer's functions timed as phases: rollout generation, scoring (log-probs of
the policy, reference, critic), the update (epochs x minibatches); the rest of an
iteration (batching, advantages, summaries) is `other`."""


def run_agentspec(shared: dict[str, Any], iterations: int, work: Path) -> list[tuple[int, float]]:
    """(tokens, seconds) of `iterations` timed iterations after one warm-up.

    Also records the mean turns per episode (`shared["turns"]`) and each timed
    iteration's seconds per phase (`shared["phases"]`), timed around the trainer's
    own functions (the work is unchanged).
    """
    import torch

    from agentspec.runtime.backends.local import trainer
    from agentspec.runtime.backends.local.runlog import RunLog
    from agentspec.runtime.policies.hf import HFPolicy

    cfg = shared["cfg"]
    torch.manual_seed(cfg.seed)
    models = trainer.build_models(cfg, shared["module"], shared["samples"], work)
    run = RunLog(work / "run")
    pack = shared["module"].LAYOUT == "packed"  # as `trainer.train` decides
    episodes: list[Any] = []
    seconds_in: dict[str, float] = {}
    originals = {name: getattr(trainer, name) for name in PHASES}

    def timed(name: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            out = originals[name](*args, **kwargs)
            seconds_in[name] = seconds_in.get(name, 0.0) + time.perf_counter() - started
            if name == "rollout":
                episodes.extend(out)  # count the iteration's episodes
            return out

        return call

    for name in PHASES:
        setattr(trainer, name, timed(name))
    decode = HFPolicy.generate_batch

    def timed_decode(self: Any, *args: Any) -> Any:  # the model's share of the rollout
        started = time.perf_counter()
        out = decode(self, *args)
        seconds_in["decode"] = seconds_in.get("decode", 0.0) + time.perf_counter() - started
        return out

    HFPolicy.generate_batch = timed_decode  # type: ignore[method-assign]
    results = []
    try:
        for iteration in range(1, iterations + 2):
            episodes.clear()
            seconds_in.clear()
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
                phases = {name: seconds_in.get(name, 0.0) for name in PHASES}
                phases["other"] = seconds - sum(phases.values())
                phases["decode"] = seconds_in.get("decode", 0.0)
                shared.setdefault("phases", []).append(phases)
    finally:
        for name, original in originals.items():
            setattr(trainer, name, original)
        HFPolicy.generate_batch = decode  # type: ignore[method-assign]
        run.close()
    return results


# ----------------------------------------------------------------------- TRL


def trl_python(venv: Path) -> Path:
    """The Python of TRL's own virtual environment, created on first use
    (`side_venvs.py`): torch, the project's local CPU build, then trl and transformers."""
    from side_venvs import side_python, trl_installs

    return side_python("trl", trl_installs(), venv)


def export_for_trl(shared: dict[str, Any], iterations: int, work: Path) -> Path:
    """The model, its tokenizer, the prompts and the GRPO settings, for the TRL worker."""
    cfg = shared["cfg"]
    model, tokenizer = tiny_model(shared, work / "tokenizer")  # as build_models makes it
    model.save_pretrained(work / "model")
    tokenizer.save_pretrained(work / "model")
    steps = iterations + 1
    env = shared["module"].ENV_CLASS()  # the same first prompt: system + tool instructions + user
    rows = [
        {"prompt": env.initial_messages(s), "answer": int(s["answer"])}
        for s in shared["samples"][: cfg.prompts_per_iteration * steps]
    ]
    job = {
        "steps": steps,
        "batch": cfg.prompts_per_iteration * cfg.group_size,
        "group_size": cfg.group_size,
        "max_new_tokens": shared["max_new_tokens"],
        "temperature": cfg.temperature,
        "learning_rate": cfg.learning_rate,
        "max_grad_norm": cfg.max_grad_norm,
        "seed": cfg.seed,
        "threads": shared["threads"],
        "rows": rows,
    }
    (work / "job.json").write_text(json.dumps(job), encoding="utf-8")
    return work


def run_trl(shared: dict[str, Any], iterations: int, work: Path) -> list[tuple[int, float]]:
    """(tokens, seconds) of TRL's timed steps, from the worker in TRL's venv."""
    export_for_trl(shared, iterations, work)
    done = subprocess.run(
        [
            str(shared["trl_python"]),
            str(ROOT / "benchmarks" / "train_throughput_trl.py"),
            "--work",
            str(work),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": "", "TOKENIZERS_PARALLELISM": "false"},
    )
    if done.returncode != 0:
        raise SystemExit(f"the TRL worker failed:\n{done.stderr[-4000:]}")
    report = json.loads(done.stdout.strip().splitlines()[-1])
    shared["trl_versions"] = f"trl {report['trl']} · torch {report['torch']} (TRL's venv)"
    return [(int(t), float(s)) for t, s in report["results"]]


# ---------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", type=int, default=16, help="prompts per iteration")
    parser.add_argument("--group", type=int, default=4, help="episodes per prompt")
    parser.add_argument("--rounds", type=int, default=3, help="fresh models per side")
    parser.add_argument("--iterations", type=int, default=3, help="timed iterations per round")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (both sides)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--trl-venv",
        type=Path,
        default=ROOT / "runs" / "bench-venvs" / "trl",
        help="TRL's own virtual environment (created on first use)",
    )
    options = parser.parse_args(argv)

    import torch
    from transformers.utils import logging as hf_logging

    warnings.filterwarnings("ignore")
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    torch.set_num_threads(options.threads)
    shared = setup(options.threads, options.prompts, options.group, options.seed)
    shared["threads"] = options.threads
    shared["trl_python"] = trl_python(options.trl_venv)
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

    cfg = shared["cfg"]
    print(
        f"calculator · {MODEL} · {cfg.prompts_per_iteration} prompts × {cfg.group_size} "
        f"· max {shared['max_new_tokens']} new tokens · 1 epoch · {options.threads} torch threads "
        f"· {options.rounds} rounds × {options.iterations} timed iterations "
        f"· agentspec: torch {torch.__version__} · {shared['trl_versions']}"
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
    phases = shared["phases"]
    total = sum(sum(p[name] for name in (*PHASES, "other")) for p in phases)

    def share(name: str) -> str:
        return f"{sum(p[name] for p in phases) / total:.0%}"

    print(
        f"agentspec, share of iteration time (all timed iterations): rollout {share('rollout')} "
        f"(the model's decoding {share('decode')}, the env and the loop the rest), "
        f"score {share('score')}, update {share('update')}, other {share('other')}"
    )
    return 0


if __name__ == "__main__":
    from machine import with_load_average

    sys.exit(with_load_average(main))
