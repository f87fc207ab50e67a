"""The named training algorithms: everything that differs from one algorithm to another.

An :class:`Algorithm` pairs an advantage estimator with a policy loss
(`StepPO = step-level GAE + the step-level ratio loss`, the StepPO paper) and
says what else the choice implies: which clip setting applies, whether a critic
trains, whether a teacher is needed and what the task reward adds, and which
verl settings it takes. Trainers, the verl target, the spec's allowed names and
the CLI read these fields; none of them compares an algorithm's name.

This module is torch-free (``validate`` reads :data:`ALGORITHMS` for the spec's
allowed names); the estimators and losses it names live in
:data:`~agentspec.runtime.algorithms.advantages.ESTIMATORS` and
:data:`~agentspec.runtime.algorithms.losses.POLICY_LOSSES`, and a test checks
every preset against them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from agentspec.core.registry import Registry

__all__ = [
    "ALGORITHMS",
    "DEFAULT_CLIP_RATIO",
    "DEFAULT_KL_COEF",
    "DEFAULT_STEP_CLIP_RATIO",
    "SPEC_NEEDS",
    "STEP_CLIP_PRESETS",
    "Algorithm",
    "ClipSetting",
    "clip_range",
    "critic_warmup",
    "kl_coef",
    "register_algorithm",
]

ClipSetting = Literal["token", "step", "none"]
"""Which clip range a loss reads: ``token`` (``clip_ratio``, one ratio per token),
``step`` (``step_clip_low`` / ``step_clip_high`` / ``step_clip_preset`` /
``step_clip_ratio``, one ratio per step) or ``none`` (no ratio is clipped, as in
REINFORCE)."""

DEFAULT_CLIP_RATIO = 0.2
"""PPO's token clip ε (Schulman et al. 2017)."""

VALUE_CLIP = 0.2
"""The critic's value clip, in units of the return: a value moves at most this far from
the rollout's value per update (both backends; verl's ``cliprange_value``)."""

DEFAULT_KL_COEF = 0.02
"""The weight of the KL penalty to the reference (the warm-started policy) for an
algorithm that learns from reward. It bounds the drift, not the first steps: on
``keys_and_doors`` at lr 1e-3 without it the KL to the warm start passed 5 (GRPO from
iteration 5, StepPO from 15; 447 at StepPO's iteration 60) and sampled success ended at
0.00 for both on seed 0; with 0.02 the KL stayed below 2.6 and sampled success ended at
0.15 (GRPO) and 0.49 (StepPO), 0.46 against 0.27 on StepPO's seed 1. It does not stop a
warm start whose greedy decisions are ties from flipping (docs/algorithms.md, "Why
greedy success falls after the warm start")."""

DEFAULT_STEP_CLIP_RATIO = 0.04
"""StepPO's symmetric step clip ε when a spec sets none (docs/algorithms.md has the
sweep on ``keys_and_doors`` that chose it)."""

STEP_CLIP_PRESETS: Registry[tuple[float, float]] = Registry("step clip preset")
"""Named ``(ε_low, ε_high)`` ranges for ``training.step_clip_preset``."""
# The StepPO paper's published run scripts (GSPO's sequence-ratio setting, too):
# a geometric mean over a long step moves little, so its range is narrow.
STEP_CLIP_PRESETS.add("steppo_paper", (3e-4, 4e-4))


