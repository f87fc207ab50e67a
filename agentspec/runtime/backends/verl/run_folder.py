"""`agentspec compile SPEC --target verl -o DIR`: everything verl's `main_ppo` needs.

Writes, next to the generated module and its manifest:

- ``<name>_verl.py``: the agent loop, a subclass of :class:`.agent_loop.SpecAgentLoop`
  (itself a verl ``AgentLoopBase``) bound to the generated module;
- ``agent_loop.yaml``: verl's agent-loop list (``rollout.agent.agent_loop_config_path``);
- ``spec/``: the spec and the files it reads in its folder (its own modules, data
  files: :func:`agentspec.compiler.package_files.copy_spec_files`), which the agent
  loop binds as the spec's folder: the target folder is all a worker reads, so a run
  ships it to Ray's workers whole (:mod:`.shipping`);
- ``train.parquet`` / ``val.parquet``: rows from the spec's ``data`` (``agent_name``,
  the raw first prompt, the sample as JSON in ``extra_info``);
- ``overrides.txt``: Hydra overrides of ``verl.trainer.main_ppo`` for a GPU cluster
  (vLLM rollout, the ``agentspec`` trainer, the spec's algorithm and settings, and
  FlashAttention-2 named for the actor, the reference and the critic: the machine
  that runs the file is not known here, and the GPU install brings flash-attn),
  and ``overrides.cpu.txt``: what replaces or adds to them on a machine without GPUs.

Nothing here imports verl or torch; the model path in the overrides is
``DIR/model`` (built by the launcher for ``builtin:*`` models).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from agentspec.compiler.build import compile_spec, import_file, write_compiled
from agentspec.compiler.frontend import load_checked
from agentspec.core.presets import (
    ALGORITHMS,
    VALUE_CLIP,
    Algorithm,
    clip_range,
    critic_warmup,
    kl_coef,
)
from agentspec.core.row_layout import row_layout
from agentspec.runtime.backends.verl.agent_loop_file import copy_spec, write_agent_loop, write_file
from agentspec.runtime.backends.verl.attention import FLASH_ATTENTION_2, SDPA, attention_overrides
from agentspec.stdlib.user import bind_spec_dir

__all__ = [
    "VerlTarget",
    "algorithm_overrides",
    "cpu_overrides",
    "format_overrides",
    "gpu_overrides",
    "load_generated",
    "write_verl_target",
]

MAX_TRAIN_ROWS = 4096


@dataclass(frozen=True)
class VerlTarget:
    """Paths and settings of a compiled verl target."""

    out_dir: Path
    name: str
    spec_path: Path
    """The spec as the user gave it (its copy is ``out_dir/spec``)."""
    module: ModuleType
    module_path: Path
    loop_path: Path
    agent_loop_yaml: Path
    train_parquet: Path
    val_parquet: Path
    max_prompt_tokens: int
    max_response_tokens: int
    max_steps: int
    layout: str
    training: dict[str, Any]
    """The spec's ``training`` section with the caller's settings applied."""

    @property
    def model_dir(self) -> Path:
        return self.out_dir / "model"


def load_generated(module_path: Path) -> ModuleType:
    """Import a generated module from its file (a unique module name per file)."""
    name = f"agentspec_verl_{module_path.stem}_{abs(hash(str(module_path.resolve()))):x}"
    return import_file(module_path, name)


def _splits(
    module: ModuleType, n_train: int, n_eval: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Training and held-out samples, chosen by the local backend's own function
    (`held_out_split`): the same held-out samples on both backends."""
    from agentspec.runtime.compiled.samples import held_out_split

    train, held_out = held_out_split(module, n_eval, train_limit=n_train)
    return train[:n_train], held_out


