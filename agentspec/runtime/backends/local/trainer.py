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

from agentspec.core.presets import ALGORITHMS, Algorithm, clip_range, critic_warmup, kl_coef
from agentspec.core.row_layout import layout_for_template
from agentspec.runtime.algorithms import (
    ESTIMATORS,
    StepBatch,
    advantage_config,
    compute_advantages,
)
from agentspec.runtime.backends.local.checkpoint import (
    WARM_START,
    TrainerState,
    latest_checkpoint,
    load_checkpoint_into,
    prune_checkpoints,
    save_checkpoint,
)
from agentspec.runtime.backends.local.config import ConfigError
from agentspec.runtime.backends.local.device import autocast
from agentspec.runtime.backends.local.model_defaults import RunSettings, run_settings
from agentspec.runtime.backends.local.models import (
    Models,
    anchor_reference,
    build_models,
    critic_from_policy,
)
from agentspec.runtime.backends.local.progress import PhaseSink, Reporter
from agentspec.runtime.backends.local.runlog import RunLog
from agentspec.runtime.backends.local.scoring import (
    Scored,
    annotate_advantages,
    score,
    step_batch,
)
from agentspec.runtime.backends.local.tensors import Rollout, build_rollout
from agentspec.runtime.backends.local.update import update
from agentspec.runtime.backends.local.warm_start import behaviour_clone, demonstrator_script
from agentspec.runtime.episode.loop import run_episodes
from agentspec.runtime.episode.summary import RolloutSummary, summarize
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
    from agentspec.runtime.compiled.samples import held_out_note

    module, settings, run, config = open_run(spec_path, out_dir, overrides, resume)
    cfg = settings.cfg
    reporter = Reporter(phases, settings.origins, settings.notes)
    seed_and_threads(cfg)
    train_samples, eval_samples = split_samples(module, cfg)
    small = held_out_note(module, len(train_samples) + len(eval_samples), cfg.eval_samples)
    if small:
        reporter.note(small)
    reporter.phase(f"loading {cfg.model}")
    models = build_models(cfg, module, train_samples, run.path, reporter.note)
    state = restore(run, models, resume, reporter.note)
    # once the run can go on: a refused resume leaves it as it was
    run.write_config(config, resolved_defaults(config))
    first = state.iteration + 1
    if resume and first > cfg.iterations:
        reporter.note(
            f"{run.path}: the run has trained all its {state.iteration} iterations: nothing to"
            f" do (training.iterations is the total: --set iterations={state.iteration + 10}"
            " trains 10 more)"
        )

    def log(iteration: int, record: dict[str, float]) -> None:
        run.log(record)
        if progress:
            progress(iteration, record)

    # the chat template is the layout's second input: rewriting earlier turns means per-step rows
    pack = layout_for_template(module.LAYOUT, chat_for_spec(module, models.tokenizer)) == "packed"
    try:
        if not state.warm_started:
            cloned: dict[str, float] = {}
            if cfg.warm_start:
                cloned = behaviour_clone(module, models, train_samples, cfg, pack, reporter)
                critic_from_policy(models, cfg)
            state.warm_started = True
            scores = evaluate(module, models, eval_samples, cfg, run, 0, reporter)
            log(0, {"iteration": 0, "env_steps": 0, **cloned, **scores})
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


def seed_and_threads(cfg: TrainingSpec) -> None:
    if cfg.torch_threads:
        torch.set_num_threads(cfg.torch_threads)
    random.seed(cfg.seed)
    torch.manual_seed(cfg.seed)


def training_phase(iterations: int) -> str:
    return f"training: {iterations} iteration{'s' if iterations != 1 else ''}"


def open_run(
    spec_path: str | Path, out_dir: str | Path, overrides: Mapping[str, Any] | None, resume: bool
) -> tuple[ModuleType, RunSettings, RunLog, dict[str, Any]]:
    """The compiled spec, the resolved settings (with the model's defaults), the run
    directory, and the configuration to write into it (a resumed run's is its own, see
    `_resumed`)."""
    from agentspec.compiler.build import import_spec, spec_sha256
    from agentspec.core.diagnostics import waived_by
    from agentspec.runtime.compiled.samples import no_data
    from agentspec.runtime.compiled.scripts import has_oracle

    module = import_spec(spec_path, waived_by(overrides or {}))
    if module.DATA_SOURCE is None:  # before the run directory is made
        raise no_data(module)
    settings = run_settings(spec_path, module.TRAINING, dict(overrides or {}))
    cfg = settings.cfg
    if cfg.warm_start and not cfg.warm_start_demonstrator and not has_oracle(module):
        where = settings.origins.get("warm_start", str(spec_path))
        raise ConfigError(
            f"{where}: training.warm_start is {cfg.warm_start}, but the spec has no `oracle`"
            " for behaviour cloning to imitate; set warm_start=0, add an `oracle:`, or name"
            " a training.warm_start_demonstrator"
        )
    if cfg.warm_start and cfg.warm_start_demonstrator:
        demonstrator_script(cfg, settings.origins.get("warm_start_demonstrator", str(spec_path)))
    out = Path(out_dir)
    if not resume and ((out / "metrics.jsonl").exists() or (out / "checkpoints").exists()):
        raise ConfigError(
            f"{out} already holds a run; continue it with --resume, or train into another --out"
        )
    if resume and not (out / "config.yaml").is_file():
        raise ConfigError(f"nothing to resume: {out} holds no run; train without --resume")
    run = RunLog(out)
    resolved = {"spec": str(spec_path), "spec_sha256": spec_sha256(spec_path), **cfg.model_dump()}
    if resume:
        resolved = _resumed(run.read_config(), resolved, set(overrides or {}), out_dir, settings)
    return module, settings, run, resolved


