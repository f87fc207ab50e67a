"""`agentspec train` on one machine: the whole algorithm, top to bottom.

    for each iteration:
        sample prompts × group size  →  roll out with the current policy
        reward components (the generated env)  →  critic values of each step's state
        advantages (the named estimator)  →  epochs × minibatches of the named loss
        metrics, evaluation, checkpoint

Everything algorithm-specific comes from `agentspec.runtime.algorithms`
(`ALGORITHMS` names an estimator and a loss); this file only moves tensors.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from agentspec.runtime.algorithms import (
    ESTIMATORS,
    AdvantageConfig,
    LossOutput,
    PolicyLossConfig,
    StepBatch,
    StepRow,
    actor_loss,
    add_opd_advantages,
    aggregation_weights,
    collate_steps,
    compute_advantages,
    entropy_from_logits,
    teacher_topk,
    topk_distillation_loss,
    value_loss,
)
from agentspec.runtime.algorithms.presets import ALGORITHMS, Algorithm, clip_range
from agentspec.runtime.backends.local.checkpoint import (
    TrainerState,
    latest_checkpoint,
    load_checkpoint_into,
    save_checkpoint,
)
from agentspec.runtime.backends.local.config import ConfigError, resolve_config
from agentspec.runtime.backends.local.device import autocast, resolve_device
from agentspec.runtime.backends.local.models import (
    build_critic,
    frozen_copy,
    load_checkpoint,
    load_policy,
)
from agentspec.runtime.backends.local.runlog import RunLog
from agentspec.runtime.backends.local.tensors import (
    Rollout,
    StepIndex,
    build_rollout,
    pad_rows,
    token_log_probs,
)
from agentspec.runtime.chat_templates import chat_for_spec
from agentspec.runtime.loop import run_episodes
from agentspec.runtime.policies.hf import HFPolicy
from agentspec.runtime.policies.scripted import ScriptedPolicy
from agentspec.runtime.row_layout import layout_for_template
from agentspec.runtime.rows import training_rows
from agentspec.runtime.spec_run import episode_script
from agentspec.runtime.summary import summarize
from agentspec.runtime.trajectory import Trajectory, write_jsonl
from agentspec.spec.model import TrainingSpec

ProgressFn = Callable[[int, dict[str, float]], None]


class TrainingInterrupted(Exception):
    """Ctrl-C during training; a checkpoint was saved at `path`."""

    def __init__(self, path: Path | None):
        super().__init__(f"interrupted; checkpoint at {path}")
        self.path = path


@dataclass
class Models:
    policy: Any
    tokenizer: Any
    critic: Any
    reference: Any
    teacher: Any
    optimizers: dict[str, torch.optim.Optimizer]
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))


# ---------------------------------------------------------------- the loop


def train(
    spec_path: str | Path,
    out_dir: str | Path,
    overrides: Mapping[str, Any] | None = None,
    *,
    resume: bool = False,
    progress: ProgressFn | None = None,
) -> Path:
    """Train the spec's policy; returns the run directory. See the module docstring."""
    from agentspec.compiler.build import import_spec, spec_sha256

    module = import_spec(spec_path)
    cfg = resolve_config(TrainingSpec.model_validate(module.TRAINING), dict(overrides or {}))
    out = Path(out_dir)
    if not resume and ((out / "metrics.jsonl").exists() or (out / "checkpoints").exists()):
        raise ConfigError(
            f"{out} already holds a run; continue it with --resume, or train into another --out"
        )
    run = RunLog(out)
    resolved = {"spec": str(spec_path), "spec_sha256": spec_sha256(spec_path), **cfg.model_dump()}
    if resume and run.read_config() and run.read_config() != resolved:
        raise ConfigError(
            f"{out_dir} was trained with another configuration; resume with the same one"
        )
    run.write_config(resolved)

    if cfg.torch_threads:
        torch.set_num_threads(cfg.torch_threads)
    random.seed(cfg.seed)
    torch.manual_seed(cfg.seed)
    train_samples, eval_samples = split_samples(module, cfg)
    models = build_models(cfg, module, train_samples, run.path)
    algorithm = ALGORITHMS.get(cfg.algorithm)
    # the chat template is the layout's second input: rewriting earlier turns means per-step rows
    pack = layout_for_template(module.LAYOUT, chat_for_spec(module, models.tokenizer)) == "packed"

    state = TrainerState()
    checkpoint = latest_checkpoint(run.path / "checkpoints") if resume else None
    if checkpoint is not None:
        state = load_checkpoint_into(checkpoint, models.policy, models.critic, models.optimizers)
        run.truncate_after(state.iteration)
    elif resume:
        run.truncate_after(-1)

    def save() -> Path:
        return save_checkpoint(
            run.path / "checkpoints",
            state,
            models.policy,
            models.tokenizer,
            models.critic,
            models.optimizers,
        )

    try:
        if not state.warm_started:
            if cfg.warm_start:
                behaviour_clone(module, models, train_samples, cfg, pack)
            state.warm_started = True
            record = {
                "iteration": 0,
                "env_steps": 0,
                **evaluate(module, models, eval_samples, cfg, run, 0),
            }
            run.log(record)
            if progress:
                progress(0, record)
            save()
        for iteration in range(state.iteration + 1, cfg.iterations + 1):
            record = train_iteration(
                module, models, algorithm.name, train_samples, cfg, pack, iteration, run
            )
            state.iteration = iteration
            state.env_steps += int(record["rollout/env_steps"])
            record["env_steps"] = state.env_steps
            if iteration % cfg.eval_every == 0 or iteration == cfg.iterations:
                record.update(evaluate(module, models, eval_samples, cfg, run, iteration))
            run.log(record)
            if progress:
                progress(iteration, record)
            if iteration % cfg.checkpoint_every == 0 or iteration == cfg.iterations:
                save()
    except KeyboardInterrupt:
        raise TrainingInterrupted(save()) from None
    finally:
        run.close()
    run.plot()
    return run.path


