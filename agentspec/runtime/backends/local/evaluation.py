"""`agentspec eval`: a checkpoint on held-out samples, the table of `agentspec run`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from agentspec.runtime.episode.summary import RolloutSummary


def evaluate_checkpoint(
    spec: Path,
    checkpoint: str | Path,
    episodes: int,
    temperature: float = 0.0,
    note: Callable[[str], None] | None = None,
) -> RolloutSummary:
    """Greedy (by default) episodes of `checkpoint` — a checkpoint, a run directory (its
    latest checkpoint) or any model name but `builtin:*` — on the held-out samples: those
    the run held out when the checkpoint is a run's, else the spec's. `note` hears when
    fewer samples than asked are held out."""
    import asyncio

    from agentspec.compiler.build import import_spec
    from agentspec.runtime.backends.local.models import load_checkpoint
    from agentspec.runtime.episode.loop import run_episodes
    from agentspec.runtime.episode.summary import summarize
    from agentspec.runtime.policies.hf import HFPolicy
    from agentspec.runtime.spec.run import evaluation_samples, sample_ids
    from agentspec.spec.model import TrainingSpec

    module = import_spec(spec)
    held_out = run_eval_samples(checkpoint)
    if held_out is None:
        held_out = TrainingSpec.model_validate(module.TRAINING).eval_samples
    # evaluation trains nothing: no training samples needed
    _, samples, says = evaluation_samples(module, episodes, held_out, train_limit=0)
    if says and note is not None:
        note(says)
    model, tokenizer = load_checkpoint(str(checkpoint))
    model.eval()
    flow = module.FLOW_CLASS(HFPolicy(model, tokenizer), tokenizer, temperature=temperature)
    trajectories = asyncio.run(run_episodes(flow, samples, sample_ids=sample_ids(samples)))
    return summarize(trajectories, [c.name for c in module.ENV_CLASS.reward_components])


def run_eval_samples(checkpoint: str | Path) -> int | None:
    """`eval_samples` of the run a checkpoint belongs to (its `config.yaml`, in the run
    directory itself or above `RUN/checkpoints/iter_N/policy`), or None for a model that
    is no run's."""
    import yaml

    from agentspec.runtime.backends.local.runlog import read_run_config

    path = Path(checkpoint)
    for folder in [path, *path.parents][:4]:
        if (folder / "checkpoints").is_dir() and (folder / "config.yaml").is_file():
            try:
                value = read_run_config(folder).get("eval_samples")
            except (OSError, UnicodeDecodeError, yaml.YAMLError, TypeError, ValueError):
                return None  # not a config agentspec wrote: play no held-out count
            return value if isinstance(value, int) and value > 0 else None
    return None
