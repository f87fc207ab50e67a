"""`agentspec train SPEC --backend verl`: compile, start Ray, run verl's ``main_ppo``.

:func:`train_verl` writes the verl target into ``RUN/target`` (see
:mod:`.compile_target`), builds the ``builtin:tiny`` model there if the spec
asks for it, composes verl's Hydra config from the generated overrides plus the
user's (``RUN/config.yaml``, resolved), starts Ray (or joins ``ray_address``)
with agentspec's plugin in every worker, and runs verl's own trainer
(``main_ppo``'s ``run_ppo`` with ``TaskRunnerV1`` and ``trainer.v1.trainer_mode=agentspec``).
verl's metrics are streamed into the run directory's format:

    RUN/config.yaml         the resolved verl config
    RUN/metrics.jsonl       one JSON object per verl step: ``iteration``,
                            ``rollout/success``, ``reward/<component>``,
                            ``reward/total``, ``loss/policy``, ``actor/kl``,
                            ``actor/entropy``, ``perf/tokens_per_s``, ``eval/...``
                            and every verl metric under ``verl/<name>``
    RUN/checkpoints/        verl's checkpoints (``global_step_N/``)
    RUN/verl_metrics.jsonl  verl's own file logger output
    RUN/agent_loop_errors.log  tracebacks of failed episodes (if any)

Without a GPU (or with ``trainer.device=cpu``) the CPU path of :mod:`.cpu` is
used: the ``cpu`` platform, the transformers rollout, Ray with logical GPUs.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from agentspec.runtime.backends.verl import PLUGIN_MODULE, check_verl_version
from agentspec.runtime.backends.verl.compile_target import (
    VerlTarget,
    build_verl_target,
    cpu_overrides,
    gpu_overrides,
)

__all__ = [
    "VerlSetupError",
    "compose_config",
    "convert_metrics",
    "prepare_run",
    "train_verl",
    "worker_env",
]


class VerlSetupError(ValueError):
    """The run cannot be set up (bad settings, a missing teacher or model): nothing started."""


def _has_cuda() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def _model_path(target: VerlTarget) -> str:
    model = str(target.training.get("model", "builtin:tiny"))
    if model == "builtin:tiny":
        if not (target.model_dir / "config.json").exists():
            from agentspec.runtime.text.task_text import task_corpus
            from agentspec.runtime.text.tiny_model import build_tiny

            samples = target.module.load_samples(limit=256)  # the spec's own split
            build_tiny(task_corpus(target.module, samples), target.model_dir)
        return str(target.model_dir)
    if model.startswith("builtin:"):
        raise ValueError(
            f"model {model!r}: the verl backend builds only builtin:tiny; give a local "
            "Hugging Face checkpoint directory for anything larger"
        )
    from agentspec.runtime.backends.local.convert import checkpoint_dir

    return str(checkpoint_dir(model).resolve())  # any model name: a GGUF converted once


def _critic_checkpoint(model_path: str, directory: Path) -> str:
    """The critic's starting point on the CPU path: the policy's checkpoint as a
    one-label ``*ForTokenClassification`` model (see ``cpu.rollout.CpuValueEngine``)."""
    if not (directory / "config.json").exists():
        from transformers import AutoModelForTokenClassification

        from agentspec.runtime.text.tiny_model import load_tiny

        _, tokenizer = load_tiny(model_path)
        critic = AutoModelForTokenClassification.from_pretrained(
            model_path, num_labels=1, dtype="float32"
        )
        critic.save_pretrained(directory)
        tokenizer.save_pretrained(directory)
    return str(directory)


def prepare_run(
    spec_path: str | Path,
    out_dir: str | Path,
    overrides: Mapping[str, str] | None = None,
    *,
    cpu: bool | None = None,
) -> tuple[VerlTarget, dict[str, str]]:
    """Compile the target into ``out_dir/target``, build the model, merge the overrides.

    ``overrides`` holds two kinds of keys: a plain name (``algorithm``,
    ``group_size``) replaces a setting of the spec's ``training`` section; a dotted
    path (``data.train_batch_size``, ``+trainer.v1.agentspec.omega``) is a Hydra
    override of verl's config. Returns the target and the full override map
    (generated, then CPU, then the user's, which win).
    """
    run = Path(out_dir).resolve()
    training = {k: yaml.safe_load(str(v)) for k, v in (overrides or {}).items() if "." not in k}
    target, _ = build_verl_target(spec_path, run / "target", training=training)
    user = {k: str(v) for k, v in (overrides or {}).items() if "." in k}
    if cpu is None:
        cpu = user.get("trainer.device", "cpu" if not _has_cuda() else "cuda") == "cpu"
    model = _model_path(target)
    merged = gpu_overrides(target, model)
    if cpu:
        merged.update(cpu_overrides())
        if merged.get("critic.enable") == "True":
            merged["critic.model.path"] = _critic_checkpoint(model, target.out_dir / "critic")
            merged["+critic.model.override_config.attn_implementation"] = "sdpa"
    merged.update(
        {
            "trainer.default_local_dir": str(run / "checkpoints"),
            "trainer.validation_data_dir": str(run / "validation"),
            "+trainer.v1.agentspec.error_file": str(run / "agent_loop_errors.log"),
        }
    )
    for key, value in user.items():
        plain = key.lstrip("+")
        merged.pop(plain, None)
        merged.pop("+" + plain, None)
        merged[key] = value
    return target, merged


def worker_env(target: VerlTarget, run: Path, *, cpu: bool) -> dict[str, str]:
    """Environment of every Ray worker: the plugin, the generated modules, the file logger."""
    path = os.pathsep.join(p for p in (str(target.out_dir), os.environ.get("PYTHONPATH", "")) if p)
    env = {
        "VERL_USE_EXTERNAL_MODULES": PLUGIN_MODULE,
        "PYTHONPATH": path,
        "VERL_FILE_LOGGER_PATH": str(run / "verl_metrics.jsonl"),
        "TOKENIZERS_PARALLELISM": "false",
        "TRANSFER_QUEUE_ENABLE": "1",
    }
    if cpu:
        env.update({"VERL_PLATFORM": "cpu", "OMP_NUM_THREADS": "1"})
    return env


def compose_config(overrides: Mapping[str, str]) -> Any:
    """verl's ``ppo_trainer`` config with ``overrides``, as ``main_ppo`` composes it."""
    from hydra import compose, initialize_config_module

    with initialize_config_module(config_module="verl.trainer.config", version_base=None):
        return compose("ppo_trainer", overrides=[f"{k}={v}" for k, v in overrides.items()])


_RENAMES = {
    "actor/pg_loss": "loss/policy",
    "critic/vf_loss": "loss/value",
    "actor/kl_loss": "actor/kl",
    "actor/entropy": "actor/entropy",
    "actor/pg_clipfrac": "actor/clipfrac",
    "perf/throughput": "perf/tokens_per_s",
    "critic/score/mean": "reward/total",
    "timing_s/step": "perf/step_s",
}


def convert_metrics(step: int, data: Mapping[str, Any]) -> dict[str, Any]:
    """One verl log record in the run-directory format (see the module docstring)."""
    out: dict[str, Any] = {"iteration": int(step)}
    for key, value in data.items():
        try:
            number = float(value)
        except (TypeError, ValueError):
            continue
        if not math.isfinite(number):
            number = float("nan")
        out[f"verl/{key}"] = number
        if key in _RENAMES:
            out[_RENAMES[key]] = number
        elif key.startswith(("reward/", "rollout/", "opd/")):  # the agentspec trainer's own
            out[key] = number
        elif key.startswith(("val-core/", "val-aux/")):
            # val-core/<source>/<metric>/mean@1 -> eval/<metric>
            parts = key.split("/")
            if len(parts) >= 4 and parts[-1].startswith("mean@"):
                name = "/".join(parts[2:-1]).removeprefix("reward/")
                name = "success" if name == "success" else name
                out.setdefault(f"eval/{name}", number)
    if "actor/kl" not in out and "actor/ppo_kl" in data:
        out["actor/kl"] = float(data["actor/ppo_kl"])
    return out


class _MetricsStream:
    """Tails verl's file logger and appends converted records to ``RUN/metrics.jsonl``."""

    def __init__(self, source: Path, dest: Path) -> None:
        self.source, self.dest = source, dest
        self.stop = threading.Event()
        self.offset = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> _MetricsStream:
        self.dest.write_text("")
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=5)
        self.flush()

    def _run(self) -> None:
        while not self.stop.wait(1.0):
            self.flush()

    def flush(self) -> None:
        if not self.source.exists():
            return
        with self.source.open("rb") as f:
            f.seek(self.offset)
            chunk = f.read()
        complete = chunk[: chunk.rfind(b"\n") + 1]
        self.offset += len(complete)
        with self.dest.open("a", encoding="utf-8") as out:
            for line in complete.decode("utf-8").splitlines():
                if line.strip():
                    record = json.loads(line)
                    out.write(json.dumps(convert_metrics(record["step"], record["data"])) + "\n")