def train_iteration(
    module: ModuleType,
    models: Models,
    algorithm_name: str,
    samples: Sequence[Mapping[str, Any]],
    cfg: TrainingSpec,
    pack: bool,
    iteration: int,
    run: RunLog,
) -> dict[str, float]:
    """One rollout + update. Returns the iteration's metrics."""
    algorithm = ALGORITHMS.get(algorithm_name)
    started = time.perf_counter()

    # 1. Sample prompts × group size and roll out with the current policy.
    rng = random.Random(f"{cfg.seed}:{iteration}")
    prompts = rng.sample(list(samples), min(cfg.prompts_per_iteration, len(samples)))
    trajectories = rollout(module, models, prompts, cfg.group_size, cfg.temperature)
    rollout_seconds = time.perf_counter() - started
    batch_rollout = build_rollout(trajectories, pack)

    # 2. What the current policy, critic, reference and teacher say about it.
    scored = score(batch_rollout, models, cfg.temperature)
    batch = step_batch(batch_rollout, scored)

    # 3. Advantages from the algorithm's estimator. OPD's teacher enters either
    #    as the sampled-token advantage or (opd_topk > 0) as a loss term in update().
    config = AdvantageConfig(gamma=cfg.gamma, lam=cfg.lam, omega=cfg.omega, opd_beta=cfg.opd_beta)
    if algorithm.needs_teacher:
        task = compute_advantages("grpo", batch, config)
        if cfg.opd_topk:
            advantages = replace(task, advantages=cfg.opd_task_weight * task.advantages)
        else:
            advantages = add_opd_advantages(
                task, batch, beta=cfg.opd_beta, task_weight=cfg.opd_task_weight
            )
        advantages.metrics["opd/reverse_kl"] = reverse_kl(batch)
    else:
        advantages = compute_advantages(algorithm.estimator, batch, config)
    annotate_advantages(batch_rollout, advantages.advantages, batch.response_mask)

    # 4. Epochs × minibatches of the algorithm's loss (and the critic's).
    policy_lr = cfg.learning_rate * min(1.0, iteration / max(cfg.lr_warmup_iterations, 1))
    for group in models.optimizers["policy"].param_groups:
        group["lr"] = policy_lr
    losses = update(
        batch_rollout,
        batch,
        advantages.advantages,
        advantages.returns,
        scored,
        models,
        cfg,
        algorithm,
    )

    elapsed = time.perf_counter() - started
    summary = summarize(trajectories, [c.name for c in module.ENV_CLASS.reward_components])
    generated = sum(len(s.response_ids) for t in trajectories for s in t.steps)
    processed = sum(len(r.input_ids) for r in batch_rollout.rows) * (cfg.epochs + 1)
    if iteration % cfg.eval_every == 0 or iteration == 1:
        write_jsonl(
            run.path / "traces" / f"iter_{iteration:06d}.jsonl", trajectories[: cfg.trace_samples]
        )
    return {
        "iteration": iteration,
        "rollout/success": summary.success_rate,
        "rollout/reward": summary.mean_reward,
        "rollout/steps": summary.mean_steps,
        "rollout/env_steps": sum(len(t.steps) for t in trajectories),
        "rollout/parse_error_rate": summary.parse_error_rate,
        "rollout/tool_error_rate": summary.tool_error_rate,
        **{f"reward/{k}": v for k, v in summary.reward_components.items()},
        **{k: float(v) for k, v in advantages.metrics.items()},
        **losses,
        "perf/rollout_tokens_per_s": generated / max(rollout_seconds, 1e-9),
        "perf/tokens_per_s": (generated + processed) / max(elapsed, 1e-9),
        # scoring + epochs of updates: the tokens the forward/backward passes processed
        "perf/update_tokens_per_s": processed / max(elapsed - rollout_seconds, 1e-9),
        "perf/iteration_s": elapsed,
        "optim/policy_lr": policy_lr,
    }


