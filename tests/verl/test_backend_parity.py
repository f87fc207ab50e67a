"""One update of the same batch gives the same weights on the local backend and on verl.

For StepPO (with its critic), GRPO and OPD (with a teacher): the same initial policy (and
critic, and teacher), the same fixed batch of trajectories — the same token ids, masks,
step boundaries, rewards, old (sampler) log-probs and reference log-probs — and one
optimiser step on each backend:

- local: the local trainer's own ``train_iteration`` (critic values and teacher scores
  from its scoring pass, advantages, learning rate, ``update``), with the rollout
  replaced by the fixed trajectories and the old and reference log-probs by the fixed ones;
- verl: ``parity_verl_update.py`` in a process of its own: verl's own actor and critic
  workers (FSDP2 engines, verl's ``ppo_loss``, optimiser, gradient clipping) on the
  rows the generated agent loop makes of the same trajectories, with the advantages of
  the ``agentspec`` trainer's own advantage step (see that file).

Both sides get their settings from the same ``training`` settings (verl's through the
launcher's overrides); the batch is one mini-batch on both (verl's mini-batch is set to
all its rows: StepPO's per-step rows would otherwise be several verl mini-batches, see
docs/verl.md on ``ppo_mini_batch_size``). Compared: the losses, the clip fraction and
the gradient norms before clipping (which pin the loss's scale, that clipping and Adam
would hide), the gradients the optimiser stepped on (after clipping) and the parameters
after the step, to float32 rounding (the tolerances: :func:`_same_step`). The clip
binds on some tokens (steps) and the reference differs from the policy, so a change
to the clip range or the KL term on one side fails the test.

What the test holds fixed, and why:

- every episode has the same number of steps (2) and, for GRPO and OPD, every step the
  same number of response tokens (28): the local backend weighs tokens
  "trajectory-mean", verl by its ``loss_agg_mode`` (``token-mean``, StepPO's
  ``seq-mean-token-mean``), which give every token the same weight only then
  (docs/algorithms.md, "How the per-token losses become one number");
- verl's CPU path computes in bfloat16 (verl's default FSDP mixed precision), the local
  backend on a CPU in float32: the verl side is set to float32 here;
- verl's CPU path turns the KL loss off (it cannot build verl's reference model without
  an accelerator); here the reference log-probs are part of the batch and the actor's
  KL loss is on, as on GPUs;
- OPD trains on the sampled token's teacher advantage on verl: the local side uses that
  form too (``opd_topk=0``; its top-k distillation loss has no verl counterpart);
- the old log-probs are the sampler's on both sides (verl's rollout-correction bypass
  mode; the local backend would recompute them with the policy, verl by default too):
  log-probs of the same policy as the one updated would make every ratio 1, and no
  clip would bind.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from verl_helpers import SPEC

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
RESPONSE_TOKENS = 28
FLOAT32 = {"param_dtype": "fp32", "reduce_dtype": "fp32", "buffer_dtype": "fp32"}

SETTINGS = {
    "iterations": "1",
    "prompts_per_iteration": "2",
    "group_size": "2",
    "minibatch_size": "4",  # every episode in one mini-batch
    "epochs": "1",
    "eval_every": "1",
    "eval_samples": "4",
    "temperature": "0.9",
    "learning_rate": "0.001",
    "critic_learning_rate": "0.002",
    "max_grad_norm": "0.5",  # clips StepPO's actor and critic steps, not GRPO's and OPD's
    "entropy_coef": "0.01",
    "seed": "0",
}
ALGORITHMS = {
    "steppo": {"step_clip_ratio": "0.05", "kl_coef": "0.05"},
    "grpo": {"clip_ratio": "0.2", "kl_coef": "0.05"},
    "opd": {"clip_ratio": "0.2", "opd_beta": "0.5", "opd_task_weight": "0.5", "opd_topk": "0"},
}


def _hydra_dict(values: dict[str, str]) -> str:
    return "{" + ",".join(f"{k}:{v}" for k, v in values.items()) + "}"


class FixedPolicy:
    """Answers with the given texts, each padded with spaces to ``length`` tokens (EOS
    last), and records as the sampler's log-probs the model's own log-probs of them
    (at the sampling temperature) plus noise: an old policy near the current one."""

    def __init__(
        self,
        texts: list[str],
        model: Any,
        tokenizer: Any,
        temperature: float,
        generator: torch.Generator,
        length: int | None,
    ) -> None:
        self.texts, self.model, self.tokenizer = list(texts), model, tokenizer
        self.temperature, self.generator, self.length = temperature, generator, length

    async def generate(self, prompts: Any, params: Any) -> list[Any]:
        from agentspec.runtime.backends.local.tensors import token_log_probs
        from agentspec.runtime.episode.policy import Generation

        out = []
        space = self.tokenizer(" ")["input_ids"][0]
        for prompt in prompts:
            ids = list(self.tokenizer(self.texts.pop(0))["input_ids"])
            if self.length is not None:
                ids += [space] * (self.length - 1 - len(ids))
            ids.append(self.tokenizer.eos_token_id)
            row = torch.tensor([[*prompt, *ids]])
            with torch.no_grad():
                logp, _ = token_log_probs(self.model, row, torch.ones_like(row), self.temperature)
            noise = 0.3 * torch.randn(len(ids), generator=self.generator)
            out.append(Generation(ids, (logp[0, len(prompt) :] + noise).tolist(), "stop"))
        return out


def _trajectories(module: Any, model_dir: Path, length: int | None, temperature: float) -> list:
    """Two prompts × two episodes of two steps each (a calculator call, then the right
    answer or a wrong one): rewards that differ inside each group."""
    from agentspec.runtime.text.tiny_model import load_tiny

    model, tokenizer = load_tiny(model_dir)
    model.eval()
    generator = torch.Generator().manual_seed(0)
    samples = module.load_samples("train", limit=2)
    trajectories = []
    for k, sample in enumerate(samples):
        call, answer = list(module.oracle_actions(sample))
        for right in (True, False):
            text = answer if right else f"<answer>{int(sample['answer']) + 1}</answer>"
            policy = FixedPolicy([call, text], model, tokenizer, temperature, generator, length)
            flow = module.FLOW_CLASS(policy, tokenizer, temperature=temperature)
            traj = asyncio.run(flow.run(sample, sample_id=str(k), group_id=str(k)))
            assert len(traj.steps) == 2 and traj.total_reward == float(right)
            trajectories.append(traj)
    return trajectories


def _reference_log_probs(trajectories: list) -> dict[str, list[float]]:
    """A reference policy's log-probs of every step's tokens: the sampler's, moved."""
    generator = torch.Generator().manual_seed(1)
    out = {}
    for traj in trajectories:
        for step in traj.steps:
            old = torch.tensor(step.response_logprobs)
            moved = old + 0.3 * torch.randn(len(old), generator=generator)
            out[f"{traj.trajectory_id}|{step.index}"] = moved.tolist()
    return out


