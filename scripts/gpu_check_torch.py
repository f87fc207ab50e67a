"""The torch-only steps of ``scripts/gpu_check.sh --torch-only``: a box with torch and
transformers only (no verl, Ray or vLLM).

- :func:`bring_dependencies`: agentspec's own small dependencies that the box lacks
  (pydantic, lark, typer, …: pure Python or small wheels) installed with pip into the
  check's scratch folder, from ``--wheels DIR`` (no network) or the package index;
  what was brought is reported on the ``imports`` line;
- ``critic-model``: the critic verl's workers build (:mod:`agentspec.runtime.backends.
  verl.critic_model`: the policy checkpoint as a one-label ``*ForTokenClassification``,
  the attention the launcher would choose), on the device: the body is the checkpoint's,
  the values finite;
- ``teacher``: the OPD teacher scorer in bfloat16 against float32 on the same rows;
- ``losses``: agentspec's policy and value losses on the device against the CPU on the
  same inputs (and their gradients).

Each returns its report line or raises :class:`StepFailed`. This module holds the
step outcomes :mod:`gpu_check` shares (it imports this one, never the reverse).
"""

from __future__ import annotations

import importlib
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


class StepFailed(RuntimeError):
    """A step ran and did not pass (the message says what it saw)."""


class StepSkipped(RuntimeError):
    """A step that cannot run here (the message says why); not a failure."""


class StepTimeout(RuntimeError):
    """A step ran past its time limit."""


# import name -> distribution, for what `--torch-only` may have to bring
SMALL_DEPENDENCIES = {
    "pydantic": "pydantic>=2.6,<3",
    "lark": "lark>=1.1.9",
    "jinja2": "jinja2>=3.1",
    "jsonschema": "jsonschema>=4.20",
    "yaml": "pyyaml>=6.0",
    "typer": "typer>=0.12",
    "rich": "rich>=13",
    "httpx": "httpx>=0.27",
    "tokenizers": "tokenizers>=0.19",
    "regex": "regex>=2023.10",
    "ruff": "ruff==0.17.6",
}
ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "specs" / "calculator.yaml"
WARM_START = {"small": 300, "full": 300}
VAL_SAMPLES = 8
"""Held-out samples of the verl step's greedy comparison (both backends take the same)."""
"""Behaviour-cloning steps of the verl step's checkpoint (its greedy episodes parse)."""
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
MAX_TEACHER_DIFF = 0.1
"""bfloat16 keeps 8 bits of mantissa: log-probs of a small model differ by a few 1e-2."""
MAX_LOSS_DIFF = 1e-4


def _importable(name: str) -> bool:
    try:
        importlib.import_module(name)
    except Exception:
        return False
    return True


def bring_dependencies(scratch: Path, wheels: Path | None) -> list[str]:
    """Install the small dependencies this interpreter lacks into ``scratch/deps`` (put
    first on ``sys.path`` and in the children's ``PYTHONPATH``); returns what was brought.
    Raises ``RuntimeError`` with pip's own message when pip cannot bring them."""
    missing = [name for name in SMALL_DEPENDENCIES if not _importable(name)]
    if not missing:
        return []
    target = scratch / "deps"
    args = [sys.executable, "-m", "pip", "install", "--quiet", "--target", str(target)]
    if wheels is not None:
        args += ["--no-index", "--find-links", str(wheels)]
    args += [SMALL_DEPENDENCIES[name] for name in missing]
    result = subprocess.run(args, capture_output=True, text=True, check=False, timeout=600)
    if result.returncode != 0:
        where = f"from {wheels}" if wheels else "from the package index"
        raise RuntimeError(
            f"missing {', '.join(missing)}; pip could not bring them {where}: "
            f"{(result.stderr or result.stdout).strip()[-600:]}"
        )
    sys.path.insert(0, str(target))
    importlib.invalidate_caches()
    return missing


def _builtin(directory: Path, shape: str) -> Path:
    """A built-in model (``tiny``, ``300m``, …) built from the calculator's text."""
    import json
    from dataclasses import asdict

    from agentspec.compiler.build import compile_spec, import_file, write_compiled
    from agentspec.runtime.backends.local.models import BUILTIN_SHAPES
    from agentspec.runtime.compiled.task_text import task_corpus
    from agentspec.runtime.text.tiny_model import build_tiny

    root = Path(__file__).resolve().parents[1]
    marker = directory / "agentspec_tiny.json"
    if marker.exists() and json.loads(marker.read_text()) == asdict(BUILTIN_SHAPES[shape]):
        return directory
    module_path, _ = write_compiled(compile_spec(root / "specs" / "calculator.yaml"), directory)
    module: Any = import_file(module_path, "gpu_check_calculator")
    samples = module.load_samples(limit=64)
    build_tiny(task_corpus(module, samples), directory / "model", config=BUILTIN_SHAPES[shape])
    marker.write_text(json.dumps(asdict(BUILTIN_SHAPES[shape])))
    return directory


def model_dir(scratch: Path, small: bool) -> Path:
    return _builtin(scratch / ("tiny" if small else "300m"), "tiny" if small else "300m") / "model"


