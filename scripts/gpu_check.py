"""The GPU check behind ``scripts/gpu_check.sh``: what a first GPU run depends on, step by step.

Run it the minute a GPU machine is available; docs/verl.md ("The GPU check")
shows the expected output and each step's time budget. Nothing is downloaded:
the models are agentspec's built-in ones, built from the task's text.

Steps (``--steps`` runs a subset, in this order):

- ``imports``: agentspec's dependencies, then jsonschema, ruff, verl, vllm,
  flash_attn and ray, each imported and reported with its version (or absent,
  or broken with the import error);
- ``local``: a few StepPO iterations of specs/calculator.yaml on the LOCAL backend
  (``builtin:300m``, bfloat16 autocast where supported): rollout and update
  tokens/s, peak GPU memory;
- ``dry-run``: ``agentspec train --backend verl --dry-run`` (the attention chosen
  for actor, reference and critic; verl's ``validate_config`` on the config);
- ``verl``: one StepPO iteration with the critic on verl (``builtin:300m``: FSDP,
  the vLLM rollout and its weight sync, the generated agent loop and
  agentspec's plugin inside verl's workers). Passes when the metrics show the
  step ratio, the critic's loss, and a rollout-vs-trainer probability
  difference (verl's ``training/rollout_probs_diff_mean``) below 0.05;
- ``default``: the default model ``builtin:tiny`` on vLLM is refused before
  launch with the head-size error (GPU form only);
- ``2-gpu``: the ``verl`` step on two GPUs (data parallel 2: agentspec's losses'
  global-batch path), when two are visible.

``--small --device cpu`` is the CPU-sized form a test runs: ``builtin:tiny``, a
handful of episodes, verl's CPU path. ``--set KEY=VALUE`` (repeatable) adds a setting
to the verl steps' runs, as ``agentspec train --set`` does (the test trains two
iterations and dumps verl's advantages to compare them with agentspec's).
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "specs" / "calculator.yaml"

FULL = {
    "model": "builtin:300m",
    "iterations": 4,
    "prompts_per_iteration": 16,
    "group_size": 4,
    "minibatch_size": 16,
    "epochs": 1,
    "learning_rate": 1e-5,
    "warm_start": 0,
    "eval_samples": 8,
    "eval_every": 1000,
    "checkpoint_every": 1000,
    "trace_samples": 0,
}
SMALL = {
    **FULL,
    "model": "builtin:tiny",
    "iterations": 1,
    "prompts_per_iteration": 2,
    "group_size": 2,
    "minibatch_size": 4,
    "eval_samples": 2,
}
NEEDED = ("torch", "transformers", "tokenizers", "pydantic", "lark", "jinja2", "yaml", "typer")
REPORTED = ("jsonschema", "ruff", "verl", "vllm", "flash_attn", "ray")
DISTRIBUTIONS = {"yaml": "PyYAML", "flash_attn": "flash-attn"}

VERL_GPU = {
    "model": "builtin:300m",  # head size 64: every vLLM attention backend serves it
    "trainer.device": "cuda",
    "actor_rollout_ref.rollout.gpu_memory_utilization": "0.4",
    "prompts_per_iteration": "8",
    "group_size": "4",
    "minibatch_size": "32",
    "learning_rate": "1e-6",
}
VERL_CPU = {
    "model": "builtin:tiny",
    "trainer.device": "cpu",
    "prompts_per_iteration": "2",
    "group_size": "2",
    "minibatch_size": "4",
}
VERL_COMMON = {
    "algorithm": "steppo",
    "critic_warmup": "0",  # the actor updates in the one iteration: the step ratio is logged
    "iterations": "1",
    "epochs": "1",
    "eval_samples": "2",
    "eval_every": "1000",
    "checkpoint_every": "1000",
    "data.val_max_samples": "2",
}
MAX_PROBS_DIFF = 0.05
BUDGETS_S = {"imports": 60, "local": 600, "dry-run": 120, "verl": 900, "default": 120, "2-gpu": 900}
"""Each step's time budget on one recent GPU (H100/H200 class); the CPU form has none."""
STEPS = tuple(BUDGETS_S)


@dataclass
class Check:
    """What the steps share: the form (GPU or CPU-sized) and a scratch directory."""

    small: bool
    device: str
    cuda: bool
    scratch: Path
    out: Path | None = None
    extra: dict[str, str] = field(default_factory=dict)  # `--set`: for the verl steps


class StepFailed(RuntimeError):
    """A step ran and did not pass (the message says what it saw)."""


class StepSkipped(RuntimeError):
    """A step that cannot run here (the message says why); not a failure."""