def _resumed(
    before: Mapping[str, Any],
    now: dict[str, Any],
    given: set[str],
    out_dir: str | Path,
    settings: RunSettings,
) -> dict[str, Any]:
    """The configuration a resumed run goes on with: the run's own (`before`), of which
    this command may change only `iterations`, upwards (nothing else reads the count);
    any other setting it gives, or a changed spec file, that differs is a ConfigError.
    `settings.cfg` becomes that configuration."""
    refused = [k for k in sorted(given) if k in now and before.get(k) != now[k]]
    more = "iterations" in refused and now["iterations"] > before.get("iterations", 0)
    if more:
        refused.remove("iterations")
    if before.get("spec_sha256") != now["spec_sha256"]:
        refused.insert(0, "spec_sha256")
    if refused:
        differences = _differences(
            {k: before.get(k) for k in refused}, {k: now[k] for k in refused}
        )
        raise ConfigError(
            f"{out_dir} was trained with another configuration ({differences}); "
            "resume with the same one (a larger total, `--set iterations=N`, extends it)"
        )
    own = {k: before[k] for k in TrainingSpec.model_fields if k in before}
    if more:
        own["iterations"] = now["iterations"]
    settings.cfg = TrainingSpec.model_validate(own)
    if more:
        settings.notes.append(
            f"{out_dir}: continuing the run from {before['iterations']} to {now['iterations']} iterations"
        )
    return {"spec": now["spec"], "spec_sha256": now["spec_sha256"], **settings.cfg.model_dump()}


def _differences(before: Mapping[str, Any], now: Mapping[str, Any]) -> str:
    """What changed between a run's configuration and this one's, e.g. `learning_rate
    0.0003 → 0.5`; a changed spec is said as such (its hash is not worth reading)."""
    said = []
    for key in [*before, *(k for k in now if k not in before)]:
        if before.get(key) == now.get(key):
            continue
        if key == "spec_sha256":
            said.append("the spec file changed")
        else:
            said.append(f"{key} {before.get(key)!r} → {now.get(key)!r}")
    return ", ".join(said)


def save(run: RunLog, state: TrainerState, models: Models, cfg: TrainingSpec) -> Path:
    """A checkpoint of the models, their optimisers and the loop's state; then only the
    newest `keep_checkpoints` are kept."""
    root = run.path / "checkpoints"
    path = save_checkpoint(
        root, state, models.policy, models.tokenizer, models.critic, models.optimizers
    )
    if cfg.keep_checkpoints is not None:
        prune_checkpoints(root, cfg.keep_checkpoints)
    return path


def restore(run: RunLog, models: Models, resume: bool, note: Callable[[str], None]) -> TrainerState:
    """The latest checkpoint's state loaded into `models` (a fresh state when the run was
    stopped before its first one); the run's metrics after that checkpoint are dropped,
    to be redone. A checkpoint that is named but missing or unreadable is an error:
    starting again would silently redo (and overwrite) what was trained."""
    if not resume:
        return TrainerState()
    root = run.path / "checkpoints"
    try:
        checkpoint = latest_checkpoint(root)
    except (OSError, UnicodeDecodeError, ValueError):  # `latest` a folder, or not text
        checkpoint = None
    if checkpoint is None and (root / "latest").exists():
        raise ConfigError(
            f"{root / 'latest'} names a checkpoint that is not in {root}; write the name of"
            " one that is (e.g. the newest iter_* folder) into it"
        )
    if checkpoint is None:
        note(f"{run.path} was stopped before its first checkpoint: the run starts again")
        run.truncate_after(-1)
        return TrainerState()
    try:
        state = load_checkpoint_into(checkpoint, models.policy, models.critic, models.optimizers)
    except Exception as exc:  # a damaged folder: transformers, safetensors, torch each raise
        raise ConfigError(
            f"checkpoint {checkpoint} cannot be loaded ({type(exc).__name__}: {exc}); point"
            f" {root / 'latest'} at an earlier iter_* folder, or train into another --out"
        ) from None
    run.truncate_after(state.iteration)
    return state


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
    warmup = critic_warmup(algorithm, cfg)
    policy_iteration = iteration - warmup
    policy_lr = cfg.learning_rate * min(1.0, policy_iteration / max(cfg.lr_warmup_iterations, 1))
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
        train_policy=policy_iteration > 0,
    )

    if iteration % cfg.eval_every == 0 or iteration == 1:
        write_jsonl(
            run.path / "traces" / f"iter_{iteration:06d}.jsonl", trajectories[: cfg.trace_samples]
        )
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