@dataclass(frozen=True)
class Algorithm:
    """One named algorithm (``training.algorithm``).

    Attributes:
        name: the name a spec writes.
        estimator: the advantage estimator, a name in ``ESTIMATORS``.
        loss: the policy loss, a name in ``POLICY_LOSSES``.
        description: one line for the CLI help and the docs.
        clip: which clip setting the loss reads (:func:`clip_range`).
        trains_critic: whether a value model trains beside the policy (the
            estimator reads its values).
        needs_teacher: whether ``training.teacher`` must be set (distillation).
        task_estimator: with a teacher, the estimator of the task-reward
            advantage added with weight ``opd_task_weight``; ``None`` otherwise.
        verl_overrides: Hydra overrides of verl's ``main_ppo`` this algorithm adds
            to the generic ones (estimator, loss, clip, critic) the verl target writes.
        critic_warmup: RL iterations in which only the critic trains, when a spec
            sets no ``training.critic_warmup`` (only for ``trains_critic``).
        kl_coef: the weight of the KL penalty to the reference (the warm-started
            policy) when a spec sets no ``training.kl_coef``.
        spec_needs: parts of the spec its estimator reads (GiGPO's
            ``episode.anchor``), so that a run is refused, located, before anything
            loads (the estimator's ``requires`` say the same in tensor terms).
    """

    name: str
    estimator: str
    loss: str
    description: str
    clip: ClipSetting = "token"
    trains_critic: bool = False
    needs_teacher: bool = False
    task_estimator: str | None = None
    verl_overrides: Mapping[str, str] = field(default_factory=dict, hash=False)
    critic_warmup: int = 0
    kl_coef: float = DEFAULT_KL_COEF
    spec_needs: tuple[str, ...] = ()

    @property
    def clips_steps(self) -> bool:
        """Whether the loss clips one ratio per step (StepPO) rather than per token."""
        return self.clip == "step"

    @property
    def needs_step_rows(self) -> bool:
        """Whether a backend whose loss sees rows, not steps (verl), needs one row per
        step: a per-step ratio is a geometric mean over one step's tokens, so a packed
        row of several steps would average them together."""
        return self.clips_steps


# The largest seed (of `training.seed` and the commands' --seed): what torch, numpy and
# Python's random all take (numpy's seeds are 32-bit).
MAX_SEED = 2**32 - 1

ALGORITHMS: Registry[Algorithm] = Registry("algorithm")

SPEC_NEEDS = {
    "episode.anchor": (
        "an expression naming the state a step starts from (e.g. `anchor: state.room`), "
        "by which it groups steps; docs/algorithms.md#gigpo-gigpo"
    )
}
"""What each part of a spec that an algorithm may need (`Algorithm.spec_needs`) is: the
error that refuses a run without it says so, on either backend."""


def register_algorithm(algorithm: Algorithm) -> Algorithm:
    """Add ``algorithm`` to :data:`ALGORITHMS` under its name (a taken name is an error)."""
    return ALGORITHMS.add(algorithm.name, algorithm)


register_algorithm(
    Algorithm(
        "ppo",
        "step_gae",
        "ppo_clip",
        "Step-level GAE with PPO's token-ratio clip.",
        trains_critic=True,
    )
)
register_algorithm(
    Algorithm(
        "steppo",
        "step_gae",
        "steppo",
        "StepPO: step-level GAE with a clipped per-step ratio.",
        clip="step",
        trains_critic=True,
        # verl averages the loss per row (one row is one step here), then over rows
        verl_overrides={"actor_rollout_ref.actor.loss_agg_mode": "seq-mean-token-mean"},
    )
)
register_algorithm(Algorithm("grpo", "grpo", "ppo_clip", "Group-relative episode returns (GRPO)."))
register_algorithm(Algorithm("rloo", "rloo", "ppo_clip", "Leave-one-out group baseline (RLOO)."))
register_algorithm(
    Algorithm(
        "gigpo",
        "gigpo",
        "ppo_clip",
        "GiGPO: episode groups plus anchor-state step groups.",
        spec_needs=("episode.anchor",),
    )
)
register_algorithm(
    Algorithm(
        "token_gae",
        "token_gae",
        "ppo_clip",
        "Token-level GAE over the concatenated turns (the baseline).",
        trains_critic=True,
    )
)
register_algorithm(
    Algorithm(
        "reinforce",
        "reinforce",
        "reinforce",
        "REINFORCE on discounted step returns.",
        clip="none",
    )
)
register_algorithm(
    Algorithm(
        "opd",
        "opd",
        "ppo_clip",
        "On-policy distillation: −β (log π − log π_teacher) per token.",
        needs_teacher=True,
        task_estimator="grpo",
        # the teacher's per-token signal vanishes only where the student matches it: no
        # state without a gradient to anchor against, and the warm start is not the target
        kl_coef=0.0,
    )
)


