"""The ``agentspec`` trainer: verl's synchronous PPO trainer with a step-level advantage step.

Registered with verl's ``register_trainer`` and selected by
``trainer.v1.trainer_mode=agentspec``. It subclasses verl's ``PPOTrainerSync``
and replaces one stage, ``_compute_advantage``: verl's own passes an estimator
only the row's token rewards, mask and prompt ``uid``; this one also reads each
row's step records (``extra_fields["agentspec"]``: trajectory, step of every
token, step rewards, anchors), the critic's values and the log-probs from
verl's TransferQueue, and calls the estimator registered in verl's registry
(``algorithm.adv_estimator``, one of agentspec's, see :mod:`.algorithms`).
It also gives verl's critic worker agentspec's critic loss (:func:`critic_loss_fn`:
a step-level critic is trained at each step's state position, the loss weighted by
``value_coef``, as on the local backend). Everything else (rollout, log-probs, critic
and actor updates, validation, checkpoints, logging) is verl's.

Settings under ``trainer.v1.agentspec`` (added by the generated overrides):
``omega`` (GiGPO), ``opd_beta`` / ``teacher_path`` / ``opd_task_weight`` (OPD: the
teacher scores every row's response tokens, :mod:`.teacher`, in this process or,
with ``teacher_placement=gpu``, in a Ray actor with ``teacher_num_gpus`` GPUs,
:mod:`.placement`; a task weight > 0 adds
that multiple of the ``task_estimator``'s advantage, GRPO's for ``opd``, as the local
backend does), ``whiten``
(step GAE), ``dump_dir``
(write each step's advantage inputs and the advantages verl stored, for tests),
``value_coef`` (the critic loss's weight; the spec's default when absent),
``max_failed_groups`` / ``error_file`` (stop, with the episodes' tracebacks, when
agent loops keep failing: verl itself would log them and refill for ever).
On a CPU machine (``trainer.device=cpu``) it also starts verl's workers through
the ``gloo``-only subclasses of :mod:`.cpu`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import ray
import torch
import transfer_queue as tq
from tensordict import TensorDict
from verl.protocol import DataProto
from verl.trainer.ppo import core_algos
from verl.trainer.ppo.rollout_corr_helper import compute_rollout_correction_and_add_to_batch
from verl.trainer.ppo.utils import Role
from verl.trainer.ppo.v1.trainer_base import TRAINER_REGISTRY, register_trainer
from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync
from verl.workers.utils.padding import response_to_nested

from agentspec.runtime.algorithms import ESTIMATORS, AdvantageConfig
from agentspec.runtime.algorithms import advantage_config as build_advantage_config
from agentspec.runtime.backends.verl import KL_IN_REWARD_REFUSED
from agentspec.runtime.backends.verl.algorithms import (
    PREFIX,
    VALUE_MASK,
    verl_algorithm_settings,
    verl_value_loss,
)
from agentspec.runtime.backends.verl.layout import EXTRA_KEY, RowSteps, state_positions
from agentspec.spec.training import TrainingSpec

__all__ = ["TRAINER_NAME", "AgentLoopError", "AgentspecTrainer", "critic_loss_fn", "register"]

TRAINER_NAME = "agentspec"

DEFAULT_VALUE_COEF = float(TrainingSpec.model_fields["value_coef"].default)


def critic_loss_fn(config: Any) -> Any:
    """The loss verl's critic worker trains with in an agentspec run (``config``: the run's
    composed config): :func:`.algorithms.verl_value_loss` with the critic's config and
    ``trainer.v1.agentspec.value_coef`` (the spec's default when absent)."""
    from verl.utils.config import omega_conf_to_dataclass

    coef = (config.trainer.v1.get(TRAINER_NAME, {}) or {}).get("value_coef")
    return partial(
        verl_value_loss,
        config=omega_conf_to_dataclass(config.critic),
        value_coef=DEFAULT_VALUE_COEF if coef is None else float(coef),
    )


def _step_critic(estimator: str) -> bool:
    """Whether verl estimator ``estimator`` is one of agentspec's that reads a step-level
    critic (read and trained at each step's state position)."""
    name = str(estimator)
    return name.startswith(PREFIX) and ESTIMATORS.get(name.removeprefix(PREFIX)).critic == "step"


def _list(x: Any) -> list[Any]:
    return list(x.tolist()) if hasattr(x, "tolist") else list(x)


def _episode_metrics(extras: list[dict[str, Any]]) -> dict[str, float]:
    """Means over the batch's episodes (each counted once, however many rows it has) of
    ``reward/<component>``, ``rollout/success`` and ``rollout/num_steps``."""
    episodes: dict[str, dict[str, Any]] = {}
    for extra in extras:
        info = extra.get("reward_extra_info") or {}
        episodes.setdefault(str(extra[EXTRA_KEY]["trajectory_id"]), info)
    out: dict[str, float] = {}
    for key in sorted({k for info in episodes.values() for k in info}):
        values = [float(info[key]) for info in episodes.values() if key in info]
        name = key if key.startswith("reward/") else f"rollout/{key}"
        out[name] = float(np.mean(values))
    return out


def _step_metrics(records: list[RowSteps]) -> dict[str, float]:
    """``agentspec/steps_per_row`` and ``agentspec/step_reward_mean`` of the kept rows."""
    n_steps = sum(len(r.step_indices) for r in records)
    rewards = [x for r in records for x in r.step_rewards]
    return {
        "agentspec/steps_per_row": n_steps / max(len(records), 1),
        "agentspec/step_reward_mean": float(np.mean(rewards) if n_steps else 0.0),
    }


@dataclass
class _Rows:
    """A batch's rows as the advantage step reads them from the TransferQueue."""

    proto: DataProto
    nested_mask: Any
    """The response mask as stored (nested): the shape advantages are written back in."""
    extras: list[dict[str, Any]]
    uids: list[str]
    token_ids: tuple[list[torch.Tensor], list[torch.Tensor]] | None
    """With a teacher: each row's prompt and response ids."""


class AgentLoopError(RuntimeError):
    """Too many prompt groups failed inside the agent loop (the episodes' errors attached)."""

    @classmethod
    def from_file(cls, failed: int, error_file: str | None) -> AgentLoopError:
        detail = ""
        if error_file and Path(str(error_file)).exists():
            text = Path(str(error_file)).read_text(encoding="utf-8").strip()
            detail = "\n" + text[-4000:]
        # one string argument: the exception crosses Ray by pickling
        return cls(
            f"{failed} prompt groups failed in the agent loop "
            f"(trainer.v1.agentspec.max_failed_groups exceeded){detail}"
        )


class AgentspecTrainer(PPOTrainerSync):
    """verl's sync trainer whose advantage step sees agentspec's steps."""

    @property
    def agentspec_settings(self) -> dict[str, Any]:
        return dict(self.config.trainer.v1.get(TRAINER_NAME, {}) or {})

    def advantage_config(self) -> AdvantageConfig:
        """The estimators' settings, built as the local backend builds them; OPD's task
        weight is not among them: :meth:`_add_task_advantage` adds that advantage here."""
        s = self.agentspec_settings
        return build_advantage_config(
            {
                **verl_algorithm_settings(self.config.algorithm),
                **{name: s.get(name) for name in ("omega", "opd_beta", "whiten")},
            }
        )

    def _add_prompts_to_generate(self, num_prompts: int) -> int:
        """verl's refill of prompt groups whose agent loop failed (sync mode calls it for
        nothing else): raise :class:`AgentLoopError` with the episodes' tracebacks once
        more than ``max_failed_groups`` groups failed (default one training batch; the
        generated overrides allow ten), instead of retrying for ever."""
        self._failed_groups = getattr(self, "_failed_groups", 0) + int(num_prompts)
        settings = self.agentspec_settings
        limit = settings.get("max_failed_groups")
        limit = int(limit) if limit is not None else int(self.config.data.train_batch_size)
        if self._failed_groups > limit:
            raise AgentLoopError.from_file(self._failed_groups, settings.get("error_file"))
        return int(super()._add_prompts_to_generate(num_prompts))

    def on_init_end(self) -> None:
        """verl's hook after its set-up: give the critic agentspec's loss
        (:func:`critic_loss_fn`, in place of verl's ``value_loss``) before any step."""
        super().on_init_end()
        if self.use_critic:
            self.critic_wg.set_loss_fn(critic_loss_fn(self.config))

    def _init_resource_pool_mgr(self) -> None:
        super()._init_resource_pool_mgr()
        if str(self.config.trainer.device) != "cpu":
            return
        from agentspec.runtime.backends.verl.cpu.rollout import (
            CpuActorRolloutRefWorker,
            CpuTrainingWorker,
        )

        for role in list(self.role_worker_mapping):
            cls = CpuTrainingWorker if role == Role.Critic else CpuActorRolloutRefWorker
            remote: Any = ray.remote(cls)
            self.role_worker_mapping[role] = remote

    def _compute_advantage(self, batch: Any, metrics: dict[str, Any]) -> Any:
        """Read the batch's rows from the TransferQueue, estimate advantages on the
        non-padding rows with their step records, write advantages and returns back."""
        algo = self.config.algorithm
        if algo.use_kl_in_reward:  # the launcher refuses it first; a hand-made config here
            raise ValueError(KL_IN_REWARD_REFUSED)
        rows = self._read_rows(batch)
        correction = self._rollout_correction(rows, metrics)
        keep = [i for i, tag in enumerate(batch.tags) if not bool(tag.get("is_padding", False))]
        records = [RowSteps.from_dict(rows.extras[i][EXTRA_KEY]) for i in keep]
        adv_cfg = self.advantage_config()
        advantages, returns = self._estimate(rows, keep, records, adv_cfg, metrics)
        mask = rows.proto.batch["response_mask"]
        rows.proto.batch["advantages"] = torch.zeros_like(mask, dtype=torch.float32)
        rows.proto.batch["returns"] = torch.zeros_like(mask, dtype=torch.float32)
        rows.proto.batch["advantages"][keep] = advantages.float()
        rows.proto.batch["returns"][keep] = returns.float()
        if _step_critic(self.config.algorithm.adv_estimator):  # where the critic trains
            rows.proto.batch[VALUE_MASK] = torch.zeros_like(mask, dtype=torch.int64)
            rows.proto.batch[VALUE_MASK][keep] = state_positions(records, mask.shape[1])
        metrics.update(_episode_metrics([rows.extras[i] for i in keep]))
        metrics.update(_step_metrics(records))
        batch = self._write_advantages(batch, rows, correction)
        self._dump_advantages(batch, keep, records, rows.uids, rows.proto, adv_cfg, rows.token_ids)
        return batch

    def _read_rows(self, batch: Any) -> _Rows:
        """The fields the advantage step reads, as one padded :class:`DataProto`."""
        fields = [
            "uid",
            "response_mask",
            "rm_scores",
            "rollout_log_probs",
            "old_log_probs",
            "values",
            "teacher_logprobs",
            "extra_fields",
        ]
        with_tokens = bool(self.agentspec_settings.get("teacher_path"))
        if with_tokens:  # the teacher scores the rows' token ids
            fields += ["prompts", "responses"]
        data = tq.kv_batch_get(
            keys=batch.keys, partition_id=batch.partition_id, select_fields=fields
        )
        token_ids = None
        if with_tokens:
            token_ids = (list(data.pop("prompts").unbind()), list(data.pop("responses").unbind()))
        nested_mask = data["response_mask"]
        extras = _list(data.pop("extra_fields"))
        uids = [str(u) for u in _list(data.pop("uid"))]
        proto = DataProto(batch=data.to_padded_tensor())
        proto.batch["token_level_scores"] = proto.batch["rm_scores"]
        proto.batch["token_level_rewards"] = proto.batch["rm_scores"]
        proto.non_tensor_batch["uid"] = np.array(uids, dtype=object)
        return _Rows(proto, nested_mask, extras, uids, token_ids)

    def _rollout_correction(self, rows: _Rows, metrics: dict[str, Any]) -> bool:
        """Rollout correction, as verl's own advantage step does it; whether it ran
        (then the response mask and importance weights go back to the queue)."""
        corr = self.config.algorithm.get("rollout_correction", None)
        bypass = bool(corr and corr.get("bypass_mode", False))
        correction = corr is not None and "rollout_log_probs" in rows.proto.batch and not bypass
        if correction:
            rows.proto, is_metrics = compute_rollout_correction_and_add_to_batch(rows.proto, corr)
            metrics.update(is_metrics)
        return correction

    def _estimate(
        self,
        rows: _Rows,
        keep: list[int],
        records: list[RowSteps],
        adv_cfg: AdvantageConfig,
        metrics: dict[str, Any],
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(advantages, returns)`` of the kept rows from the configured estimator."""
        proto, algo = rows.proto, self.config.algorithm

        def kept(name: str) -> torch.Tensor | None:
            t = proto.batch.get(name, None) if name in proto.batch else None
            return None if t is None else t[keep]

        teacher = self._teacher_scores(rows.token_ids, keep, proto)
        inputs = {
            "token_level_rewards": proto.batch["token_level_rewards"][keep],
            "response_mask": proto.batch["response_mask"][keep],
            "index": [rows.uids[i] for i in keep],
            "config": algo,
            "step_records": records,
            "values": kept("values"),
            "old_log_probs": kept("old_log_probs"),
            "teacher_log_probs": teacher,
            "advantage_config": adv_cfg,
        }
        advantages, returns = core_algos.get_adv_estimator_fn(algo.adv_estimator)(**inputs)
        if teacher is not None:
            advantages = self._add_task_advantage(advantages, inputs, metrics)
        return advantages, returns

    def _write_advantages(self, batch: Any, rows: _Rows, correction: bool) -> Any:
        """Put advantages and returns (and what rollout correction changed) back in the queue."""
        out_fields = ["advantages", "returns"]
        if VALUE_MASK in rows.proto.batch:
            out_fields.append(VALUE_MASK)
        if correction:
            out_fields.append("response_mask")
            if "rollout_is_weights" in rows.proto.batch:
                out_fields.append("rollout_is_weights")
        output = TensorDict(
            {f: response_to_nested(rows.proto.batch[f], rows.nested_mask) for f in out_fields},
            batch_size=len(batch),
        )
        return tq.kv_batch_put(keys=batch.keys, partition_id=batch.partition_id, fields=output)

    def _teacher(self) -> Any:
        """The OPD teacher (loaded once), where ``teacher_placement`` puts it."""
        if getattr(self, "_teacher_scorer", None) is None:
            from agentspec.runtime.backends.verl.teacher import make_teacher

            settings = self.agentspec_settings
            self._teacher_scorer = make_teacher(
                str(settings["teacher_path"]),
                str(self.config.actor_rollout_ref.model.path),
                float(self.config.actor_rollout_ref.rollout.temperature),
                placement=str(settings.get("teacher_placement", "trainer")),
                num_gpus=float(settings.get("teacher_num_gpus", 1)),
                dtype=settings.get("teacher_dtype"),
            )
        return self._teacher_scorer

    def _teacher_scores(
        self,
        token_ids: tuple[list[torch.Tensor], list[torch.Tensor]] | None,
        keep: list[int],
        proto: DataProto,
    ) -> torch.Tensor | None:
        """OPD: the teacher's log-prob of every response token of the kept rows
        (``(kept rows, T)``, also stored as ``teacher_log_probs`` for the dump)."""
        if token_ids is None:
            return None
        mask = proto.batch["response_mask"]
        scores = self._teacher().log_probs(
            [token_ids[0][i] for i in keep], [token_ids[1][i] for i in keep], width=mask.shape[1]
        )
        proto.batch["teacher_log_probs"] = torch.zeros_like(mask, dtype=torch.float32)
        proto.batch["teacher_log_probs"][keep] = scores
        return scores

    def _add_task_advantage(
        self, opd: torch.Tensor, inputs: dict[str, Any], metrics: dict[str, Any]
    ) -> torch.Tensor:
        """The teacher's advantage plus ``opd_task_weight`` × the task advantage of the
        preset's ``task_estimator`` (the local backend's mix); logs ``opd/reverse_kl``
        (mean log π_student − log π_teacher)."""
        mask = inputs["response_mask"].bool()
        student, teacher = inputs["old_log_probs"], inputs["teacher_log_probs"]
        if student is not None and bool(mask.any()):
            metrics["opd/reverse_kl"] = float((student.float() - teacher)[mask].mean())
        settings = self.agentspec_settings
        weight = float(settings.get("opd_task_weight", 0.0) or 0.0)
        task_estimator = settings.get("task_estimator")
        if weight == 0.0 or not task_estimator:
            return opd
        task, _ = core_algos.get_adv_estimator_fn(str(task_estimator))(**inputs)
        return opd + weight * task

    def _dump_advantages(
        self,
        batch: Any,
        keep: list[int],
        records: list[RowSteps],
        uids: list[str],
        proto: DataProto,
        adv_cfg: AdvantageConfig,
        token_ids: tuple[list[torch.Tensor], list[torch.Tensor]] | None = None,
    ) -> None:
        """With ``trainer.v1.agentspec.dump_dir`` set: save the estimator's inputs and the
        advantages as stored in verl's TransferQueue (what the actor update reads)."""
        dump_dir = self.agentspec_settings.get("dump_dir")
        if not dump_dir:
            return
        stored = tq.kv_batch_get(
            keys=batch.keys, partition_id=batch.partition_id, select_fields=["advantages"]
        ).to_padded_tensor()["advantages"]
        path = Path(str(dump_dir))
        path.mkdir(parents=True, exist_ok=True)

        def cpu(name: str) -> torch.Tensor | None:
            return proto.batch[name][keep].cpu() if name in proto.batch else None

        torch.save(
            {
                "global_steps": int(self.global_steps),
                "estimator": str(self.config.algorithm.adv_estimator),
                "advantage_config": adv_cfg.__dict__,
                "records": [r.to_dict() for r in records],
                "uids": [uids[i] for i in keep],
                "response_mask": cpu("response_mask"),
                "values": cpu("values"),
                "old_log_probs": cpu("old_log_probs"),
                "teacher_log_probs": cpu("teacher_log_probs"),
                "token_ids": None
                if token_ids is None
                else [(token_ids[0][i].tolist(), token_ids[1][i].tolist()) for i in keep],
                "advantages": stored[keep].cpu(),
                "returns": cpu("returns"),
            },
            path / f"advantages_step{int(self.global_steps):04d}_{os.getpid()}.pt",
        )


def register() -> None:
    """Register :class:`AgentspecTrainer` as verl trainer ``agentspec`` (idempotent)."""
    if TRAINER_REGISTRY.get(TRAINER_NAME) is not AgentspecTrainer:
        register_trainer(TRAINER_NAME)(AgentspecTrainer)