def update_scores_policy(algorithm: Algorithm, cfg: TrainingSpec, episodes: int) -> bool:
    """Whether the policy's old log-probs can come from the update's first forward pass
    instead of a scoring pass of their own: when every episode is in one minibatch, that
    pass runs on the very policy that sampled, before any step, on the same rows; and the
    estimator does not read them before the update."""
    reads_them = "old_log_probs" in ESTIMATORS.get(algorithm.estimator).requires
    return not reads_them and cfg.minibatch_size >= episodes


def resolved_defaults(config: Mapping[str, Any]) -> dict[str, str]:
    """What each unset (`null`) setting of `config` that the algorithm reads resolved
    to, for `config.yaml`'s comments: `kl_coef: null  # resolves to 0.02 (steppo)`."""
    algorithm = ALGORITHMS.get(str(config["algorithm"]))
    low, high = clip_range(algorithm, config)
    values: dict[str, float] = {"kl_coef": kl_coef(algorithm, config)}
    if algorithm.trains_critic:
        values["critic_warmup"] = critic_warmup(algorithm, config)
    if algorithm.clips_steps:
        values |= {"step_clip_low": low, "step_clip_high": high}
    return {
        key: f"resolves to {value:g} ({algorithm.name})"
        for key, value in values.items()
        if key in config and config[key] is None
    }


def rollout_metrics(
    summary: RolloutSummary, trajectories: Sequence[Trajectory]
) -> dict[str, float]:
    """`rollout/…` and `reward/<component>`: what the episodes did."""
    return {
        "rollout/success": summary.success_rate,
        "rollout/reward": summary.mean_reward,
        "rollout/steps": summary.mean_steps,
        "rollout/env_steps": sum(len(t.steps) for t in trajectories),
        "rollout/parse_error_rate": summary.parse_error_rate,
        "rollout/tool_error_rate": summary.tool_error_rate,
        # spec expressions that raised (each became its default, a reward 0.0)
        "rollout/expression_errors": summary.expression_errors,
        "rollout/all_equal_groups": all_equal_group_share(trajectories),
        **{f"reward/{k}": v for k, v in summary.reward_components.items()},
    }


def all_equal_group_share(trajectories: Sequence[Trajectory]) -> float:
    """The share of prompt groups whose episodes all returned the same: a group-relative
    estimator gives them zero advantage, so they teach nothing."""
    returns: dict[str, set[float]] = {}
    for t in trajectories:
        returns.setdefault(t.group_id, set()).add(round(t.total_reward, 9))
    return sum(len(r) == 1 for r in returns.values()) / max(len(returns), 1)


def explained_variance(
    scored: Scored, batch: StepBatch, returns: torch.Tensor | None
) -> dict[str, float]:
    """1 − Var(returns − values) / Var(returns) of the critic on this rollout (critic methods):
    1 is a perfect critic, 0 one that predicts the mean, below 0 one that adds noise."""
    if returns is None:
        return {}
    if returns.dim() == 1 and scored.values is not None:
        target, values = returns, scored.values
    elif returns.dim() == 2 and scored.token_values is not None:
        target, values = returns[batch.response_mask], scored.token_values[batch.response_mask]
    else:
        return {}
    variance = float(target.var(unbiased=False))
    if variance == 0.0:
        return {}
    return {
        "critic/explained_variance": 1.0 - float((target - values).var(unbiased=False)) / variance
    }


def throughput_metrics(
    trajectories: Sequence[Trajectory],
    rollout: Rollout,
    cfg: TrainingSpec,
    started: float,
    rollout_seconds: float,
) -> dict[str, float]:
    """`perf/…`: tokens per second of the rollout, of the update, of the iteration."""
    elapsed = time.perf_counter() - started
    generated = sum(len(s.response_ids) for t in trajectories for s in t.steps)
    processed = sum(len(r.input_ids) for r in rollout.rows) * (cfg.epochs + 1)
    return {
        "perf/rollout_tokens_per_s": generated / max(rollout_seconds, 1e-9),
        "perf/tokens_per_s": (generated + processed) / max(elapsed, 1e-9),
        # scoring + epochs of updates: the tokens the forward/backward passes processed
        "perf/update_tokens_per_s": processed / max(elapsed - rollout_seconds, 1e-9),
        "perf/iteration_s": elapsed,
    }


# ------------------------------------------------------------- the pieces


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
