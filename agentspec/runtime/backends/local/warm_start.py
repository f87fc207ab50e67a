"""The warm start: behaviour cloning on the oracle's successful episodes.

RL from a random tiny model rarely finds the tool; `training.warm_start` steps
of maximum likelihood on what the spec's oracle does give it a policy that can.
With `training.warm_start_demonstrator` the episodes are that callable's instead,
every one it plays to the end: a demonstrator of a simpler rule than the task's,
which RL then has to improve on.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any

import torch

from agentspec.runtime.backends.local.config import ConfigError
from agentspec.runtime.backends.local.device import autocast
from agentspec.runtime.backends.local.models import Models
from agentspec.runtime.backends.local.progress import Reporter
from agentspec.runtime.backends.local.tensors import outputs_after, pad_rows, shared_prefix
from agentspec.runtime.compiled.scripts import (
    PolicyError,
    episode_script,
    hook_script,
    lazy_oracle,
    sample_policy,
)
from agentspec.runtime.episode.rows import TrainingRow, training_rows
from agentspec.runtime.episode.trajectory import TerminationReason, Trajectory
from agentspec.spec.model import TrainingSpec


class WarmStartError(ConfigError):
    """The oracle's episodes leave nothing to clone: the spec (or its oracle) is broken."""


def _endings(played: Sequence[Trajectory]) -> str:
    """How `played` episodes ended, then the first one's error: `(3 ended `env_error`,
    1 ended `policy_error`); e.g. oracle for sample s6: spec.yaml:40: UndefinedError: …`."""
    endings = Counter(t.termination.value for t in played)
    failed = ", ".join(f"{n} ended `{why}`" for why, n in endings.most_common())
    example = next((f"; e.g. {t.failure}" for t in played if t.failure), "")
    return f"({failed}){example}"


def _no_clone(played: Sequence[Trajectory], who: str = "the oracle") -> str:
    if who != "the oracle":
        return (
            f"behaviour cloning: none of {who}'s {len(played)} episodes can be cloned "
            f"{_endings(played)}; `--set warm_start=0` trains without cloning"
        )
    return (
        f"behaviour cloning: none of the oracle's {len(played)} episodes succeeded "
        f"{_endings(played)}. `agentspec test SPEC` shows why at the oracle; "
        "`--set warm_start=0` trains without cloning"
    )


def demonstrator_script(cfg: TrainingSpec, where: str = "") -> Any:
    """The turns `training.warm_start_demonstrator` plays on a sample (one per step, as
    the oracle's are); a callable that cannot be loaded is a `WarmStartError` (before
    the run starts)."""
    assert cfg.warm_start_demonstrator is not None
    location = f"training.warm_start_demonstrator, {where}" if where else ""
    try:
        hook = hook_script(cfg.warm_start_demonstrator, location)
    except PolicyError as exc:
        raise WarmStartError(str(exc).replace("the oracle hook", "the demonstrator")) from None
    return lazy_oracle(hook)


