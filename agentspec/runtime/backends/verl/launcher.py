"""`agentspec train SPEC --backend verl`: compile, start Ray, run verl's ``main_ppo``.

:func:`train_verl` writes the verl target into ``RUN/target`` (see
:mod:`.compile_target`), builds a ``builtin:*`` model there if the spec asks for
one, composes verl's Hydra config from the generated overrides plus the user's
(``RUN/config.yaml``, resolved) and runs verl's own trainer (``main_ppo``'s
``run_ppo`` with ``TaskRunnerV1`` and ``trainer.v1.trainer_mode=agentspec``),
which starts Ray (or joins ``ray_address``) with agentspec's plugin in every
worker. Before anything starts it names the attention of every model verl builds
(:mod:`.attention`), refuses a model vLLM cannot serve (:mod:`.vllm_rollout`)
and checks the OPD teacher's placement (:mod:`.placement`).
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

One launch path: the run and the standalone command that ``--dry-run`` prints
give ``main_ppo`` the same overrides (:func:`.ray_env.launch_overrides`: the Ray start-up
settings and the workers' environment under ``ray_kwargs.ray_init``), and both
leave ``ray.init`` to verl's ``run_ppo``, which adds its own worker environment
(``get_ppo_ray_runtime_env``: vLLM and NCCL settings) under ours.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentspec.compiler.package_files import PackageFileError
from agentspec.core.diagnostics import waived_by
from agentspec.runtime.backends.verl import (
    KL_IN_REWARD_REFUSED,
    check_verl_version,
)
from agentspec.runtime.backends.verl.attention import (
    SDPA,
    attention_note,
    attention_overrides,
    choose_attention,
)
from agentspec.runtime.backends.verl.counts import count_problems, fit_micro_batches
from agentspec.runtime.backends.verl.metrics import MetricsStream, convert_metrics
from agentspec.runtime.backends.verl.placement import TeacherPlacement, teacher_placement
from agentspec.runtime.backends.verl.ray_env import (
    CHECKPOINTS_ON_A_CLUSTER,
    launch_overrides,
    setting,
    worker_env,
)
from agentspec.runtime.backends.verl.run_folder import (
    VerlTarget,
    build_verl_target,
    cpu_overrides,
    gpu_overrides,
)
from agentspec.runtime.backends.verl.shipping import (
    DriverNodeTaskRunner,
    Shipment,
    ShippingError,
    relative_inputs,
    ship_run,
)
from agentspec.runtime.backends.verl.vllm_rollout import (
    head_size,
    sampling_note,
    vllm_head_size_error,
)
from agentspec.spec.yaml_loader import read_scalar

__all__ = [
    "PreparedRun",
    "VerlSetupError",
    "compose_config",
    "convert_metrics",
    "launch",
    "prepare_run",
    "prepared_run",
    "train_verl",
]


class VerlSetupError(ValueError):
    """The run cannot be set up (bad settings, a missing teacher or model): nothing started."""


def _has_cuda() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def _model_path(target: VerlTarget) -> str:
    model = str(target.training.get("model", "builtin:tiny"))
    if model.startswith("builtin:"):
        return _builtin_model(target, model)
    from agentspec.runtime.backends.local.convert import checkpoint_dir

    return str(checkpoint_dir(model).resolve())  # any model name: a GGUF converted once


def _builtin_model(target: VerlTarget, model: str) -> str:
    """``builtin:<shape>`` built from the task's text into ``target.model_dir`` (once: a
    model already there with the same shape is kept, e.g. a warm-started one)."""
    from dataclasses import asdict

    from agentspec.runtime.backends.local.models import BUILTIN_SHAPES
    from agentspec.runtime.compiled.task_text import task_corpus
    from agentspec.runtime.text.model_names import resolve_model
    from agentspec.runtime.text.tiny_model import build_tiny

    shape = BUILTIN_SHAPES[str(resolve_model(model).shape)]  # unknown shape: a ValueError
    marker = target.model_dir / "agentspec_tiny.json"
    if not marker.exists() or json.loads(marker.read_text()) != asdict(shape):
        samples = target.module.load_samples(limit=256)  # the spec's own split
        build_tiny(task_corpus(target.module, samples), target.model_dir, config=shape)
    return str(target.model_dir)


def prepare_run(
    spec_path: str | Path,
    out_dir: str | Path,
    overrides: Mapping[str, str] | None = None,
    *,
    cpu: bool | None = None,
    attention: str | None = None,
) -> tuple[VerlTarget, dict[str, str]]:
    """Compile the target into ``out_dir/target``, build the model, merge the overrides.

    ``overrides`` holds two kinds of keys: a plain name (``algorithm``,
    ``group_size``) replaces a setting of the spec's ``training`` section; a dotted
    path (``data.train_batch_size``, ``+trainer.v1.agentspec.omega``) is a Hydra
    override of verl's config. Returns the target and the full override map
    (generated, then CPU, then the attention of every model verl builds, then the
    user's, which win). ``attention`` defaults to ``sdpa`` on the CPU and to
    :func:`.attention.choose_attention` on GPUs.
    """
    run = Path(out_dir).resolve()
    training = {k: read_scalar(str(v)) for k, v in (overrides or {}).items() if "." not in k}
    target, _ = build_verl_target(
        spec_path, run / "target", training=training, waive=waived_by(training)
    )
    user = {k: str(v) for k, v in (overrides or {}).items() if "." in k}
    if cpu is None:
        cpu = user.get("trainer.device", "cpu" if not _has_cuda() else "cuda") == "cpu"
    model = _model_path(target)
    merged = gpu_overrides(target, model)
    if cpu:
        merged.update(cpu_overrides())
    merged.update(attention_overrides(attention or (SDPA if cpu else choose_attention())))
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
    dtype_key = "trainer.v1.agentspec.teacher_dtype"
    if (
        cpu
        and setting(merged, "trainer.v1.agentspec.teacher_path")
        and dtype_key not in {k.lstrip("+") for k in user}
    ):
        # the local backend's CPU scorer is float32: the same numbers on both backends
        merged["+" + dtype_key] = "float32"
    merged = fit_micro_batches(merged, user)
    if setting(merged, "actor_rollout_ref.rollout.name") == "vllm":
        error = vllm_head_size_error(head_size(model), str(target.training.get("model")))
        if error:
            raise ValueError(error)
    return target, merged


def compose_config(overrides: Mapping[str, str]) -> Any:
    """verl's ``ppo_trainer`` config with ``overrides``, as ``main_ppo`` composes it."""
    from hydra import compose, initialize_config_module

    with initialize_config_module(config_module="verl.trainer.config", version_base=None):
        return compose("ppo_trainer", overrides=[f"{k}={v}" for k, v in overrides.items()])


@contextlib.contextmanager
def _process_env(env: Mapping[str, str], module_dir: Path, *, cwd: bool = False) -> Iterator[None]:
    """``env`` and the generated modules in this process; with ``cwd``, also the target
    folder as the working directory (a shipped run's inputs are relative to it)."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    added = str(module_dir) not in sys.path
    if added:
        sys.path.insert(0, str(module_dir))
    before = Path.cwd()
    if cwd:
        os.chdir(module_dir)
    try:
        yield
    finally:
        os.chdir(before)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        if added and str(module_dir) in sys.path:
            sys.path.remove(str(module_dir))


def launch(
    config: Any,
    env: Mapping[str, str],
    module_dir: Path,
    task_runner_class: Any = None,
) -> None:
    """Run verl's ``run_ppo`` on ``config`` (default task runner: verl's ``TaskRunnerV1``)
    with ``env`` and the generated modules in this process; ``run_ppo`` starts Ray from
    ``config.ray_kwargs`` (unless this process already joined a cluster) and this function
    shuts down a cluster it started."""
    import ray

    with _process_env(env, module_dir):
        from agentspec.runtime.backends.verl.plugin import register_all

        # `import verl` loads the plugin only in a process that had not imported verl yet
        register_all()
        from verl.trainer.main_ppo import TaskRunnerV1, run_ppo

        started = not ray.is_initialized()
        try:
            run_ppo(
                config, task_runner_class=task_runner_class or DriverNodeTaskRunner(TaskRunnerV1)
            )
        finally:
            if started and ray.is_initialized():
                ray.shutdown()


def validated_config(prepared: PreparedRun, overrides: Mapping[str, str] | None = None) -> Any:
    """verl's config composed from the run's overrides, checked first for what verl
    refuses because of the GPU count (:mod:`.counts`: located errors naming agentspec's
    settings), then by verl's ``validate_config`` (which prints its verdict: on stderr
    here) in the workers' environment. ``overrides``: other overrides than the run's
    (a printed command's), in the run's environment."""
    env, module_dir = prepared.env, prepared.target.out_dir
    overrides = prepared.overrides if overrides is None else overrides
    shipped = prepared.shipment is not None
    with _process_env(env, module_dir, cwd=shipped), warnings.catch_warnings():
        # verl lists each optional engine it cannot import (torchtitan, megatron, …) as
        # a UserWarning: noise in a dry run that uses none of them
        warnings.filterwarnings("ignore", r".* engine is not available", UserWarning)
        from agentspec.runtime.backends.verl.plugin import register_all

        register_all()
        from verl.trainer.ppo.utils import need_critic, need_reference_policy
        from verl.utils.config import validate_config

        config = compose_config(overrides)
        problems = count_problems(
            config,
            prepared.origins,
            prepared.user,
            prepared.target.training,
            local_gpus=prepared.local_gpus,
            use_critic=need_critic(config),
            use_ref=need_reference_policy(config),
        )
        if problems:
            raise VerlSetupError("\nerror: ".join(problems))
        with contextlib.redirect_stdout(sys.stderr):
            validate_config(
                config=config,
                use_reference_policy=need_reference_policy(config),
                use_critic=need_critic(config),
            )
    if config.algorithm.use_kl_in_reward:  # before Ray and the models, not at the first update
        raise VerlSetupError(KL_IN_REWARD_REFUSED)
    return config


def train_verl(
    spec_path: str | Path,
    out_dir: str | Path,
    overrides: dict[str, str],
    ray_address: str | None,
    *,
    shared_storage: bool = False,
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
        shared_storage: the run folder and ``${AGENTSPEC_DATA}`` are at the same path
            on every node: workers read them in place instead of the run being shipped
            to them (:mod:`.shipping`).

    Raises whatever verl raises (a failure inside a Ray worker arrives as
    ``ray.exceptions.RayTaskError`` carrying the worker's traceback).
    """
    from omegaconf import OmegaConf

    check_verl_version()
    run = Path(out_dir).resolve()
    run.mkdir(parents=True, exist_ok=True)
    prepared = prepared_run(
        spec_path, run, dict(overrides or {}), ray_address, shared_storage=shared_storage
    )
    for note in prepared.notes:
        print(f"note: {note}", file=sys.stderr)
    config = validated_config(prepared)
    (run / "config.yaml").write_text(OmegaConf.to_yaml(config, resolve=True))
    # this process is the run's driver and imports verl too; its environment and
    # sys.path are restored afterwards (train_verl may run inside a test session)
    with MetricsStream(run / "verl_metrics.jsonl", run / "metrics.jsonl"):
        launch(config, prepared.env, prepared.target.out_dir)
    return run


@dataclass(frozen=True)
class PreparedRun:
    """What a run (or its dry run) executes: ``main_ppo`` with ``overrides`` in ``env``."""

    target: VerlTarget
    overrides: dict[str, str]
    """``main_ppo``'s Hydra overrides, Ray's start-up settings included (:func:`launch_overrides`)."""
    env: dict[str, str]
    """The workers' environment (also the driver's, and in ``overrides``' ``ray_kwargs``)."""
    cpu: bool
    notes: list[str]
    """What the user should know before the run starts (the attention, a teacher's placement)."""
    origins: dict[str, str]
    """Where each training setting was given (``FILE:LINE:COL`` or ``--set KEY=VALUE``)."""
    user: dict[str, str]
    """The ``--set`` overrides as given."""
    local_gpus: int | None
    """The machine's GPUs when agentspec starts the Ray cluster itself on CUDA, else ``None``."""
    shipment: Shipment | None = None
    """What the run ships to its workers (``None`` with shared storage)."""


def prepared_run(
    spec_path: str | Path,
    run: Path,
    user: Mapping[str, Any],
    ray_address: str | None = None,
    *,
    shared_storage: bool = False,
) -> PreparedRun:
    """Compile the verl target into ``run``, merge the overrides and add how Ray starts
    and what it ships to the workers (:mod:`.shipping`; nothing with ``shared_storage``).

    Bad settings (an unknown one, a missing teacher, a model vLLM cannot serve, a run
    too big to ship) raise :class:`VerlSetupError` before anything starts.
    """
    if ray_address and "trainer.device" not in user and not _has_cuda():
        raise VerlSetupError(
            f"--ray-address {ray_address}: this driver sees no GPU, and the cluster's device "
            "is not known here; say which: --set trainer.device=cuda (the cluster's GPUs: "
            "vLLM, FSDP on NCCL) or --set trainer.device=cpu (verl's CPU path on the cluster)"
        )
    cpu = user.get("trainer.device", "cpu" if not _has_cuda() else "cuda") == "cpu"
    try:
        target, merged = prepare_run(spec_path, run, dict(user), cpu=cpu)
        placement = _teacher_placement(merged, cpu=cpu, ray_address=ray_address)
    except (ValueError, FileNotFoundError) as exc:
        raise VerlSetupError(str(exc)) from exc
    shipment = None if shared_storage else _ship(Path(spec_path), target, merged)
    if shipment is not None:
        merged = {**relative_inputs(merged, target.out_dir), **shipment.runtime_env()}
    env = worker_env(target, run, cpu=cpu, shared_storage=shared_storage)
    overrides = launch_overrides(
        merged, env, cpu=cpu, ray_address=ray_address, extra_gpus=placement.num_gpus
    )
    notes = [attention_note(merged), *placement.notes, *_notes(merged, cpu=cpu)]
    if shipment is not None:
        notes.append(shipment.note())
        if ray_address and int(setting(merged, "trainer.save_freq", "0") or 0) > 0:
            notes.append(CHECKPOINTS_ON_A_CLUSTER)
    from agentspec.runtime.backends.local.model_defaults import setting_origins

    plain = {k: v for k, v in user.items() if "." not in k}
    local = None if cpu or ray_address else _cuda_count()
    return PreparedRun(
        target,
        overrides,
        env,
        cpu,
        notes,
        setting_origins(spec_path, plain),
        dict(user),
        local,
        shipment,
    )


def _ship(spec_path: Path, target: VerlTarget, merged: dict[str, str]) -> Shipment:
    """What the run ships to its workers (:func:`.shipping.ship_run`), or why it cannot."""
    try:
        return ship_run(spec_path, target.out_dir, merged)
    except (ShippingError, PackageFileError) as exc:
        raise VerlSetupError(str(exc)) from exc


def _notes(merged: Mapping[str, str], *, cpu: bool) -> list[str]:
    """What the user should know of the settings on this device."""
    notes = []
    kl = float(setting(merged, "actor_rollout_ref.actor.kl_loss_coef", "0") or 0)
    if cpu and kl > 0 and setting(merged, "actor_rollout_ref.actor.use_kl_loss") == "False":
        notes.append(
            f"training.kl_coef ({kl:g}) is not applied on verl's CPU path: verl 0.9.1 builds "
            "the reference model with FSDP2's CPU offload, which needs an accelerator; "
            "the GPU path and the local backend apply it"
        )
    if not cpu and setting(merged, "actor_rollout_ref.rollout.name") == "vllm":
        notes += [n for n in [sampling_note(merged)] if n]
    return notes


def _cuda_count() -> int | None:
    """GPUs torch sees here (``None`` without CUDA: a dry run for a GPU cluster from a laptop)."""
    if not _has_cuda():
        return None
    import torch

    return int(torch.cuda.device_count())


def _teacher_placement(
    merged: Mapping[str, str], *, cpu: bool, ray_address: str | None
) -> TeacherPlacement:
    """The OPD teacher's placement from ``+trainer.v1.agentspec.teacher_*`` (see :mod:`.placement`)."""
    agentspec = "trainer.v1.agentspec."
    pool = int(setting(merged, "trainer.n_gpus_per_node", "1") or 1) * int(
        setting(merged, "trainer.nnodes", "1") or 1
    )
    local = None
    if not cpu and not ray_address and _has_cuda():
        import torch

        local = int(torch.cuda.device_count())
    return teacher_placement(
        setting(merged, agentspec + "teacher_path"),
        str(setting(merged, agentspec + "teacher_placement", "trainer")),
        float(setting(merged, agentspec + "teacher_num_gpus", "1") or 1),
        local_gpus=local,
        pool_gpus=pool,
    )


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
