"""`agentspec eval`: a checkpoint on held-out samples, the table of `agentspec run`."""

from __future__ import annotations

from pathlib import Path

from agentspec.runtime.episode.summary import RolloutSummary


def resolve_checkpoint(path: Path) -> Path:
    """A checkpoint folder (with policy/), or a run directory's latest checkpoint."""
    from agentspec.runtime.backends.local.checkpoint import latest_checkpoint

    if (path / "policy" / "config.json").is_file():
        return path
    latest = latest_checkpoint(path / "checkpoints")
    if latest is None:
        raise FileNotFoundError(
            f"{path} is neither a checkpoint nor a run directory with checkpoints"
        )
    return latest


def evaluate_checkpoint(
    spec: Path, checkpoint: Path, episodes: int, temperature: float = 0.0
) -> RolloutSummary:
    import asyncio

    from agentspec.compiler.build import import_spec
    from agentspec.runtime.backends.local.models import load_checkpoint
    from agentspec.runtime.backends.local.trainer import split_samples
    from agentspec.runtime.episode.loop import run_episodes
    from agentspec.runtime.episode.summary import summarize
    from agentspec.runtime.policies.hf import HFPolicy
    from agentspec.spec.model import TrainingSpec

    module = import_spec(spec)
    cfg = TrainingSpec.model_validate({**module.TRAINING, "eval_samples": episodes})
    _, samples = split_samples(module, cfg)
    model, tokenizer = load_checkpoint(resolve_checkpoint(checkpoint) / "policy")
    model.eval()
    flow = module.FLOW_CLASS(HFPolicy(model, tokenizer), tokenizer, temperature=temperature)
    ids = [str(s.get("id", i)) for i, s in enumerate(samples)]
    trajectories = asyncio.run(run_episodes(flow, samples, sample_ids=ids))
    return summarize(trajectories, [c.name for c in module.ENV_CLASS.reward_components])