def behaviour_clone(
    module: ModuleType,
    models: Models,
    samples: Sequence[Mapping[str, Any]],
    cfg: TrainingSpec,
    pack: bool,
    reporter: Reporter | None = None,
) -> dict[str, float]:
    """Maximise the likelihood of the oracle's turns (`training.warm_start` steps), or
    of `training.warm_start_demonstrator`'s; `reporter` hears each step, and the
    expected time after the first.

    Returns the metrics iteration 0 logs: the cloning loss (mean negative
    log-likelihood per response token) of the first and last steps, and how many
    oracle episodes were cloned."""
    reporter = reporter or Reporter()
    rng = random.Random(f"{cfg.seed}:warm_start")
    pool = rng.sample(list(samples), min(len(samples), cfg.warm_start_samples))
    who = "the demonstrator" if cfg.warm_start_demonstrator else "the oracle"
    reporter.phase(f"behaviour cloning: {who} plays {len(pool)} samples")
    script = demonstrator_script(cfg) if cfg.warm_start_demonstrator else None
    played = oracle_episodes(module, models, pool, script)
    # a turn that failed on its sample (`policy_error`) is no expert episode
    cloned = (t for t in played if t.termination is not TerminationReason.POLICY_ERROR)
    # a demonstrator is cloned as it plays: its rule is not the task's, by design
    episodes = [t for t in cloned if script is not None or t.success is not False]
    rows = [row for t in episodes for row in training_rows(t, pack=pack)]
    if not rows:
        raise WarmStartError(_no_clone(played, who))
    if len(episodes) < len(played):
        kept = {id(t) for t in episodes}
        left_out = [t for t in played if id(t) not in kept]
        reporter.note(
            f"behaviour cloning: {len(left_out)} of {who}'s {len(played)} episodes are not"
            f" cloned {_endings(left_out)}"
        )
    batch = min(cfg.warm_start_batch, len(rows))
    # a context that rebuilds each prompt (a window, a summary) makes a row per turn
    whose = who.removeprefix("the ")
    unit = f"{whose} episodes" if len(rows) == len(episodes) else f"{who}'s {len(rows)} turns"
    reporter.phase(
        f"behaviour cloning: {cfg.warm_start} steps of {batch} {unit}, lr {cfg.warm_start_lr:g}",
        cfg.warm_start,
    )
    losses = _clone_steps(models, rows, batch, cfg, rng, reporter)
    return {
        "warm_start/loss_first": losses[0],
        "warm_start/loss_last": losses[-1],
        "warm_start/episodes": float(len(episodes)),
    }


def _clone_steps(
    models: Models,
    rows: list[Any],
    batch: int,
    cfg: TrainingSpec,
    rng: random.Random,
    reporter: Reporter,
) -> list[float]:
    """`training.warm_start` steps on batches of `rows`; the loss of each."""
    optimizer = torch.optim.AdamW(models.policy.parameters(), lr=cfg.warm_start_lr)
    pad = models.tokenizer.pad_token_id or 0
    losses: list[float] = []
    for step in range(1, cfg.warm_start + 1):
        started = time.perf_counter()
        loss = response_nll(models, rng.sample(rows, batch), pad)
        losses.append(loss.item())
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(models.policy.parameters(), cfg.max_grad_norm)
        optimizer.step()
        if step == 1:
            seconds = time.perf_counter() - started
            reporter.pace("behaviour cloning", "step", seconds, cfg.warm_start, "warm_start")
        reporter.advance(step, f"loss {losses[-1]:.3f}")
    return losses


def oracle_episodes(
    module: ModuleType,
    models: Models,
    pool: Sequence[Mapping[str, Any]],
    script: Any = None,
) -> list[Trajectory]:
    """One episode of the spec's oracle (or of `script`, turns per sample as
    `episode_script` gives them) on each sample, all concurrently."""
    script = script or episode_script(module, "oracle")
    assert script is not None
    flows = [
        module.FLOW_CLASS(sample_policy(script, s, models.tokenizer), models.tokenizer)
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

    return asyncio.run(play())


def response_nll(models: Models, rows: Sequence[TrainingRow], pad: int) -> torch.Tensor:
    """Mean negative log-likelihood of the rows' response tokens under the policy.

    The rows' common prefix (the system prompt) runs once (`outputs_after`), and the
    softmax runs only where a response token is predicted (position p − 1 for the
    token at p); prompt positions, most of a row, are never normalised.
    """
    input_ids, attention = pad_rows(rows, pad)
    response = torch.zeros_like(input_ids, dtype=torch.bool)
    for i, row in enumerate(rows):
        response[i, : len(row.response_mask)] = torch.tensor(row.response_mask, dtype=torch.bool)
    input_ids, attention = input_ids.to(models.device), attention.to(models.device)
    predicted = response[:, 1:].to(models.device)  # position q predicts token q + 1
    first = int(predicted.any(dim=0).nonzero()[0]) if bool(predicted.any()) else 0
    prefix = shared_prefix(input_ids, first)
    with autocast(models.device):
        logits = outputs_after(models.policy, input_ids, attention, prefix).logits
    predicting = logits[:, :-1][predicted[:, prefix:]].float()  # (tokens, V)
    targets = input_ids[:, prefix + 1 :][predicted[:, prefix:]]
    logp = torch.log_softmax(predicting, dim=-1).gather(-1, targets[:, None])[:, 0]
    return -logp.sum().cpu() / response.sum()
