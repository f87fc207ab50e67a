"""`agentspec eval`: a checkpoint on held-out samples, the table of `agentspec run`."""

from __future__ import annotations

from pathlib import Path

from agentspec.runtime.episode.summary import RolloutSummary


def evaluate_checkpoint(
    spec: Path, checkpoint: str | Path, episodes: int, temperature: float = 0.0
) -> RolloutSummary:
    """Greedy (by default) episodes of `checkpoint` — a checkpoint, a run directory (its
    latest checkpoint) or any model name but `builtin:*` — on the held-out samples."""
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
    _, samples = split_samples(module, cfg, train_limit=0)  # evaluation trains nothing
    model, tokenizer = load_checkpoint(str(checkpoint))
    model.eval()
    flow = module.FLOW_CLASS(HFPolicy(model, tokenizer), tokenizer, temperature=temperature)
    ids = [str(s.get("id", i)) for i, s in enumerate(samples)]
    trajectories = asyncio.run(run_episodes(flow, samples, sample_ids=ids))
    return summarize(trajectories, [c.name for c in module.ENV_CLASS.reward_components])