def _critic_dir(model_dir: Path, directory: Path) -> torch.nn.Module:
    """The critic both backends start from: the policy's backbone and a random scalar head,
    as the local backend's ``ValueModel`` and as a one-label token classifier for verl."""
    from transformers import AutoConfig, AutoModelForTokenClassification, AutoTokenizer

    from agentspec.runtime.backends.local.models import build_critic, load_checkpoint
    from agentspec.runtime.backends.verl.critic_model import value_model_config

    policy, _ = load_checkpoint(model_dir)
    critic = build_critic(policy)
    generator = torch.Generator().manual_seed(2)
    with torch.no_grad():
        critic.head.weight.copy_(0.02 * torch.randn(critic.head.weight.shape, generator=generator))
        critic.head.bias.fill_(0.1)
    config = value_model_config(AutoConfig.from_pretrained(model_dir))
    classifier = AutoModelForTokenClassification.from_config(config)
    state = {f"model.{k}": v for k, v in critic.backbone.state_dict().items()}
    state.update({"score.weight": critic.head.weight, "score.bias": critic.head.bias})
    missing, unexpected = classifier.load_state_dict(state, strict=True)
    assert not missing and not unexpected
    classifier.save_pretrained(directory)
    AutoTokenizer.from_pretrained(model_dir).save_pretrained(directory)
    return critic


