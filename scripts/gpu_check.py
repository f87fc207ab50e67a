"""The GPU check behind ``scripts/gpu_check.sh``: StepPO on the calculator spec, on CUDA.

Runs the LOCAL backend in this process (no verl, Ray or vLLM; nothing is
downloaded: the ``builtin:300m`` policy, ~285M parameters, and its tokenizer are
built from the task's text) for a few StepPO iterations with
``training.device=cuda`` (bfloat16 autocast where the GPU supports it), then
prints, per iteration and as the median over the iterations after the first
(a warm-up): rollout tokens/s (generated tokens over rollout time), update
tokens/s (tokens the scoring and update passes processed over their time), and
the peak GPU memory torch allocated.

``--small`` shrinks everything (``builtin:tiny``, one iteration, a handful of
episodes) and runs on whatever device ``--device`` names, so a CPU-only test can
run the script end to end.
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
import sys
import tempfile
import time
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


def _check_imports() -> None:
    missing = []
    for name in NEEDED:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    if missing:
        sys.exit(f"gpu_check: missing Python packages: {', '.join(missing)} (agentspec's own deps)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="a tiny run (CI, CPU)")
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu", "auto"])
    parser.add_argument("--iterations", type=int, default=None)
    parser.add_argument(
        "--out", type=Path, default=None, help="run directory (default: a temp dir)"
    )
    args = parser.parse_args(argv)
    _check_imports()
    import torch

    from agentspec.runtime.backends.local import train

    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("gpu_check: torch sees no CUDA GPU (use --device cpu --small for a dry run)")
    settings = dict(SMALL if args.small else FULL, device=args.device)
    if args.iterations is not None:
        settings["iterations"] = args.iterations
    cuda = args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available())
    if cuda:
        name = torch.cuda.get_device_name(0)
        bf16 = torch.cuda.is_bf16_supported()
        print(f"device: {name} (bf16 autocast: {'on' if bf16 else 'off'})")
        torch.cuda.reset_peak_memory_stats()
    else:
        print("device: cpu (float32)")
    print(f"torch {torch.__version__}; settings: {json.dumps(settings)}")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        run = train(SPEC, args.out or Path(tmp) / "run", settings)
        records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    total = time.perf_counter() - started
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
    if cuda:
        print(f"peak GPU memory: {torch.cuda.max_memory_allocated() / 2**30:.2f} GiB")
    else:
        print("peak GPU memory: n/a (cpu)")
    print(f"total: {total:.0f} s for {len(iterations)} iterations")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