def step_critic_model(scratch: Path, small: bool, device: str) -> str:
    """The critic as verl's workers build it, forward on ``device``."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForTokenClassification

    from agentspec.runtime.backends.verl.attention import choose_attention, flash_attn_status
    from agentspec.runtime.backends.verl.critic_model import value_model_config

    path = model_dir(scratch, small)
    config = value_model_config(AutoConfig.from_pretrained(path))
    attention = choose_attention() if device == "cuda" else "sdpa"
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    critic = AutoModelForTokenClassification.from_pretrained(
        path, config=config, dtype=dtype, attn_implementation=attention
    ).to(device)
    policy = AutoModelForCausalLM.from_pretrained(path, dtype=dtype)
    body = dict(policy.named_parameters())
    same = [
        name
        for name, p in critic.named_parameters()
        if name in body and torch.equal(p.detach().cpu(), body[name].detach())
    ]
    if len(same) < len(body) - 1:  # all but the LM head: the body is the checkpoint's
        raise StepFailed(f"only {len(same)} of {len(body)} body tensors loaded from {path}")
    ids = torch.randint(
        3, int(config.vocab_size), (2, 12), generator=torch.Generator().manual_seed(0)
    )
    mask = torch.ones_like(ids)
    mask[1, 8:] = 0
    with torch.no_grad():
        values = critic(input_ids=ids.to(device), attention_mask=mask.to(device)).logits
    if tuple(values.shape) != (2, 12, 1) or not bool(torch.isfinite(values[mask.bool()]).all()):
        raise StepFailed(
            f"values of shape {tuple(values.shape)}, finite: {values.isfinite().all()}"
        )
    return (
        f"{config.architectures[0]}, attention {attention} (flash_attn {flash_attn_status()}), "
        f"{len(same)} body tensors from the checkpoint, values finite"
    )


def step_teacher(scratch: Path, small: bool, device: str) -> str:
    """The OPD teacher scorer in bfloat16 against float32, on the same rows."""
    import torch

    from agentspec.runtime.backends.verl.teacher import TeacherScorer

    path = model_dir(scratch, small)
    gen = torch.Generator().manual_seed(0)
    prompts = [torch.randint(3, 200, (n,), generator=gen) for n in (5, 9, 3, 7)]
    responses = [torch.randint(3, 200, (n,), generator=gen) for n in (6, 2, 8, 4)]
    scores = {}
    for dtype in ("bfloat16", "float32"):
        scorer = TeacherScorer(path, path, 1.0, device=device, dtype=dtype)
        scores[dtype] = scorer.log_probs(prompts, responses, width=8)
    diff = float((scores["bfloat16"] - scores["float32"]).abs().max())
    if not diff < MAX_TEACHER_DIFF:
        raise StepFailed(f"bfloat16 and float32 log-probs differ by {diff:.4f}")
    return f"bfloat16 vs float32 log-probs on {device}: max difference {diff:.4f}"


def step_losses(device: str) -> str:
    """agentspec's losses and their gradients on ``device`` against the CPU."""
    import torch

    from agentspec.runtime.algorithms import POLICY_LOSSES
    from agentspec.runtime.algorithms.losses import PolicyLossConfig, policy_loss, value_loss

    gen = torch.Generator().manual_seed(0)
    n, t = 6, 10
    inputs = {
        "log_probs": -torch.rand(n, t, generator=gen) * 3,
        "old_log_probs": -torch.rand(n, t, generator=gen) * 3,
        "advantages": torch.randn(n, t, generator=gen),
        "response_mask": torch.rand(n, t, generator=gen) > 0.2,
        "weights": torch.rand(n, t, generator=gen) / (n * t),
    }
    worst = 0.0
    for name in POLICY_LOSSES.names():
        results = []
        for where in ("cpu", device):
            x = {k: v.to(where) for k, v in inputs.items()}
            x["log_probs"] = x["log_probs"].clone().requires_grad_(True)
            out = policy_loss(name, **x, config=PolicyLossConfig())
            out.loss.backward()
            results.append((out.loss.detach().cpu(), x["log_probs"].grad.cpu()))
        worst = max(worst, *(float((a - b).abs().max()) for a, b in zip(*results, strict=True)))
    value_results = []
    for where in ("cpu", device):
        values = inputs["advantages"].to(where).clone().requires_grad_(True)
        old, returns = inputs["old_log_probs"].to(where), inputs["log_probs"].to(where)
        out = value_loss(values, old, returns, inputs["weights"].to(where))
        out.loss.backward()
        value_results.append((out.loss.detach().cpu(), values.grad.cpu()))
    pairs = zip(*value_results, strict=True)
    worst = max(worst, *(float((a - b).abs().max()) for a, b in pairs))
    if not worst < MAX_LOSS_DIFF:
        raise StepFailed(f"losses differ between cpu and {device} by {worst:.2e}")
    names = ", ".join(POLICY_LOSSES.names())
    return f"policy losses {names} and the value loss: cpu vs {device}, max difference {worst:.1e}"


def step_local(check: Any) -> str:
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


def warm_checkpoint(check: Any) -> tuple[Path, float]:
    """The policy the local backend warm-starts (behaviour cloning on the oracle's
    episodes): its checkpoint and the mean reward of its greedy held-out episodes."""
    from agentspec.runtime.backends.local import train

    form = "small" if check.small else "full"
    settings = {
        **(SMALL if check.small else FULL),
        "device": check.device,
        "warm_start": WARM_START[form],
        "iterations": 1,
        "eval_every": 1,
        "eval_samples": VAL_SAMPLES,
    }
    run = train(SPEC, (check.out or check.scratch) / "warm", settings)
    first = json.loads((run / "metrics.jsonl").read_text().splitlines()[0])
    return run / "checkpoints" / "iter_000000" / "policy", float(first["eval/reward"])