def _version(name: str) -> str:
    try:
        return metadata.version(DISTRIBUTIONS.get(name, name))
    except metadata.PackageNotFoundError:
        module = sys.modules.get(name)
        return str(getattr(module, "__version__", "?"))


def _import_report(name: str) -> tuple[bool, str]:
    """(importable, ``name version`` / ``name absent`` / ``name broken (error)``)."""
    try:
        importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name == name:
            return False, f"{name} absent"
        return False, f"{name} broken ({exc})"
    except Exception as exc:  # an installed package that fails to import (an ABI mismatch)
        return False, f"{name} broken ({type(exc).__name__}: {exc})"
    return True, f"{name} {_version(name)}"


def step_imports(check: Check) -> str:
    """Import agentspec's dependencies (all needed) and the GPU path's (reported)."""
    needed = [_import_report(name) for name in NEEDED]
    missing = [text for ok, text in needed if not ok]
    if missing:
        raise StepFailed(f"agentspec's own dependencies: {', '.join(missing)}")
    reported = [text for _, text in (_import_report(name) for name in REPORTED)]
    return ", ".join([text for _, text in needed] + reported)


def step_local(check: Check) -> str:
    """A few StepPO iterations on the local backend; tokens/s and peak GPU memory."""
    import torch

    from agentspec.runtime.backends.local import train

    settings = dict(SMALL if check.small else FULL, device=check.device)
    if check.cuda:
        name = torch.cuda.get_device_name(0)
        bf16 = torch.cuda.is_bf16_supported()
        print(f"device: {name} (bf16 autocast: {'on' if bf16 else 'off'})")
        torch.cuda.reset_peak_memory_stats()
    else:
        print("device: cpu (float32)")
    print(f"torch {torch.__version__}; settings: {json.dumps(settings)}")
    started = time.perf_counter()
    run = train(SPEC, (check.out or check.scratch) / "local", settings)
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    iterations = [r for r in records if "perf/rollout_tokens_per_s" in r]
    for r in iterations:
        print(
            f"iteration {r['iteration']}: rollout {r['perf/rollout_tokens_per_s']:.0f} tok/s, "
            f"update {r['perf/update_tokens_per_s']:.0f} tok/s, {r['perf/iteration_s']:.1f} s"
        )
    timed = iterations[1:] or iterations  # the first iteration warms up kernels and caches
    rollout = statistics.median(r["perf/rollout_tokens_per_s"] for r in timed)
    update = statistics.median(r["perf/update_tokens_per_s"] for r in timed)
    print(f"rollout tokens/s (median): {rollout:.0f}")
    print(f"update tokens/s (median): {update:.0f}")
    peak = f"{torch.cuda.max_memory_allocated() / 2**30:.2f} GiB" if check.cuda else "n/a (cpu)"
    print(f"peak GPU memory: {peak}")
    print(f"total: {time.perf_counter() - started:.0f} s for {len(iterations)} iterations")
    return f"rollout {rollout:.0f} tok/s, update {update:.0f} tok/s, peak {peak}"


def _verl_settings(check: Check, **extra: str) -> dict[str, str]:
    return {**VERL_COMMON, **(VERL_CPU if check.small else VERL_GPU), **check.extra, **extra}