def _local_update(
    spec_module: Any,
    settings: dict[str, str],
    run: Path,
    trajectories: list,
    ref: dict[str, list[float]],
    critic: torch.nn.Module | None,
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[Any, dict[str, float]]:
    """One iteration of the local trainer on the fixed trajectories: its models after the
    update and the iteration's record."""
    from agentspec.runtime.backends.local import trainer
    from agentspec.runtime.backends.local.model_defaults import run_settings
    from agentspec.runtime.backends.local.models import build_models
    from agentspec.runtime.backends.local.runlog import RunLog
    from agentspec.runtime.backends.local.scoring import score

    cfg = run_settings(SPEC, spec_module.TRAINING, settings).cfg
    samples = spec_module.load_samples("train", limit=2)
    models = build_models(cfg, spec_module, samples, run)
    if critic is not None:
        models.critic = critic
        models.optimizers["critic"] = torch.optim.AdamW(
            critic.parameters(), lr=cfg.critic_learning_rate
        )

    def fixed_score(rollout: Any, models: Any, temperature: float, **kw: Any) -> Any:
        scored = score(rollout, models, temperature, **kw)
        old = torch.zeros((len(rollout.steps), rollout.width))
        reference = torch.zeros_like(old)
        for i, step_ref in enumerate(rollout.steps):
            k, traj = len(step_ref.positions), rollout.trajectories[step_ref.traj]
            old[i, :k] = torch.tensor(step_ref.step.response_logprobs)
            reference[i, :k] = torch.tensor(ref[f"{traj.trajectory_id}|{step_ref.step.index}"])
        scored.old_log_probs, scored.ref_log_probs = old, reference
        return scored

    pack = trainer.layout_for_template(
        spec_module.LAYOUT, trainer.chat_for_spec(spec_module, models.tokenizer)
    )
    with monkeypatch.context() as patch:
        patch.setattr(trainer, "rollout", lambda *a, **k: list(trajectories))
        patch.setattr(trainer, "score", fixed_score)
        record = trainer.train_iteration(
            spec_module, models, cfg.algorithm, samples, cfg, pack == "packed", 1, RunLog(run)
        )
    return models, record


def _verl_update(prepared: Any, trajectories: list, ref: dict, out: Path) -> dict[str, Any]:
    """``parity_verl_update.py`` on the same batch, in a process of its own."""
    from agentspec.core.row_layout import layout_for_template
    from agentspec.runtime.episode.trajectory import write_jsonl
    from agentspec.runtime.text.chat_templates import chat_for_spec
    from agentspec.runtime.text.tiny_model import load_tiny

    target = prepared.target
    _, tokenizer = load_tiny(target.model_dir)
    pack = layout_for_template(target.layout, chat_for_spec(target.module, tokenizer))
    write_jsonl(out / "trajectories.jsonl", trajectories)
    args = {
        "overrides": prepared.overrides,
        "trajectories": str(out / "trajectories.jsonl"),
        "ref_log_probs": ref,
        "pack": pack == "packed",
        "components": [c.name for c in target.module.ENV_CLASS.reward_components],
        "out": str(out / "verl.pt"),
    }
    (out / "args.json").write_text(json.dumps(args))
    env = {**os.environ, **prepared.env, "OMP_NUM_THREADS": "1"}
    env["PYTHONPATH"] = os.pathsep.join([str(target.out_dir), env.get("PYTHONPATH", "")])
    result = subprocess.run(
        [sys.executable, str(HERE / "parity_verl_update.py"), str(out / "args.json")],
        env=env,
        cwd=target.out_dir,  # a run's inputs may be given relative to its target folder
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-6000:]
    return torch.load(out / "verl.pt", weights_only=False)


def _same_step(
    before: dict[str, torch.Tensor],
    after: dict[str, torch.nn.Parameter],
    verl_params: dict[str, torch.Tensor],
    verl_grads: dict[str, torch.Tensor],
    verl_name: dict[str, str],
    lr: float,
    what: str,
) -> None:
    """The optimiser stepped on the same gradients and landed on the same parameters.

    Gradients (after clipping): within 1e-5 of the tensor's largest entry (float32 sums in
    another order: FSDP2 and verl's padding against the local forward; seen ≤ 2e-6).
    Parameters: within 5 % of the learning rate. A fresh AdamW's first step moves each
    weight by lr · g / (|g| + 1e-8), about lr · sign(g): a weight whose gradient is within
    a few 1e-8 of zero moves by what float32 noise in g decides (seen ≤ 2 % of lr), every
    other one by lr on both sides or by 2 lr apart when the gradients' signs differ."""
    moved = 0.0
    for name, param in after.items():
        theirs = verl_name[name]
        grad = param.grad.float()
        scale = float(grad.abs().max().clamp(min=1e-12))
        torch.testing.assert_close(
            verl_grads[theirs].float(),
            grad,
            rtol=0,
            atol=1e-5 * scale,
            msg=lambda m, n=name: f"{what} gradient {n}: {m}",
        )
        torch.testing.assert_close(
            verl_params[theirs].float(),
            param.detach().float(),
            rtol=0,
            atol=0.05 * lr,
            msg=lambda m, n=name: f"{what} parameter {n}: {m}",
        )
        moved = max(moved, float((param.detach() - before[name]).abs().max()))
    assert moved > 0.5 * lr, f"{what}: the step moved no weight by a learning rate"


def _same(local: float, verl: Any, what: str) -> None:
    """A scalar the local record holds and verl's metrics hold (a list: one per mini-batch)."""
    theirs = verl[0] if isinstance(verl, list) else verl
    assert float(theirs) == pytest.approx(local, rel=1e-5, abs=1e-7), what


@pytest.mark.parametrize("algorithm", ["steppo", "grpo", "opd"])
def test_one_update_gives_the_same_weights_on_both_backends(
    tmp_path: Path, algorithm: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentspec.runtime.backends.local.models import load_checkpoint
    from agentspec.runtime.backends.verl.launcher import prepared_run
    from agentspec.runtime.compiled.task_text import task_corpus
    from agentspec.runtime.text.tiny_model import build_tiny

    settings = {"algorithm": algorithm, **SETTINGS, **ALGORITHMS[algorithm]}
    if algorithm == "opd":
        settings["teacher"] = str(tmp_path / "teacher")
    critic_dir = tmp_path / "critic"
    prepared = prepared_run(
        SPEC,
        tmp_path / "run",
        {
            **{k: v for k, v in settings.items() if k != "opd_topk"},  # the local backend's
            "trainer.device": "cpu",
            "+actor_rollout_ref.actor.fsdp_config.mixed_precision": _hydra_dict(FLOAT32),
            "+critic.fsdp.mixed_precision": _hydra_dict(FLOAT32),
            "actor_rollout_ref.actor.use_kl_loss": str("kl_coef" in settings),
            "critic.model.path": str(critic_dir),
        },
    )
    module, model_dir = prepared.target.module, prepared.target.model_dir
    if algorithm == "opd":  # the student's tokenizer, other weights
        build_tiny(task_corpus(module, module.load_samples(limit=256)), settings["teacher"], seed=1)
    critic = _critic_dir(model_dir, critic_dir) if algorithm == "steppo" else None
    length = None if algorithm == "steppo" else RESPONSE_TOKENS
    trajectories = _trajectories(module, model_dir, length, float(settings["temperature"]))
    ref = _reference_log_probs(trajectories)
    policy_before = {k: p.detach() for k, p in load_checkpoint(model_dir)[0].named_parameters()}
    critic_before = {k: p.detach().clone() for k, p in critic.named_parameters()} if critic else {}

    local_settings = {**settings, "model": str(model_dir)}
    models, record = _local_update(
        module, local_settings, tmp_path / "local", trajectories, ref, critic, monkeypatch
    )
    verl = _verl_update(prepared, trajectories, ref, tmp_path)

    # not vacuous: the clip binds somewhere, the KL penalty reads a reference that differs
    assert record["actor/clipfrac"] > 0
    assert ("kl_coef" not in settings) or record["actor/kl_loss"] > 0
    actor = verl["actor_metrics"]
    _same(record["actor/pg_loss"], actor["actor/pg_loss"], "policy loss")
    _same(record["loss/policy"], actor["loss"], "actor loss (+ KL − entropy bonus)")
    _same(record["actor/clipfrac"], actor["actor/pg_clipfrac"], "clip fraction")
    _same(record["actor/grad_norm"], actor["grad_norm"], "actor gradient norm before clipping")
    if algorithm == "opd":
        _same(record["opd/reverse_kl"], verl["metrics"]["opd/reverse_kl"], "OPD reverse KL")
    assert len(verl["actor_steps"]) == 1, "verl took more than one optimiser step"
    lr = float(settings["learning_rate"])
    policy = dict(models.policy.named_parameters())
    names = {name: name for name in policy}
    _same_step(policy_before, policy, verl["actor"], verl["actor_steps"][0], names, lr, "actor")
    if critic is not None:
        _same(record["loss/value"], verl["critic_metrics"]["critic/vf_loss"], "value loss")
        _same(record["critic/grad_norm"], verl["critic_metrics"]["grad_norm"], "critic grad norm")
        assert len(verl["critic_steps"]) == 1, "verl took more than one critic step"
        params = dict(models.critic.named_parameters())
        names = {  # ValueModel's backbone and head; verl's token classifier's model and score
            k: k.replace("backbone.", "model.", 1).replace("head.", "score.", 1) for k in params
        }
        lr = float(settings["critic_learning_rate"])
        _same_step(
            critic_before, params, verl["critic"], verl["critic_steps"][0], names, lr, "critic"
        )