# ------------------------------------------------------------- the pieces


def split_samples(
    module: ModuleType, cfg: TrainingSpec
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Training samples and held-out evaluation samples.

    The held-out set is the spec's `eval_split`, a generator's `test` split, or
    else the last `eval_samples` samples of the data (removed from training).
    """
    from agentspec.runtime.spec_run import held_out_split

    return held_out_split(module, cfg.eval_samples)


def build_models(
    cfg: TrainingSpec, module: ModuleType, samples: Sequence[Mapping[str, Any]], run_dir: Path
) -> Models:
    algorithm = ALGORITHMS.get(cfg.algorithm)
    policy, tokenizer = load_policy(
        cfg.model, module, samples[:2000], run_dir / "tokenizer", cfg.seed
    )
    critic = build_critic(policy) if ESTIMATORS.get(algorithm.estimator).critic != "none" else None
    reference = frozen_copy(policy) if cfg.kl_coef > 0 else None
    teacher = None
    if algorithm.needs_teacher:
        if cfg.teacher is None:
            raise ValueError(
                f"algorithm {cfg.algorithm!r} needs `training.teacher` (a checkpoint directory)"
            )
        teacher = frozen_copy(load_checkpoint(cfg.teacher)[0])
    device = resolve_device(cfg.device)
    for model in (policy, critic, reference, teacher):
        if model is not None:
            model.to(device)
    optimizers: dict[str, torch.optim.Optimizer] = {
        "policy": torch.optim.AdamW(policy.parameters(), lr=cfg.learning_rate)
    }
    if critic is not None:
        optimizers["critic"] = torch.optim.AdamW(critic.parameters(), lr=cfg.critic_learning_rate)
    return Models(policy, tokenizer, critic, reference, teacher, optimizers, device)


def rollout(
    module: ModuleType,
    models: Models,
    samples: Sequence[Mapping[str, Any]],
    group_size: int,
    temperature: float,
) -> list[Trajectory]:
    models.policy.eval()
    flow = module.FLOW_CLASS(
        HFPolicy(models.policy, models.tokenizer), models.tokenizer, temperature=temperature
    )
    ids = [str(s.get("id", i)) for i, s in enumerate(samples)]
    with torch.no_grad(), autocast(models.device):
        trajectories = asyncio.run(
            run_episodes(flow, list(samples), group_size=group_size, sample_ids=ids)
        )
    models.policy.train()
    return trajectories


@dataclass
class Scored:
    """Per-step tensors from the models, before any update."""

    index: StepIndex
    old_log_probs: torch.Tensor  # (n, T)
    values: torch.Tensor | None  # (n,) V(state before the step)
    token_values: torch.Tensor | None  # (n, T)
    ref_log_probs: torch.Tensor | None  # (n, T)
    teacher_log_probs: torch.Tensor | None  # (n, T)


def row_chunks(rollout: Rollout, size: int = 16) -> Iterator[list[int]]:
    for start in range(0, len(rollout.rows), size):
        yield list(range(start, min(start + size, len(rollout.rows))))


@torch.no_grad()
def score(rollout: Rollout, models: Models, temperature: float) -> Scored:
    width = rollout.width
    n = len(rollout.steps)
    out = {name: torch.zeros((n, width)) for name in ("old", "ref", "teacher", "token_values")}
    values = torch.zeros(n)
    pad = models.tokenizer.pad_token_id or 0
    for rows in row_chunks(rollout):
        refs = [i for i, ref in enumerate(rollout.steps) if ref.row in rows]
        if not refs:
            continue
        index = StepIndex.of(
            [rollout.steps[i] for i in refs], {r: k for k, r in enumerate(rows)}, width
        )
        ids, mask = (t.to(models.device) for t in pad_rows([rollout.rows[r] for r in rows], pad))

        for name, model in (
            ("old", models.policy),
            ("ref", models.reference),
            ("teacher", models.teacher),
        ):
            if model is not None:
                with autocast(models.device):
                    logp = token_log_probs(model, ids, mask, temperature)[0].cpu()
                out[name][refs] = index.tokens(logp)
        if models.critic is not None:
            with autocast(models.device):
                position_values = models.critic(ids, mask).float().cpu()
            values[refs] = index.states(position_values)
            # V of the state before each response token: read at the previous position.
            out["token_values"][refs] = index.tokens(
                torch.nn.functional.pad(position_values[:, :-1], (1, 0))
            )
    index = StepIndex.of(rollout.steps, {r: r for r in range(len(rollout.rows))}, width)
    return Scored(
        index=index,
        old_log_probs=out["old"],
        values=values if models.critic is not None else None,
        token_values=out["token_values"] if models.critic is not None else None,
        ref_log_probs=out["ref"] if models.reference is not None else None,
        teacher_log_probs=out["teacher"] if models.teacher is not None else None,
    )


def step_batch(rollout: Rollout, scored: Scored) -> StepBatch:
    rows = []
    for i, ref in enumerate(rollout.steps):
        k = len(ref.positions)
        traj = rollout.trajectories[ref.traj]
        rows.append(
            StepRow(
                traj_id=traj.trajectory_id,
                step_index=ref.step.index,
                group_id=traj.group_id,
                reward=ref.step.reward,
                response_length=k,
                anchor=ref.step.anchor,
                value=float(scored.values[i]) if scored.values is not None else None,
                token_values=scored.token_values[i, :k].tolist()
                if scored.token_values is not None
                else None,
                old_log_probs=scored.old_log_probs[i, :k].tolist(),
                teacher_log_probs=(
                    scored.teacher_log_probs[i, :k].tolist()
                    if scored.teacher_log_probs is not None
                    else None
                ),
            )
        )
    return collate_steps(rows, pad_to=rollout.width)


def reverse_kl(batch: StepBatch) -> float:
    """Mean log π_student − log π_teacher over the student's sampled tokens (a KL estimate)."""
    assert batch.old_log_probs is not None and batch.teacher_log_probs is not None
    mask = batch.response_mask
    return (
        float((batch.old_log_probs - batch.teacher_log_probs)[mask].mean()) if mask.any() else 0.0
    )


def annotate_advantages(rollout: Rollout, advantages: torch.Tensor, mask: torch.Tensor) -> None:
    """Record each step's mean advantage in its trace (for `agentspec view`)."""
    for i, ref in enumerate(rollout.steps):
        k = int(mask[i].sum())
        ref.step.info["advantage"] = float(advantages[i, :k].mean()) if k else 0.0


def update(
    rollout: Rollout,
    batch: StepBatch,
    advantages: torch.Tensor,
    returns: torch.Tensor | None,
    scored: Scored,
    models: Models,
    cfg: TrainingSpec,
    algorithm: Algorithm,
) -> dict[str, float]:
    """Epochs of minibatch gradient steps; returns the mean of each loss metric."""
    clip_low, clip_high = clip_range(algorithm, cfg)
    loss_config = PolicyLossConfig(
        clip_low=clip_low, clip_high=clip_high, entropy_coef=cfg.entropy_coef, kl_coef=cfg.kl_coef
    )
    mask = batch.response_mask
    weights = aggregation_weights(mask, batch.traj_ids, "trajectory-mean")
    pad = models.tokenizer.pad_token_id or 0
    order = torch.Generator().manual_seed(cfg.seed)
    totals: dict[str, list[float]] = {}
    n_traj = len(rollout.trajectories)
    for _ in range(cfg.epochs):
        permutation = torch.randperm(n_traj, generator=order).tolist()
        for start in range(0, n_traj, cfg.minibatch_size):
            chosen = set(permutation[start : start + cfg.minibatch_size])
            rows = [r for r, t in enumerate(rollout.row_traj) if t in chosen]
            steps = [i for i, ref in enumerate(rollout.steps) if ref.traj in chosen]
            if not steps:
                continue
            index = StepIndex.of(
                [rollout.steps[i] for i in steps], {r: k for k, r in enumerate(rows)}, rollout.width
            )
            padded = pad_rows([rollout.rows[r] for r in rows], pad)
            ids, attention = (t.to(models.device) for t in padded)
            with autocast(models.device):
                position_logp, logits = token_log_probs(
                    models.policy, ids, attention, cfg.temperature, True
                )
            # the losses run on the CPU step tensors; gradients flow back through .cpu()
            log_probs = index.tokens(position_logp.cpu())
            entropy = (
                index.tokens(entropy_from_logits(logits).cpu()) if logits is not None else None
            )
            w = weights[steps]
            w = w / w.sum().clamp(min=1e-12)  # each minibatch is a mean over its trajectories
            out = actor_loss(
                algorithm.loss,
                log_probs,
                scored.old_log_probs[steps],
                advantages[steps],
                mask[steps],
                w,
                loss_config,
                entropy=entropy,
                ref_log_probs=scored.ref_log_probs[steps]
                if scored.ref_log_probs is not None
                else None,
            )
            loss = out.loss
            metrics = {k: float(v) for k, v in out.metrics.items()}
            if models.teacher is not None and cfg.opd_topk and logits is not None:
                distill = distillation_loss(
                    models.teacher, ids, attention, index, logits, mask[steps], w, cfg
                )
                loss = loss + distill.loss.cpu()
                metrics.update({k: float(v) for k, v in distill.metrics.items()})
            models.optimizers["policy"].zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(models.policy.parameters(), cfg.max_grad_norm)
            models.optimizers["policy"].step()
            metrics["loss/policy"] = float(loss.detach())
            if models.critic is not None and returns is not None:
                metrics["loss/value"] = critic_step(
                    models, cfg, index, ids, attention, steps, scored, returns, w
                )
            for key, value in metrics.items():
                totals.setdefault(key, []).append(value)
    result = {k: sum(v) / len(v) for k, v in totals.items()}
    if "actor/kl_loss" in result:
        result["actor/kl"] = result["actor/kl_loss"]
    for key in list(result):
        if key.startswith("actor/clipfrac") and "actor/clip_fraction" not in result:
            result["actor/clip_fraction"] = result[key]
    return result


def distillation_loss(
    teacher: Any,
    ids: torch.Tensor,
    attention: torch.Tensor,
    index: StepIndex,
    student_logits: torch.Tensor,
    mask: torch.Tensor,
    weights: torch.Tensor,
    cfg: TrainingSpec,
) -> LossOutput:
    """On-policy distillation with the teacher's logits at hand: the reverse KL
    KL(π_student ‖ π_teacher) over the teacher's top-k tokens, at every response
    position of the student's own samples (GKD, Agarwal et al. 2024), on the models' device."""
    device = student_logits.device
    index = StepIndex(*(t.to(device) for t in (index.row, index.pos, index.mask, index.state_pos)))
    mask, weights = mask.to(device), weights.to(device)
    with torch.no_grad(), autocast(device):
        _, teacher_logits = token_log_probs(teacher, ids, attention, cfg.temperature, True)
        assert teacher_logits is not None
        top_log_probs, top_ids = teacher_topk(index.tokens(teacher_logits), cfg.opd_topk)
    return topk_distillation_loss(
        index.tokens(student_logits), top_log_probs, top_ids, mask, weights, "reverse_kl"
    )


def critic_step(
    models: Models,
    cfg: TrainingSpec,
    index: StepIndex,
    ids: torch.Tensor,
    attention: torch.Tensor,
    steps: list[int],
    scored: Scored,
    returns: torch.Tensor,
    weights: torch.Tensor,
) -> float:
    with autocast(models.device):
        position_values = models.critic(ids, attention).float().cpu()
    if returns.dim() == 1:  # step-level: V(state before the step) against the step's return
        assert scored.values is not None
        step_weights = weights.sum(dim=1)
        out = value_loss(
            index.states(position_values), scored.values[steps], returns[steps], step_weights
        )
    else:  # token-level: V before each response token
        assert scored.token_values is not None
        values = index.tokens(torch.nn.functional.pad(position_values[:, :-1], (1, 0)))
        out = value_loss(values, scored.token_values[steps], returns[steps], weights)
    loss = cfg.value_coef * out.loss
    models.optimizers["critic"].zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(models.critic.parameters(), cfg.max_grad_norm)
    models.optimizers["critic"].step()
    return float(out.loss.detach())


def behaviour_clone(
    module: ModuleType,
    models: Models,
    samples: Sequence[Mapping[str, Any]],
    cfg: TrainingSpec,
    pack: bool,
) -> None:
    """Warm start: maximise the likelihood of the oracle's turns (`training.warm_start` steps)."""
    script = episode_script(module, "oracle")
    assert script is not None
    rng = random.Random(f"{cfg.seed}:warm_start")
    pool = rng.sample(list(samples), min(len(samples), cfg.warm_start_samples))
    flows = [
        module.FLOW_CLASS(ScriptedPolicy(script(s), models.tokenizer), models.tokenizer)
        for s in pool
    ]
    ids = [str(s.get("id", i)) for i, s in enumerate(pool)]

    async def play() -> list[Trajectory]:
        return list(
            await asyncio.gather(
                *(
                    f.run(s, sample_id=i, group_id=i)
                    for f, s, i in zip(flows, pool, ids, strict=True)
                )
            )
        )

    episodes = [t for t in asyncio.run(play()) if t.success is not False]
    rows = [row for t in episodes for row in training_rows(t, pack=pack)]
    if not rows:
        raise ValueError("the oracle produced no successful episode to warm-start from")
    optimizer = torch.optim.AdamW(models.policy.parameters(), lr=cfg.warm_start_lr)
    pad = models.tokenizer.pad_token_id or 0
    for _ in range(cfg.warm_start):
        chosen = rng.sample(rows, min(cfg.warm_start_batch, len(rows)))
        input_ids, attention = pad_rows(chosen, pad)
        response = torch.zeros_like(input_ids, dtype=torch.float32)
        for i, row in enumerate(chosen):
            response[i, : len(row.response_mask)] = torch.tensor(
                row.response_mask, dtype=torch.float32
            )
        input_ids, attention = input_ids.to(models.device), attention.to(models.device)
        with autocast(models.device):
            logp, _ = token_log_probs(models.policy, input_ids, attention, temperature=1.0)
        logp = logp.cpu()
        loss = -(logp * response).sum() / response.sum()
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(models.policy.parameters(), cfg.max_grad_norm)
        optimizer.step()


def evaluate(
    module: ModuleType,
    models: Models,
    samples: Sequence[Mapping[str, Any]],
    cfg: TrainingSpec,
    run: RunLog | None,
    iteration: int,
) -> dict[str, float]:
    """Greedy episodes on held-out samples: `eval/success`, `eval/reward`, per component."""
    if not samples:
        return {}
    trajectories = rollout(module, models, samples, group_size=1, temperature=0.0)
    summary = summarize(trajectories, [c.name for c in module.ENV_CLASS.reward_components])
    if run is not None and cfg.trace_samples:
        write_jsonl(
            run.path / "traces" / f"eval_{iteration:06d}.jsonl", trajectories[: cfg.trace_samples]
        )
    return {
        "eval/success": summary.success_rate,
        "eval/reward": summary.mean_reward,
        **{f"eval/reward/{k}": v for k, v in summary.reward_components.items()},
    }
