"""`agentspec train` on one machine: the whole algorithm, top to bottom.

    for each iteration:
        sample prompts × group size  →  roll out with the current policy
        reward components (the generated env)  →  critic values of each step's state
        advantages (the named estimator)  →  epochs × minibatches of the named loss
        metrics, evaluation, checkpoint

Everything algorithm-specific comes from `agentspec.runtime.algorithms`
(`ALGORITHMS` names an estimator and a loss); this file only orders the work:
the models are built in `models.py`, scored in `scoring.py`, updated in
`update.py`, warm-started in `warm_start.py`.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from agentspec.core.presets import ALGORITHMS, Algorithm, critic_warmup
from agentspec.core.row_layout import layout_for_template
from agentspec.runtime.algorithms import (
    ESTIMATORS,
    advantage_config,
    compute_advantages,
)
from agentspec.runtime.backends.local.checkpoint import (
    WARM_START,
    TrainerState,
)
from agentspec.runtime.backends.local.device import autocast
from agentspec.runtime.backends.local.iteration_metrics import (
    explained_variance,
    rollout_metrics,
    throughput_metrics,
)
from agentspec.runtime.backends.local.models import (
    Models,
    anchor_reference,
    build_models,
    critic_from_policy,
)
from agentspec.runtime.backends.local.progress import PhaseSink, Reporter
from agentspec.runtime.backends.local.run_folder import open_run, resolved_defaults, restore, save
from agentspec.runtime.backends.local.runlog import RunLog
from agentspec.runtime.backends.local.scoring import (
    annotate_advantages,
    score,
    step_batch,
)
from agentspec.runtime.backends.local.tensors import build_rollout
from agentspec.runtime.backends.local.update import update
from agentspec.runtime.backends.local.warm_start import behaviour_clone
from agentspec.runtime.episode.loop import run_episodes
from agentspec.runtime.episode.summary import summarize
from agentspec.runtime.episode.trajectory import Trajectory, write_jsonl
from agentspec.runtime.policies.hf import HFPolicy
from agentspec.runtime.text.chat_templates import chat_for_spec
from agentspec.spec.model import TrainingSpec

__all__ = ["Models", "TrainingInterrupted", "build_models", "train", "train_iteration"]

ProgressFn = Callable[[int, dict[str, float]], None]


class TrainingInterrupted(Exception):
    """Ctrl-C during training; a checkpoint was saved at `path`."""

    def __init__(self, path: Path | None):
        super().__init__(f"interrupted; checkpoint at {path}")
        self.path = path


# ---------------------------------------------------------------- the loop


def train(
    spec_path: str | Path,
    out_dir: str | Path,
    overrides: Mapping[str, Any] | None = None,
    *,
    resume: bool = False,
    progress: ProgressFn | None = None,
    phases: PhaseSink | None = None,
) -> Path:
    """Train the spec's policy; returns the run directory. See the module docstring.
    `progress` gets each iteration's metrics; `phases` hears what each phase does."""
    module, settings, run, config = open_run(spec_path, out_dir, overrides, resume)
    cfg = settings.cfg
    reporter = Reporter(phases, settings.origins, settings.notes)
    seed_and_threads(cfg)
    samples = _samples(module, cfg, reporter)
    train_samples, eval_samples = samples
    reporter.phase(f"loading {cfg.model}")
    models = build_models(cfg, module, train_samples, run.path, reporter.note)
    state = restore(run, models, resume, reporter.note)
    # once the run can go on: a refused resume leaves it as it was
    run.write_config(config, resolved_defaults(config))
    first = state.iteration + 1
    if resume and first > cfg.iterations:
        reporter.note(_nothing_left(run, state))

    log = _logger(run, progress)
    # the chat template is the layout's second input: rewriting earlier turns means per-step rows
    pack = layout_for_template(module.LAYOUT, chat_for_spec(module, models.tokenizer)) == "packed"
    try:
        if not state.warm_started:
            log(0, _warm_start(module, models, samples, cfg, pack, run, reporter))
            state.warm_started = True
            save(run, state, models, cfg)
        anchor_reference(models, cfg, run.path / "checkpoints" / WARM_START if resume else None)
        reporter.phase(training_phase(cfg.iterations), cfg.iterations)
        for iteration in range(first, cfg.iterations + 1):
            record = train_iteration(
                module, models, cfg.algorithm, train_samples, cfg, pack, iteration, run
            )
            if iteration == first:  # the expected time, up front
                left, seconds = cfg.iterations - first + 1, record["perf/iteration_s"]
                reporter.pace("training", "iteration", seconds, left, "iterations")
            state.iteration = iteration
            state.env_steps += int(record["rollout/env_steps"])
            record["env_steps"] = state.env_steps
            last = iteration == cfg.iterations
            if iteration % cfg.eval_every == 0 or last:
                record.update(evaluate(module, models, eval_samples, cfg, run, iteration, reporter))
                reporter.phase(training_phase(cfg.iterations), cfg.iterations)
            log(iteration, record)
            if iteration % cfg.checkpoint_every == 0 or last:
                save(run, state, models, cfg)
    except KeyboardInterrupt:
        raise TrainingInterrupted(save(run, state, models, cfg)) from None
    finally:
        run.close()
    run.plot()
    return run.path


