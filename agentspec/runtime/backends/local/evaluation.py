"""`agentspec eval`: a checkpoint on held-out samples, the table of `agentspec run`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

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
    from agentspec.runtime.compiled.samples import evaluation_samples, sample_ids
    from agentspec.runtime.episode.loop import run_episodes
    from agentspec.runtime.episode.summary import summarize
    from agentspec.runtime.policies.hf import HFPolicy
    from agentspec.spec.model import TrainingSpec

    module = import_spec(spec)
    if note is not None and (other := other_spec_note(checkpoint, spec)):
        note(other)
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
    """`eval_samples` of the run a checkpoint belongs to, or None for a model that is
    no run's."""
    value = run_config(checkpoint).get("eval_samples")
    return value if isinstance(value, int) and value > 0 else None


def run_config(checkpoint: str | Path) -> dict[str, Any]:
    """The `config.yaml` of the run a checkpoint belongs to (in the run directory
    itself or above `RUN/checkpoints/iter_N/policy`); {} for a model that is no run's,
    or a config agentspec did not write."""
    import yaml

    from agentspec.runtime.backends.local.runlog import read_run_config

    path = Path(checkpoint)
    for folder in [path, *path.parents][:4]:
        if (folder / "checkpoints").is_dir() and (folder / "config.yaml").is_file():
            try:
                return read_run_config(folder)
            except (OSError, UnicodeDecodeError, yaml.YAMLError, TypeError, ValueError):
                return {}
    return {}


def other_spec_note(checkpoint: str | Path, spec: Path) -> str:
    """A note when `checkpoint` is a run's that trained another spec file than `spec`
    (its tokenizer and held-out count are that spec's); "" otherwise."""
    from agentspec.compiler.build import spec_sha256

    config = run_config(checkpoint)
    trained = config.get("spec_sha256")
    if not isinstance(trained, str) or trained == spec_sha256(spec):
        return ""
    return (
        f"{checkpoint} was trained on {config.get('spec', 'another spec')}, not on {spec} as it"
        " is now (its tokenizer was built from that spec's text, and what it learnt is for"
        " that task)"
    )