def _rows(
    module: ModuleType, name: str, split: str, samples: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    env = module.ENV_CLASS()
    rows = []
    for i, sample in enumerate(samples):
        messages = env.initial_messages(dict(sample)) if hasattr(env, "initial_messages") else []
        rows.append(
            {
                "data_source": name,
                "agent_name": name,
                "prompt": [{"role": m["role"], "content": m["content"]} for m in messages],
                "ability": "agent",
                "reward_model": {"style": "rule", "ground_truth": ""},
                "extra_info": {
                    "index": i,
                    "split": split,
                    "sample": json.dumps(sample, sort_keys=True, default=str),
                },
            }
        )
    if not rows:
        raise ValueError(f"spec {name!r} has no samples in split {split!r}")
    return rows


def _training_settings(module: ModuleType, training: Mapping[str, Any] | None) -> dict[str, Any]:
    """The spec's ``training`` section with ``training``'s settings applied (unknown keys
    are an error listing the valid ones)."""
    settings = dict(module.TRAINING)
    unknown = sorted(set(training or {}) - set(settings))
    if unknown:
        raise ValueError(
            f"unknown training settings {unknown}; valid: {', '.join(sorted(settings))}"
        )
    settings.update(training or {})
    return settings


def _write_parquet(path: Path, rows: list[dict[str, Any]]) -> Path:
    import pandas as pd

    tmp = path.with_suffix(".parquet.tmp")
    pd.DataFrame(rows).to_parquet(tmp, index=False)
    tmp.replace(path)
    return path


def write_verl_target(
    spec_path: str | Path,
    out_dir: str | Path,
    *,
    training: Mapping[str, Any] | None = None,
    train_rows: int | None = None,
) -> list[Path]:
    """Compile ``spec_path`` for verl into ``out_dir``; returns the written paths.

    Args:
        training: settings of the spec's ``training`` section to replace
            (``{"algorithm": "gigpo"}``); unknown keys are an error.
        train_rows: rows of ``train.parquet`` (default: iterations × prompts per
            iteration, at most 4096).
    """
    return build_verl_target(spec_path, out_dir, training=training, train_rows=train_rows)[1]


def build_verl_target(
    spec_path: str | Path,
    out_dir: str | Path,
    *,
    training: Mapping[str, Any] | None = None,
    train_rows: int | None = None,
    waive: Collection[str] = (),
) -> tuple[VerlTarget, list[Path]]:
    """:func:`write_verl_target`, also returning the :class:`VerlTarget`. ``waive``: the
    spec's errors that do not stop it (``train`` passes ``waived_by(training)``: a
    setting its overrides replace is checked as resolved, here, not as the file has it)."""
    out = Path(out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    checked = load_checked(spec_path, waive)
    compiled = compile_spec(spec_path, waive)
    module_path, manifest = write_compiled(compiled, out)
    module = load_generated(module_path)
    bind_spec_dir(module, Path(spec_path).resolve().parent)
    copy_spec(Path(spec_path), out)
    settings = _training_settings(module, training)
    algorithm = ALGORITHMS.get(str(settings["algorithm"]))  # unknown: lists the valid ones
    name = compiled.name
    spec = checked.spec
    # what the algorithm reads from the spec (GiGPO's anchor) is there: `train`'s own
    # check, so the same spec compiles for verl where it trains (a ConfigError: located)
    from agentspec.runtime.backends.local.model_defaults import (
        check_spec_provides,
        setting_origins,
    )

    check_spec_provides(spec_path, algorithm.name, setting_origins(spec_path, training or {}))
    # verl hands the loss rows, not steps: a per-step loss needs one row per step
    layout = row_layout(spec.context.policy, step_rows=algorithm.needs_step_rows)
    loop_path, yaml_path = write_agent_loop(out, spec_path, compiled.module_name, name, layout)
    n_train = train_rows or min(
        MAX_TRAIN_ROWS, int(settings["iterations"]) * int(settings["prompts_per_iteration"])
    )
    train_samples, val_samples = _splits(module, n_train, int(settings["eval_samples"]))
    train = _write_parquet(out / "train.parquet", _rows(module, name, "train", train_samples))
    val = _write_parquet(out / "val.parquet", _rows(module, name, "test", val_samples))
    target = VerlTarget(
        out_dir=out,
        name=name,
        spec_path=Path(spec_path).resolve(),
        module=module,
        module_path=module_path,
        loop_path=loop_path,
        agent_loop_yaml=yaml_path,
        train_parquet=train,
        val_parquet=val,
        max_prompt_tokens=int(spec.context.max_prompt_tokens or 1024),
        max_response_tokens=int(spec.episode.max_response_tokens or 256),
        max_steps=int(spec.episode.max_steps),
        layout=layout,
        training=settings,
    )
    return target, [module_path, manifest, loop_path, yaml_path, train, val, *_overrides(target)]


def _overrides(target: VerlTarget) -> tuple[Path, Path]:
    """``overrides.txt`` (a GPU cluster's) and ``overrides.cpu.txt`` (what replaces or adds
    to them on a machine without GPUs)."""
    gpu_file = {**gpu_overrides(target), **attention_overrides(FLASH_ATTENTION_2)}
    # the CPU file follows the GPU one on the command line: keys that one adds are replaced
    cpu_attention = {k.lstrip("+"): v for k, v in attention_overrides(SDPA).items()}
    cpu_file = {**cpu_overrides(), **cpu_attention}
    return (
        write_file(target.out_dir / "overrides.txt", format_overrides(gpu_file)),
        write_file(target.out_dir / "overrides.cpu.txt", format_overrides(cpu_file)),
    )


def gpu_overrides(target: VerlTarget, model_path: str | None = None) -> dict[str, str]:
    """Hydra overrides of ``verl.trainer.main_ppo`` for the spec's training settings.

    Keys with a leading ``+`` add a key verl's config does not declare. What
    depends on the algorithm comes from its preset (:func:`algorithm_overrides`);
    the rest maps the spec's settings one to one.
    """
    t = dict(target.training)
    algorithm = ALGORITHMS.get(str(t["algorithm"]))
    model = model_path or str(target.model_dir)
    return {
        **_data_overrides(target, t),
        **_actor_overrides(target, t, model),
        **_rollout_overrides(target, t),
        **_critic_overrides(target, t, model),
        **_trainer_overrides(target, t),
        **algorithm_overrides(algorithm, t),
    }


def _row_length(target: VerlTarget) -> int:
    """Tokens of a row's response part: one step's response, or (packed) a whole
    episode's responses and observations, which may grow up to a prompt's length."""
    if target.layout == "packed":
        return target.max_response_tokens * target.max_steps + target.max_prompt_tokens
    return target.max_response_tokens


def _minibatch_prompts(t: Mapping[str, Any]) -> str:
    """verl's mini-batch size counts prompts (groups of ``group_size`` rows)."""
    prompts = int(t["prompts_per_iteration"])
    return str(max(1, min(prompts, int(t["minibatch_size"]) // int(t["group_size"]) or 1)))


def _data_overrides(target: VerlTarget, t: Mapping[str, Any]) -> dict[str, str]:
    return {
        "data.train_files": str(target.train_parquet),
        "data.val_files": str(target.val_parquet),
        "data.prompt_key": "prompt",
        "data.return_raw_chat": "True",
        "data.train_batch_size": str(int(t["prompts_per_iteration"])),
        "data.max_prompt_length": str(target.max_prompt_tokens),
        "data.max_response_length": str(_row_length(target)),
        "data.seed": str(int(t.get("seed", 0))),
        # the sampler's seed (vLLM's, or the CPU path's HFServer): the run's seed
        "actor_rollout_ref.rollout.seed": str(int(t.get("seed", 0))),
        "data.dataloader_num_workers": "0",
        "algorithm.gamma": str(float(t["gamma"])),
        "algorithm.lam": str(float(t["lam"])),
        "algorithm.norm_adv_by_std_in_grpo": "True",
        "algorithm.use_kl_in_reward": "False",
        # Every episode's output carries its reward (`reward_score`, from the generated
        # flow): verl's reward-loop workers, which score outputs that come without one,
        # would never be called, yet each is a process that imports torch and verl.
        "reward.num_workers": "0",
    }


def _actor_overrides(target: VerlTarget, t: Mapping[str, Any], model: str) -> dict[str, str]:
    return {
        "actor_rollout_ref.model.path": model,
        "actor_rollout_ref.actor.loss_agg_mode": "token-mean",
        "actor_rollout_ref.actor.optim.lr": str(float(t["learning_rate"])),
        # verl steps its scheduler once per training step; 0 or less means "no warm-up".
        "actor_rollout_ref.actor.optim.lr_warmup_steps": str(
            int(t.get("lr_warmup_iterations", 0)) or -1
        ),
        **_warmup_schedule(int(t.get("lr_warmup_iterations", 0))),
        "actor_rollout_ref.actor.ppo_mini_batch_size": _minibatch_prompts(t),
        # FSDP2 on GPUs as on the CPU path (verl's default, FSDP1, fails on a CPU): the
        # strategy the CPU tests run is the one a GPU run uses
        "actor_rollout_ref.actor.strategy": "fsdp2",
        "actor_rollout_ref.ref.strategy": "fsdp2",
        "actor_rollout_ref.actor.ppo_epochs": str(int(t["epochs"])),
        "actor_rollout_ref.actor.entropy_coeff": str(float(t.get("entropy_coef", 0.0))),
        # verl 0.9's engine clips with the optimiser's `clip_grad` (`actor.grad_clip` is read
        # by nothing)
        "actor_rollout_ref.actor.optim.clip_grad": str(float(t.get("max_grad_norm", 1.0))),
        # verl requires a micro-batch size (rows per forward pass); one 80 GB GPU holds
        # these for a 1.5B model at the spec's context (CPU: 4, see cpu_overrides)
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu": "8",
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu": "16",
        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu": "16",
    }


def _rollout_overrides(target: VerlTarget, t: Mapping[str, Any]) -> dict[str, str]:
    return {
        "actor_rollout_ref.rollout.name": "vllm",
        "actor_rollout_ref.rollout.mode": "async",
        "actor_rollout_ref.rollout.n": str(int(t["group_size"])),
        "actor_rollout_ref.rollout.tensor_model_parallel_size": "1",
        "actor_rollout_ref.rollout.temperature": str(float(t.get("temperature", 1.0))),
        "actor_rollout_ref.rollout.calculate_log_probs": "True",
        "actor_rollout_ref.rollout.prompt_length": str(target.max_prompt_tokens),
        "actor_rollout_ref.rollout.response_length": str(_row_length(target)),
        "actor_rollout_ref.rollout.val_kwargs.n": "1",
        "actor_rollout_ref.rollout.val_kwargs.temperature": "0",
        "actor_rollout_ref.rollout.val_kwargs.do_sample": "False",
        "actor_rollout_ref.rollout.agent.agent_loop_config_path": str(target.agent_loop_yaml),
        "actor_rollout_ref.rollout.agent.default_agent_loop": target.name,
    }


def _critic_overrides(target: VerlTarget, t: Mapping[str, Any], model: str) -> dict[str, str]:
    return {
        "critic.model.path": model,
        "critic.optim.lr": str(float(t.get("critic_learning_rate", 1e-3))),
        "critic.optim.clip_grad": str(float(t.get("max_grad_norm", 1.0))),
        # verl's default is 0.5
        "critic.cliprange_value": str(VALUE_CLIP),
        "critic.ppo_mini_batch_size": _minibatch_prompts(t),
        "critic.strategy": "fsdp2",
        "critic.ppo_micro_batch_size_per_gpu": "8",
    }


def _warmup_schedule(iterations: int) -> dict[str, str]:
    """The local backend's warm-up, iteration k at k/W of the rate then the full rate, in
    verl's terms: its constant schedule trains step k at (k - 1)/W (its first update at
    rate 0); the cosine schedule counted from 1, with no decay below the full rate, is
    the local one (tests/verl/test_backend_parity.py's harness checked it at W = 2)."""
    if iterations <= 0:
        return {}
    optim = "actor_rollout_ref.actor.optim."
    return {
        optim + "lr_scheduler_type": "cosine",
        optim + "min_lr_ratio": "1.0",
        optim + "zero_indexed_step": "False",
    }


def _trainer_overrides(target: VerlTarget, t: Mapping[str, Any]) -> dict[str, str]:
    keep = "null" if t.get("keep_checkpoints") is None else str(int(t["keep_checkpoints"]))
    return {
        "trainer.v1.trainer_mode": "agentspec",
        "+trainer.v1.agentspec.omega": str(float(t.get("omega", 1.0))),
        "+trainer.v1.agentspec.opd_beta": str(float(t.get("opd_beta", 1.0))),
        # the step-level critic's loss weight (the agentspec trainer's critic loss)
        "+trainer.v1.agentspec.value_coef": str(float(t.get("value_coef", 0.5))),
        "+trainer.v1.agentspec.dump_dir": "null",
        "+trainer.v1.agentspec.error_file": "null",
        "+trainer.v1.agentspec.max_failed_groups": str(10 * int(t["prompts_per_iteration"])),
        "trainer.total_training_steps": str(int(t["iterations"])),
        "trainer.test_freq": str(int(t["eval_every"])),
        "trainer.save_freq": str(int(t.get("checkpoint_every", 10))),
        "trainer.max_actor_ckpt_to_keep": keep,
        "trainer.max_critic_ckpt_to_keep": keep,
        "trainer.val_before_train": "True",
        "trainer.project_name": "agentspec",
        "trainer.experiment_name": target.name,
        "trainer.logger": "[console,file]",
        "trainer.n_gpus_per_node": "1",
        "trainer.nnodes": "1",
    }


def algorithm_overrides(algorithm: Algorithm, t: Mapping[str, Any]) -> dict[str, str]:
    """What ``algorithm``'s preset sets: agentspec's estimator and loss as registered in
    verl (:mod:`.algorithms`), the KL penalty, the clip range its loss reads, whether the critic trains,
    the teacher (:func:`_teacher_overrides`) and the preset's own ``verl_overrides``."""
    clip_low, clip_high = clip_range(algorithm, t)
    kl = kl_coef(algorithm, t)
    return {
        "algorithm.adv_estimator": f"agentspec_{algorithm.estimator}",
        # the KL to the reference (the policy training starts from) as a loss term, as
        # the local trainer's; verl then loads a reference model
        "actor_rollout_ref.actor.use_kl_loss": str(kl > 0),
        "actor_rollout_ref.actor.kl_loss_coef": str(kl),
        "actor_rollout_ref.actor.policy_loss.loss_mode": f"agentspec_{algorithm.loss}",
        "actor_rollout_ref.actor.clip_ratio_low": str(clip_low),
        "actor_rollout_ref.actor.clip_ratio_high": str(clip_high),
        "critic.enable": str(algorithm.trains_critic),
        # verl updates the actor once `critic_warmup <= global_steps`, and counts steps from
        # 1 (trainer_base.py): N critic-only iterations, as the local backend's N, is N + 1
        "trainer.critic_warmup": _verl_critic_warmup(critic_warmup(algorithm, t)),
        **_teacher_overrides(algorithm, t),
        **algorithm.verl_overrides,
    }


def _verl_critic_warmup(iterations: int) -> str:
    """verl's ``trainer.critic_warmup`` for ``iterations`` critic-only iterations."""
    return str(iterations + 1) if iterations > 0 else "0"


def _teacher_overrides(algorithm: Algorithm, t: Mapping[str, Any]) -> dict[str, str]:
    """Distillation: the teacher the ``agentspec`` trainer scores every row with (see
    :mod:`.teacher`), and the task advantage it adds with weight ``opd_task_weight``.
    verl's own ``distillation.*`` stays off: its teacher scores only an episode's last
    output. ``opd_topk`` is the local backend's (verl trains on the sampled-token
    advantage, as ``opd_topk=0``)."""
    if not algorithm.needs_teacher:
        return {}
    if not t.get("teacher"):
        raise ValueError(
            f"algorithm {t['algorithm']!r} needs `training.teacher` (a Hugging Face checkpoint "
            "directory with the student's tokenizer); set it in the spec or with --set teacher=DIR"
        )
    out = {
        "+trainer.v1.agentspec.teacher_path": str(Path(str(t["teacher"])).resolve()),
        "+trainer.v1.agentspec.opd_task_weight": str(float(t.get("opd_task_weight", 0.0))),
        # the GPU path's teacher, wherever it runs (the CPU path's launcher sets float32)
        "+trainer.v1.agentspec.teacher_dtype": "bfloat16",
    }
    if algorithm.task_estimator is not None:
        out["+trainer.v1.agentspec.task_estimator"] = f"agentspec_{algorithm.task_estimator}"
    return out


def cpu_overrides() -> dict[str, str]:
    """What a machine without GPUs changes (see ``docs/verl.md`` and :mod:`.cpu`), but for
    the attention (sdpa there: :func:`.attention.attention_overrides`)."""
    return {
        "actor_rollout_ref.rollout.name": "agentspec_hf",
        "actor_rollout_ref.rollout.gpu_memory_utilization": "0.1",
        # verl 0.9.1 builds the reference model (what the KL penalty reads) with FSDP2's
        # CPU offload, which pins memory: impossible without an accelerator. The CPU path
        # trains without the penalty, and says so (`launcher.prepared_run`).
        "actor_rollout_ref.actor.use_kl_loss": "False",
        "actor_rollout_ref.actor.use_torch_compile": "False",
        "actor_rollout_ref.actor.fsdp_config.use_torch_compile": "False",
        "actor_rollout_ref.ref.fsdp_config.use_torch_compile": "False",
        "trainer.device": "cpu",
        "trainer.n_gpus_per_node": "1",
        "transfer_queue.backend.SimpleStorage.num_data_storage_units": "1",
        "actor_rollout_ref.rollout.agent.num_workers": "1",
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu": "4",
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu": "4",
        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu": "4",
        "critic.ppo_micro_batch_size_per_gpu": "4",
    }


def format_overrides(overrides: Mapping[str, str]) -> str:
    """One ``key=value`` per line (the form ``main_ppo`` takes on its command line)."""
    return "".join(f"{k}={v}\n" for k, v in overrides.items())