def _samples(
    module: ModuleType, cfg: TrainingSpec, reporter: Reporter
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Training and held-out samples, saying so when the held-out ones are few."""
    from agentspec.runtime.compiled.samples import held_out_note

    train_samples, eval_samples = split_samples(module, cfg)
    small = held_out_note(module, len(train_samples) + len(eval_samples), cfg.eval_samples)
    if small:
        reporter.note(small)
    return train_samples, eval_samples


def _logger(run: RunLog, progress: ProgressFn | None) -> Callable[[int, dict[str, float]], None]:
    """Each iteration's record into the run's metrics, and to `progress` when given."""

    def log(iteration: int, record: dict[str, float]) -> None:
        run.log(record)
        if progress:
            progress(iteration, record)

    return log


def _write_traces(run: RunLog, iteration: int, trajectories: Sequence[Trajectory]) -> None:
    write_jsonl(run.path / "traces" / f"iter_{iteration:06d}.jsonl", trajectories)


def _nothing_left(run: RunLog, state: TrainerState) -> str:
    return (
        f"{run.path}: the run has trained all its {state.iteration} iterations: nothing to"
        f" do (training.iterations is the total: --set iterations={state.iteration + 10}"
        " trains 10 more)"
    )


def _warm_start(
    module: ModuleType,
    models: Models,
    samples: tuple[Sequence[Mapping[str, Any]], Sequence[Mapping[str, Any]]],
    cfg: TrainingSpec,
    pack: bool,
    run: RunLog,
    reporter: Reporter,
) -> dict[str, float]:
    """Behaviour cloning where the spec asks for it, then the held-out evaluation of the
    policy RL starts from (iteration 0's record)."""
    train_samples, eval_samples = samples
    cloned: dict[str, float] = {}
    if cfg.warm_start:
        cloned = behaviour_clone(module, models, train_samples, cfg, pack, reporter)
        critic_from_policy(models, cfg)
    scores = evaluate(module, models, eval_samples, cfg, run, 0, reporter)
    return {"iteration": 0, "env_steps": 0, **cloned, **scores}


def seed_and_threads(cfg: TrainingSpec) -> None:
    if cfg.torch_threads:
        torch.set_num_threads(cfg.torch_threads)
    random.seed(cfg.seed)
    torch.manual_seed(cfg.seed)


def training_phase(iterations: int) -> str:
    return f"training: {iterations} iteration{'s' if iterations != 1 else ''}"


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
    reuse = update_scores_policy(algorithm, cfg, len(trajectories))
    scored = score(batch_rollout, models, cfg.temperature, policy_log_probs=not reuse)
    batch = step_batch(batch_rollout, scored)

    # 3. Advantages from the algorithm's estimator (OPD's teacher term included).
    advantages = compute_advantages(
        algorithm.estimator, batch, advantage_config(cfg.model_dump(), algorithm.task_estimator)
    )
    annotate_advantages(batch_rollout, advantages.advantages, batch.response_mask)

    # 4. Epochs × minibatches of the algorithm's loss (and the critic's).
    # the policy waits while the critic warms up; its learning-rate warm-up starts after
    policy_iteration = iteration - critic_warmup(algorithm, cfg)
    policy_lr = _set_policy_lr(models, cfg, policy_iteration)
    losses = update(
        batch_rollout,
        batch,
        advantages.advantages,
        advantages.returns,
        scored,
        models,
        cfg,
        algorithm,
        train_policy=policy_iteration > 0,
    )

    if iteration % cfg.eval_every == 0 or iteration == 1:
        _write_traces(run, iteration, trajectories[: cfg.trace_samples])
    summary = summarize(trajectories, [c.name for c in module.ENV_CLASS.reward_components])
    return {
        "iteration": iteration,
        **rollout_metrics(summary, trajectories),
        **{k: float(v) for k, v in advantages.metrics.items()},
        **explained_variance(scored, batch, advantages.returns),
        **losses,
        **throughput_metrics(trajectories, batch_rollout, cfg, started, rollout_seconds),
        "optim/policy_lr": max(policy_lr, 0.0),
    }


def _set_policy_lr(models: Models, cfg: TrainingSpec, policy_iteration: int) -> float:
    """The policy's learning rate this iteration: warming up linearly over
    `lr_warmup_iterations` from the first iteration it trains (≤ 0 while it waits)."""
    policy_lr = cfg.learning_rate * min(1.0, policy_iteration / max(cfg.lr_warmup_iterations, 1))
    for group in models.optimizers["policy"].param_groups:
        group["lr"] = policy_lr
    return policy_lr


def update_scores_policy(algorithm: Algorithm, cfg: TrainingSpec, episodes: int) -> bool:
    """Whether the policy's old log-probs can come from the update's first forward pass
    instead of a scoring pass of their own: when every episode is in one minibatch, that
    pass runs on the very policy that sampled, before any step, on the same rows; and the
    estimator does not read them before the update."""
    reads_them = "old_log_probs" in ESTIMATORS.get(algorithm.estimator).requires
    return not reads_them and cfg.minibatch_size >= episodes


def split_samples(
    module: ModuleType, cfg: TrainingSpec, train_limit: int | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Training samples (at most `train_limit`) and held-out evaluation samples.

    The held-out set is the spec's `eval_split`, a generator's `test` split, or
    else the last `eval_samples` samples of the data (removed from training).
    """
    from agentspec.runtime.compiled.samples import held_out_split

    return held_out_split(module, cfg.eval_samples, train_limit)


def rollout(
    module: ModuleType,
    models: Models,
    samples: Sequence[Mapping[str, Any]],
    group_size: int,
    temperature: float,
    on_episode: Callable[[Trajectory], None] | None = None,
) -> list[Trajectory]:
    models.policy.eval()
    flow = module.FLOW_CLASS(
        HFPolicy(models.policy, models.tokenizer), models.tokenizer, temperature=temperature
    )
    ids = [str(s.get("id", i)) for i, s in enumerate(samples)]
    with torch.no_grad(), autocast(models.device):
        trajectories = asyncio.run(
            run_episodes(
                flow, list(samples), group_size=group_size, sample_ids=ids, on_episode=on_episode
            )
        )
    models.policy.train()
    return trajectories


def evaluate(
    module: ModuleType,
    models: Models,
    samples: Sequence[Mapping[str, Any]],
    cfg: TrainingSpec,
    run: RunLog | None,
    iteration: int,
    reporter: Reporter | None = None,
) -> dict[str, float]:
    """Greedy episodes on held-out samples: `eval/success`, `eval/reward` (and per
    component), steps, and the parse and tool error rates."""
    if not samples:
        return {}
    reporter = reporter or Reporter()
    noun = "sample" if len(samples) == 1 else "samples"
    reporter.phase(f"evaluating on {len(samples)} held-out {noun}", len(samples))
    played = iter(range(1, len(samples) + 1))
    trajectories = rollout(
        module, models, samples, 1, 0.0, on_episode=lambda _: reporter.advance(next(played))
    )
    summary = summarize(trajectories, [c.name for c in module.ENV_CLASS.reward_components])
    if run is not None and cfg.trace_samples:
        write_jsonl(
            run.path / "traces" / f"eval_{iteration:06d}.jsonl", trajectories[: cfg.trace_samples]
        )
    return {
        "eval/success": summary.success_rate,
        "eval/reward": summary.mean_reward,
        "eval/steps": summary.mean_steps,
        "eval/parse_error_rate": summary.parse_error_rate,
        "eval/tool_error_rate": summary.tool_error_rate,
        "eval/expression_errors": summary.expression_errors,
        **{f"eval/reward/{k}": v for k, v in summary.reward_components.items()},
    }