# The settings only some algorithms read, and whether an algorithm reads them: a
# setting given for an algorithm that does not is said, never silently ignored.
SETTING_READERS: dict[str, Callable[[Algorithm], bool]] = {
    **dict.fromkeys(
        ("teacher", "opd_beta", "opd_topk", "opd_task_weight"), lambda a: a.needs_teacher
    ),
    "omega": lambda a: a.estimator == "gigpo",
    **dict.fromkeys(
        ("step_clip_ratio", "step_clip_preset", "step_clip_low", "step_clip_high"),
        lambda a: a.clips_steps,
    ),
    **dict.fromkeys(
        ("value_coef", "critic_learning_rate", "critic_warmup"), lambda a: a.trains_critic
    ),
}


def unread_setting_note(key: str, algorithm: str) -> str | None:
    """Why `training.KEY` does nothing under `algorithm` (None when it is read)."""
    reads = SETTING_READERS.get(key)
    if reads is None or reads(ALGORITHMS.get(algorithm)):
        return None
    readers = [name for name in ALGORITHMS.names() if reads(ALGORITHMS.get(name))]
    return (
        f"training.{key} is not read by algorithm {algorithm!r} (only by"
        f" {', '.join(readers)}): it has no effect"
    )


def clip_range(algorithm: Algorithm, training: Any) -> tuple[float, float]:
    """``(ε_low, ε_high)`` of ``algorithm``'s ratio clip, from training settings.

    ``training`` is a :class:`~agentspec.spec.model.TrainingSpec` or a mapping
    of its keys. A per-step ratio is a geometric mean over the step's tokens,
    so it has its own, usually much narrower, range. Each side is the first of
    ``step_clip_low`` / ``step_clip_high``, the named ``step_clip_preset``'s side,
    and the symmetric ``step_clip_ratio``. Token ratios use ``clip_ratio`` on both
    sides (as does a loss that clips nothing: the backends' settings still take a
    number).
    """

    def get(key: str) -> Any:
        if isinstance(training, Mapping):
            return training.get(key)
        return getattr(training, key, None)

    def number(key: str, default: float) -> float:
        value = get(key)
        return default if value is None else float(value)

    if not algorithm.clips_steps:
        clip = number("clip_ratio", DEFAULT_CLIP_RATIO)
        return clip, clip
    symmetric = number("step_clip_ratio", DEFAULT_STEP_CLIP_RATIO)
    preset = get("step_clip_preset")
    low, high = (symmetric, symmetric) if preset is None else STEP_CLIP_PRESETS.get(preset)
    return number("step_clip_low", low), number("step_clip_high", high)


def critic_warmup(algorithm: Algorithm, training: Any) -> int:
    """Iterations in which only the critic trains: the spec's ``critic_warmup``, else the
    preset's; 0 for an algorithm without a critic. ``training`` is the spec's training
    section (a model or a mapping)."""
    if not algorithm.trains_critic:
        return 0
    value = (
        training.get("critic_warmup")
        if isinstance(training, Mapping)
        else getattr(training, "critic_warmup", None)
    )
    return algorithm.critic_warmup if value is None else int(value)


def kl_coef(algorithm: Algorithm, training: Any) -> float:
    """The weight of the KL penalty to the reference policy: the spec's ``kl_coef``, else
    the preset's. ``training`` is the spec's training section (a model or a mapping)."""
    value = (
        training.get("kl_coef")
        if isinstance(training, Mapping)
        else getattr(training, "kl_coef", None)
    )
    return algorithm.kl_coef if value is None else float(value)