@contextlib.contextmanager
def _process_env(env: Mapping[str, str], module_dir: Path) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    added = str(module_dir) not in sys.path
    if added:
        sys.path.insert(0, str(module_dir))
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        if added and str(module_dir) in sys.path:
            sys.path.remove(str(module_dir))


def _run_main_ppo(
    run: Path,
    overrides: Mapping[str, str],
    env: dict[str, str],
    *,
    cpu: bool,
    ray_address: str | None,
) -> None:
    """Compose and validate verl's config, start or join Ray, run ``main_ppo``'s ``run_ppo``."""
    import ray
    from omegaconf import OmegaConf

    from agentspec.runtime.backends.verl.plugin import register_all

    # `import verl` loads the plugin only in a process that had not imported verl yet
    register_all()
    from verl.trainer.main_ppo import TaskRunnerV1, run_ppo
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    config = compose_config(overrides)
    (run / "config.yaml").write_text(OmegaConf.to_yaml(config, resolve=True))
    validate_config(
        config=config,
        use_reference_policy=need_reference_policy(config),
        use_critic=need_critic(config),
    )
    started = False
    if not ray.is_initialized():
        if ray_address:
            ray.init(address=ray_address, runtime_env={"env_vars": env})
        else:
            ray.init(
                num_cpus=max(16, os.cpu_count() or 1),
                num_gpus=int(config.trainer.n_gpus_per_node) if cpu else None,
                runtime_env={"env_vars": env},
                include_dashboard=False,
            )
        started = True
    try:
        with _MetricsStream(run / "verl_metrics.jsonl", run / "metrics.jsonl"):
            run_ppo(config, task_runner_class=TaskRunnerV1)
    finally:
        if started:
            ray.shutdown()