def _agentspec_train(
    run: Path, settings: dict[str, str], *flags: str
) -> subprocess.CompletedProcess:
    """``agentspec train specs/calculator.yaml --backend verl`` in its own process (verl's
    workers and vLLM get the GPUs, not this process's allocations)."""
    args = [sys.executable, "-m", "agentspec.cli", "train", str(SPEC), "--backend", "verl"]
    args += ["--out", str(run), *flags]
    for key, value in settings.items():
        args += ["--set", f"{key}={value}"]
    path = [str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    return subprocess.run(args, capture_output=True, text=True, env=env, cwd=ROOT, check=False)


def step_dry_run(check: Check) -> str:
    """The verl dry run: verl validates the config; the attention line is what it chose."""
    result = _agentspec_train(check.scratch / "dry-run", _verl_settings(check), "--dry-run")
    if result.returncode != 0:
        raise StepFailed(f"exit {result.returncode}: {result.stderr.strip()[-2000:]}")
    lines = [line for line in result.stdout.splitlines() if line.startswith("# attention:")]
    if not lines:
        raise StepFailed("the dry run printed no attention line")
    return lines[0].removeprefix("# ")


def _last_training_record(run: Path) -> dict[str, float]:
    path = run / "metrics.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    train = [r for r in records if "loss/policy" in r]
    if not train:
        raise StepFailed(f"no training iteration in {path}")
    return train[-1]


def _verl_iteration(check: Check, name: str, **extra: str) -> str:
    """One StepPO iteration with the critic on verl, judged on its metrics."""
    run = (check.out or check.scratch) / name
    result = _agentspec_train(run, _verl_settings(check, **extra))
    if result.returncode != 0:
        raise StepFailed(f"exit {result.returncode}: {result.stderr.strip()[-3000:]}")
    record = _last_training_record(run)
    ratio = record.get("verl/actor/agentspec_step_ratio_mean", math.nan)
    value_loss = record.get("loss/value", math.nan)
    diff = record.get("verl/training/rollout_probs_diff_mean", math.nan)
    seen = f"step ratio {ratio:.4f}, critic loss {value_loss:.4f}, rollout-vs-trainer prob diff {diff:.4f}"
    if not (math.isfinite(ratio) and math.isfinite(value_loss)):
        raise StepFailed(f"missing metrics: {seen}")
    if not diff < MAX_PROBS_DIFF:
        raise StepFailed(f"{seen}: the difference is not below {MAX_PROBS_DIFF}")
    return seen


def step_verl(check: Check) -> str:
    return _verl_iteration(check, "verl")


def step_default(check: Check) -> str:
    """The default model on vLLM: refused before launch, with the sizes that fit."""
    if not check.cuda:
        raise StepSkipped("the CPU path serves any head size")
    settings = _verl_settings(check, model="builtin:tiny")
    result = _agentspec_train(check.scratch / "default", settings, "--dry-run")
    if result.returncode != 2 or "head size 16" not in result.stderr:
        raise StepFailed(
            f"exit {result.returncode}, expected the head-size refusal: "
            f"{result.stderr.strip()[-2000:]}"
        )
    return "builtin:tiny refused before launch: " + result.stderr.strip().splitlines()[-1][:160]


def step_two_gpus(check: Check) -> str:
    import torch

    if not check.cuda:
        raise StepSkipped("the CPU form")
    if torch.cuda.device_count() < 2:
        raise StepSkipped(f"{torch.cuda.device_count()} GPU visible")
    return _verl_iteration(check, "2-gpu", **{"trainer.n_gpus_per_node": "2"})


STEP_FUNCTIONS: dict[str, Callable[[Check], str]] = {
    "imports": step_imports,
    "local": step_local,
    "dry-run": step_dry_run,
    "verl": step_verl,
    "default": step_default,
    "2-gpu": step_two_gpus,
}


def _run_step(name: str, check: Check) -> bool:
    """Run one step and print its line; whether it did not fail."""
    started = time.perf_counter()
    try:
        status, detail = "ok", STEP_FUNCTIONS[name](check)
    except StepSkipped as exc:
        status, detail = "skipped", str(exc)
    except StepFailed as exc:
        status, detail = "FAILED", str(exc)
    took = time.perf_counter() - started
    budget = "" if check.small else f" (budget {BUDGETS_S[name]} s)"
    slow = " OVER BUDGET" if not check.small and took > BUDGETS_S[name] else ""
    print(f"[{name}] {status} {took:.0f} s{budget}{slow}: {detail}", flush=True)
    return status != "FAILED"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="the CPU-sized form (CI)")
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu", "auto"])
    parser.add_argument("--steps", default=",".join(STEPS), help="comma-separated subset")
    parser.add_argument("--out", type=Path, default=None, help="keep the runs here")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        dest="settings",
        metavar="KEY=VALUE",
        help="a setting for the verl steps' runs (as agentspec train --set)",
    )
    args = parser.parse_args(argv)
    bad = [pair for pair in args.settings if "=" not in pair]
    if bad:
        parser.error(f"--set takes KEY=VALUE, got {bad[0]!r}")
    extra = dict(pair.split("=", 1) for pair in args.settings)
    steps = [s.strip() for s in args.steps.split(",") if s.strip()]
    unknown = [s for s in steps if s not in STEP_FUNCTIONS]
    if unknown:
        parser.error(f"unknown steps {unknown}; choose from {', '.join(STEPS)}")
    try:
        import torch
    except ImportError:
        sys.exit("gpu_check: torch is not installed (pip install 'agentspec[train]')")
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("gpu_check: torch sees no CUDA GPU (use --device cpu --small for a dry run)")
    cuda = args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available())
    with tempfile.TemporaryDirectory() as tmp:
        check = Check(args.small, "cuda" if cuda else "cpu", cuda, Path(tmp), args.out, extra)
        ok = [_run_step(name, check) for name in steps]
    print("gpu_check: all steps passed" if all(ok) else "gpu_check: FAILED")
    return 0 if all(ok) else 1


if __name__ == "__main__":
    raise SystemExit(main())
