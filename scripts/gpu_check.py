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
- ``verl``: one StepPO iteration with the critic on verl (FSDP, the vLLM rollout
  and its weight sync, the generated agent loop and agentspec's plugin inside
  verl's workers), from a checkpoint the local backend warm-started
  (behaviour cloning on the oracle). vLLM starts with dummy weights: the greedy
  validation verl runs before training must give the local backend's greedy
  reward of that checkpoint on the same held-out samples (exactly on a CPU, within
  0.1 on a GPU). Passes when it does and the metrics show
  the step ratio, the critic's loss, and a rollout-vs-trainer probability
  difference (verl's ``training/rollout_probs_diff_mean``) below 0.05;
- ``default``: the default model ``builtin:tiny`` on vLLM is refused before
  launch with the head-size error (GPU form only);
- ``2-gpu``: the ``verl`` step on two GPUs (data parallel 2: agentspec's losses'
  global-batch path), when two are visible.

``--torch-only`` is the form for a box with torch and transformers only: the steps
``imports`` (bringing agentspec's small dependencies it lacks, with pip, from
``--wheels DIR`` or the index), ``local``, ``critic-model``, ``teacher`` and
``losses`` (:mod:`gpu_check_torch`). Every step runs under a time limit
(``--step-timeout``, default twice its budget; a step past it fails), any error a
step raises is its failure, and the last line is the summary whatever failed.

``--small --device cpu`` is the CPU-sized form a test runs: ``builtin:tiny``, a
handful of episodes, verl's CPU path. ``--set KEY=VALUE`` (repeatable) adds a setting
to the verl steps' runs, as ``agentspec train --set`` does (the test trains two
iterations and dumps verl's advantages to compare them with agentspec's).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from gpu_check_torch import (
    VAL_SAMPLES,
    StepFailed,
    StepSkipped,
    StepTimeout,
    bring_dependencies,
    step_critic_model,
    step_local,
    step_losses,
    step_teacher,
    warm_checkpoint,
)

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "specs" / "calculator.yaml"

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
VERL_COMMON = {  # the held-out samples are the local backend's (the same VAL_SAMPLES)
    "algorithm": "steppo",
    "critic_warmup": "0",  # the actor updates in the one iteration: the step ratio is logged
    "iterations": "1",
    "epochs": "1",
    "eval_samples": str(VAL_SAMPLES),
    "eval_every": "1000",
    "checkpoint_every": "1000",
    "data.val_max_samples": str(VAL_SAMPLES),
}
MAX_PROBS_DIFF = 0.05
MAX_REWARD_DIFF = {"cpu": 1e-6, "cuda": 0.1}
"""Greedy episodes of one checkpoint on the same held-out samples give the same rewards on
both backends: exactly in float32 on a CPU, up to bfloat16's rare argmax flips on a GPU.
vLLM's dummy weights, never replaced, or any other model give other episodes."""
BUDGETS_S = {
    "imports": 60,
    "local": 600,
    "dry-run": 120,
    "verl": 1200,
    "default": 120,
    "2-gpu": 900,
    "critic-model": 120,
    "teacher": 120,
    "losses": 60,
}
"""Each step's time budget on one recent GPU (H100/H200 class); the CPU form has none."""
SMALL_LIMITS_S = {"verl": 1800, "2-gpu": 1800, "local": 900}
"""The CPU-sized form's time limits (600 s for the steps not named)."""
STEPS = ("imports", "local", "dry-run", "verl", "default", "2-gpu")
TORCH_STEPS = ("imports", "local", "critic-model", "teacher", "losses")


@dataclass
class Check:
    """What the steps share: the form (GPU or CPU-sized) and a scratch directory."""

    small: bool
    device: str
    cuda: bool
    scratch: Path
    out: Path | None = None
    extra: dict[str, str] = field(default_factory=dict)  # `--set`: for the verl steps
    torch_only: bool = False
    wheels: Path | None = None
    step_timeout: float | None = None
    deadline: float = math.inf  # the running step's end (time.monotonic())

    def limit(self, name: str) -> float:
        """The step's time limit in seconds."""
        if self.step_timeout is not None:
            return self.step_timeout
        return SMALL_LIMITS_S.get(name, 600) if self.small else 2 * BUDGETS_S[name]

    def left(self) -> float:
        return max(1.0, self.deadline - time.monotonic())


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
    """Import agentspec's dependencies (all needed) and the GPU path's (reported); in the
    torch-only form, first bring the small ones this interpreter lacks."""
    brought = []
    if check.torch_only:
        try:
            brought = bring_dependencies(check.scratch, check.wheels)
        except RuntimeError as exc:
            raise StepFailed(str(exc)) from None
        if brought:
            deps = str(check.scratch / "deps")
            os.environ["PYTHONPATH"] = os.pathsep.join(
                filter(None, [deps, os.environ.get("PYTHONPATH", "")])
            )
    needed = [_import_report(name) for name in NEEDED]
    missing = [text for ok, text in needed if not ok]
    if missing:
        raise StepFailed(f"agentspec's own dependencies: {', '.join(missing)}")
    reported = [text for _, text in (_import_report(name) for name in REPORTED)]
    line = ", ".join([text for _, text in needed] + reported)
    return line + (f"; brought: {', '.join(brought)}" if brought else "")


def _verl_settings(check: Check, **extra: str) -> dict[str, str]:
    return {**VERL_COMMON, **(VERL_CPU if check.small else VERL_GPU), **check.extra, **extra}


def _agentspec_train(
    check: Check, run: Path, settings: dict[str, str], *flags: str
) -> subprocess.CompletedProcess:
    """``agentspec train specs/calculator.yaml --backend verl`` in its own process (verl's
    workers and vLLM get the GPUs, not this process's allocations), ended with its whole
    process group (Ray's workers too) when the step's time is up."""
    args = [sys.executable, "-m", "agentspec.cli", "train", str(SPEC), "--backend", "verl"]
    args += ["--out", str(run), *flags]
    for key, value in settings.items():
        args += ["--set", f"{key}={value}"]
    path = [str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    with subprocess.Popen(
        args,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
        start_new_session=True,
    ) as proc:
        try:
            out, err = proc.communicate(timeout=check.left())
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise StepTimeout("agentspec train did not finish in time") from None
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


def step_dry_run(check: Check) -> str:
    """The verl dry run: verl validates the config; the attention line is what it chose."""
    result = _agentspec_train(check, check.scratch / "dry-run", _verl_settings(check), "--dry-run")
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
    """One StepPO iteration with the critic on verl from a warm-started checkpoint (unless
    ``--set model=…`` names another), judged on its metrics."""
    run = (check.out or check.scratch) / name
    # the reference: the local backend's greedy episodes of the warm-started checkpoint;
    # `--set model=…` gives verl's run another model (a test: a random one must fail)
    path, local = warm_checkpoint(check)
    if "model" not in check.extra:
        extra = {"model": str(path), **extra}
    result = _agentspec_train(check, run, _verl_settings(check, **extra))
    if result.returncode != 0:
        raise StepFailed(f"exit {result.returncode}: {result.stderr.strip()[-3000:]}")
    initial = _initial_reward(run)
    record = _last_training_record(run)
    ratio = record.get("verl/actor/agentspec_step_ratio_mean", math.nan)
    value_loss = record.get("loss/value", math.nan)
    diff = record.get("verl/training/rollout_probs_diff_mean", math.nan)
    seen = (
        f"greedy reward before training {initial:.3f} (local backend {local:.3f}), "
        f"step ratio {ratio:.4f}, critic loss {value_loss:.4f}, "
        f"rollout-vs-trainer prob diff {diff:.4f}"
    )
    tolerance = MAX_REWARD_DIFF[check.device]
    if not abs(initial - local) <= tolerance:
        raise StepFailed(
            f"{seen}: the rollout's greedy episodes are not the checkpoint's (the rewards "
            f"differ by more than {tolerance:g}): the checkpoint's weights did not reach "
            "the rollout"
        )
    if not (math.isfinite(ratio) and math.isfinite(value_loss)):
        raise StepFailed(f"missing metrics: {seen}")
    if not diff < MAX_PROBS_DIFF:
        raise StepFailed(f"{seen}: the difference is not below {MAX_PROBS_DIFF}")
    return seen


def _initial_reward(run: Path) -> float:
    """The mean reward of verl's greedy validation before the first update."""
    path = run / "metrics.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    first = [r for r in records if r.get("iteration") == 0 and "eval/reward" in r]
    if not first:
        raise StepFailed(f"no validation before training in {path}")
    return float(first[0]["eval/reward"])


def step_verl(check: Check) -> str:
    return _verl_iteration(check, "verl")


def step_default(check: Check) -> str:
    """The default model on vLLM: refused before launch, with the sizes that fit."""
    if not check.cuda:
        raise StepSkipped("the CPU path serves any head size")
    settings = _verl_settings(check, model="builtin:tiny")
    result = _agentspec_train(check, check.scratch / "default", settings, "--dry-run")
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
    "critic-model": lambda check: step_critic_model(check.scratch, check.small, check.device),
    "teacher": lambda check: step_teacher(check.scratch, check.small, check.device),
    "losses": lambda check: step_losses(check.device),
}


@contextlib.contextmanager
def _time_limit(check: Check, seconds: float) -> Iterator[None]:
    """Raise :class:`StepTimeout` in this (main) thread after ``seconds``; a child process
    the step starts gets what is left (:func:`_agentspec_train`)."""

    def expired(signum: int, frame: object) -> None:
        raise StepTimeout(f"over its {seconds:.0f} s limit")

    check.deadline = time.monotonic() + seconds
    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        check.deadline = math.inf


def _run_step(name: str, check: Check) -> bool:
    """Run one step and print its line; whether it did not fail. Any error is the step's
    failure (an absent module, a CUDA error), never the end of the check."""
    started = time.perf_counter()
    limit = check.limit(name)
    try:
        with _time_limit(check, limit):
            status, detail = "ok", STEP_FUNCTIONS[name](check)
    except StepSkipped as exc:
        status, detail = "skipped", str(exc)
    except StepFailed as exc:
        status, detail = "FAILED", str(exc)
    except StepTimeout as exc:
        status, detail = "FAILED", f"timed out ({exc}; limit {limit:.0f} s)"
    except Exception as exc:
        status, detail = "FAILED", f"{type(exc).__name__}: {exc}"[-3000:]
    took = time.perf_counter() - started
    budget = "" if check.small else f" (budget {BUDGETS_S[name]} s)"
    slow = " OVER BUDGET" if not check.small and took > BUDGETS_S[name] else ""
    print(f"[{name}] {status} {took:.0f} s{budget}{slow}: {detail}", flush=True)
    return status != "FAILED"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="the CPU-sized form (CI)")
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu", "auto"])
    parser.add_argument("--steps", default=None, help="comma-separated subset")
    parser.add_argument("--out", type=Path, default=None, help="keep the runs here")
    parser.add_argument(
        "--torch-only", action="store_true", help="a box with torch and transformers only"
    )
    parser.add_argument(
        "--wheels", type=Path, default=None, help="--torch-only: bring dependencies from here"
    )
    parser.add_argument(
        "--step-timeout", type=float, default=None, help="seconds per step (default: 2 × budget)"
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        dest="settings",
        metavar="KEY=VALUE",
        help="a setting for the verl steps' runs (as agentspec train --set)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    bad = [pair for pair in args.settings if "=" not in pair]
    if bad:
        parser.error(f"--set takes KEY=VALUE, got {bad[0]!r}")
    extra = dict(pair.split("=", 1) for pair in args.settings)
    default = TORCH_STEPS if args.torch_only else STEPS
    steps = [s.strip() for s in (args.steps or ",".join(default)).split(",") if s.strip()]
    unknown = [s for s in steps if s not in STEP_FUNCTIONS]
    if unknown:
        parser.error(f"unknown steps {unknown}; choose from {', '.join(STEP_FUNCTIONS)}")
    failed: list[str] = []
    try:
        failed = _run_steps(args, steps, extra)
    except Exception as exc:  # before any step (no torch, no CUDA): still a summary line
        print(f"gpu_check: {exc}", file=sys.stderr, flush=True)
        failed = ["setup"]
    finally:
        print(
            "gpu_check: all steps passed"
            if not failed
            else f"gpu_check: FAILED ({', '.join(failed)})"
        )
    return 0 if not failed else 1


def _run_steps(args: argparse.Namespace, steps: list[str], extra: dict[str, str]) -> list[str]:
    """Run ``steps``; the names of those that failed."""
    try:
        import torch
    except ImportError:
        raise RuntimeError("torch is not installed (pip install 'agentspec-rl[train]')") from None
    if args.device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("torch sees no CUDA GPU (use --device cpu for a CPU run)")
    cuda = args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available())
    with tempfile.TemporaryDirectory() as tmp:
        check = Check(
            args.small,
            "cuda" if cuda else "cpu",
            cuda,
            Path(tmp),
            args.out,
            extra,
            torch_only=args.torch_only,
            wheels=args.wheels,
            step_timeout=args.step_timeout,
        )
        return [name for name in steps if not _run_step(name, check)]


if __name__ == "__main__":
    raise SystemExit(main())