def train_verl(
    spec_path: str | Path,
    out_dir: str | Path,
    overrides: dict[str, str],
    ray_address: str | None,
) -> Path:
    """Train ``spec_path`` with verl's own trainer; returns the run directory ``out_dir``.

    Args:
        overrides: ``--set KEY=VALUE`` pairs. A plain key (``algorithm``,
            ``group_size``, ``iterations``) replaces a setting of the spec's
            ``training`` section; a dotted key is a Hydra override of
            ``verl.trainer.main_ppo`` applied last (a leading ``+`` adds a key verl
            does not declare).
        ray_address: join this Ray cluster (``auto`` or ``HOST:PORT``) instead of
            starting a local one. Workers must see agentspec installed.

    Raises whatever verl raises (a failure inside a Ray worker arrives as
    ``ray.exceptions.RayTaskError`` carrying the worker's traceback).
    """
    check_verl_version()
    run = Path(out_dir).resolve()
    run.mkdir(parents=True, exist_ok=True)
    target, merged, env, cpu = prepared_run(spec_path, run, dict(overrides or {}))
    # this process is the run's driver and imports verl too; its environment and
    # sys.path are restored afterwards (train_verl may run inside a test session)
    with _process_env(env, target.out_dir):
        _run_main_ppo(run, merged, env, cpu=cpu, ray_address=ray_address)
    return run


def prepared_run(
    spec_path: str | Path, run: Path, user: dict[str, Any]
) -> tuple[Any, dict[str, Any], dict[str, str], bool]:
    """Compile the verl target into ``run`` and merge the overrides: the target, the
    merged overrides, the workers' environment and whether the run is on CPU."""
    cpu = user.get("trainer.device", "cpu" if not _has_cuda() else "cuda") == "cpu"
    try:
        target, merged = prepare_run(spec_path, run, user, cpu=cpu)
    except (ValueError, FileNotFoundError) as exc:
        raise VerlSetupError(str(exc)) from exc
    return target, merged, worker_env(target, run, cpu=cpu), cpu


def main(argv: list[str] | None = None) -> int:
    """``python -m agentspec.runtime.backends.verl.launcher SPEC RUN [KEY=VALUE ...]``."""
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec")
    parser.add_argument("run")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides KEY=VALUE")
    parser.add_argument("--ray-address", default=None)
    args = parser.parse_args(argv)
    pairs = dict(o.split("=", 1) for o in args.overrides)
    print(train_verl(args.spec, args.run, pairs, args.ray_address))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
