"""The verl side of ``test_backend_parity.py``: one update of a fixed batch through verl's
own workers on the CPU, in this process (no Ray).

``python parity_verl_update.py ARGS.json`` reads what the test wrote (the composed run's
Hydra overrides, the trajectories, the fixed old and reference log-probs) and runs the
stages of one verl training step on them as the ``agentspec`` trainer runs them:

- the rows: each trajectory's ``AgentLoopOutput`` s as the generated agent loop returns
  them (:func:`~agentspec.runtime.backends.verl.agent_loop.episode_outputs`), turned into
  verl's TransferQueue fields as verl's ``AgentLoopWorkerTQ`` does;
- the old log-probs: the sampler's (the batch's fixed ones, as verl's rollout-correction
  bypass mode takes them); the reference log-probs: the batch's fixed ones;
- the critic's values: verl's critic worker (``infer_batch``);
- the advantages: :meth:`AgentspecTrainer._compute_advantage` itself, on an in-memory
  TransferQueue (with the OPD teacher scoring the rows in it);
- the critic and actor updates: verl's ``TrainingWorker.train_mini_batch`` (critic) and
  ``ActorRolloutRefWorker.update_actor`` with the extra info verl's trainer passes, the
  whole batch one mini-batch.

Writes the trained actor's (and critic's) parameters and their gradients (after clipping:
what the optimiser stepped on) to ``ARGS["out"]``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

os.environ.update(
    {
        "VERL_PLATFORM": "cpu",
        "WORLD_SIZE": "1",
        "RANK": "0",
        "LOCAL_RANK": "0",
        "LOCAL_WORLD_SIZE": "1",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": "29500",  # not opened: one process uses an in-process store
        "TOKENIZERS_PARALLELISM": "false",
    }
)


class MemoryQueue:
    """verl's TransferQueue key-value calls the trainer makes, on one in-memory TensorDict."""

    def __init__(self, keys: list[str], fields: Any) -> None:
        self.keys = keys
        self.fields = fields

    def _rows(self, keys: list[str]) -> list[int]:
        return [self.keys.index(k) for k in keys]

    def kv_batch_get(self, keys: list[str], partition_id: str, select_fields: list[str]) -> Any:
        rows = self._rows(keys)
        assert rows == list(range(len(self.keys))), "the whole batch, in order"
        present = [f for f in select_fields if f in self.fields.keys()]  # noqa: SIM118
        return self.fields.select(*present).clone()

    def kv_batch_put(self, keys: list[str], partition_id: str, fields: Any = None, **_: Any) -> Any:
        import transfer_queue as tq

        assert self._rows(keys) == list(range(len(self.keys)))
        for name, value in fields.items():
            self.fields[name] = value
        return tq.KVBatchMeta(
            keys=list(keys),
            tags=[{} for _ in keys],
            partition_id=partition_id,
            fields=list(self.fields.keys()),
        )


def _rows(args: dict[str, Any], tokenizer: Any) -> tuple[list[str], Any]:
    """The batch's rows as verl's agent loop puts them into the TransferQueue."""
    import torch
    from verl.utils.tensordict_utils import list_of_dict_to_tensordict

    from agentspec.runtime.backends.verl.agent_loop import episode_outputs
    from agentspec.runtime.episode.trajectory import read_jsonl

    trajectories = read_jsonl(Path(args["trajectories"]))
    ref = {tuple(k.split("|")): v for k, v in args["ref_log_probs"].items()}
    keys, fields = [], []
    sessions: dict[str, int] = {}
    for traj in trajectories:
        uid = traj.group_id
        session = sessions.setdefault(uid, 0)
        sessions[uid] += 1
        outputs = episode_outputs(traj, pack=bool(args["pack"]), components=args["components"])
        for i, output in enumerate(outputs):
            field = output.as_dict()
            prompts, responses = field["prompts"], field["responses"]
            input_ids = torch.cat([prompts, responses])
            field.update(
                {
                    "uid": uid,
                    "session_id": session,
                    "loss_mask": field["response_mask"],
                    "input_ids": input_ids,
                    "position_ids": torch.arange(len(input_ids)),
                    # the fixed old log-probs are the sampler's (verl's bypass mode)
                    "old_log_probs": field["rollout_log_probs"].clone(),
                    "ref_log_prob": _ref_row(output, traj.trajectory_id, ref),
                }
            )
            field.pop("metrics", None)
            keys.append(f"{uid}_{session}_{i}")
            fields.append(field)
    return keys, list_of_dict_to_tensordict(fields)


def _ref_row(output: Any, trajectory_id: str, ref: dict[tuple[str, str], list[float]]) -> Any:
    """The fixed reference log-probs of one row, at its response positions."""
    import torch

    from agentspec.runtime.backends.verl.layout import EXTRA_KEY

    steps = output.extra_fields[EXTRA_KEY]["token_steps"]
    out = torch.zeros(len(output.response_ids), dtype=torch.float32)
    for step in set(steps) - {-1}:
        cols = [j for j, s in enumerate(steps) if s == step]
        out[cols] = torch.tensor(ref[(trajectory_id, str(step))], dtype=torch.float32)
    return out


def _critic(config: Any) -> Any:
    """verl's critic worker, built as verl's trainer builds it, with the loss the
    ``agentspec`` trainer gives it."""
    from verl.utils.config import omega_conf_to_dataclass
    from verl.workers.config import TrainingWorkerConfig

    from agentspec.runtime.backends.verl.cpu.rollout import CpuTrainingWorker
    from agentspec.runtime.backends.verl.trainer import critic_loss_fn

    critic_cfg = omega_conf_to_dataclass(config.critic)
    critic_cfg.engine.infer_max_token_len_per_gpu = critic_cfg.ppo_infer_max_token_len_per_gpu
    critic_cfg.engine.max_token_len_per_gpu = critic_cfg.ppo_infer_max_token_len_per_gpu
    worker = CpuTrainingWorker(
        config=TrainingWorkerConfig(
            model_type="value_model",
            model_config=critic_cfg.model,
            engine_config=critic_cfg.engine,
            optimizer_config=critic_cfg.optim,
            checkpoint_config=critic_cfg.checkpoint,
        )
    )
    worker.reset()
    worker.set_loss_fn(critic_loss_fn(config))
    return worker


def _with_info(fields: Any, info: dict[str, Any]) -> Any:
    from verl.utils import tensordict_utils as tu

    data = fields.clone()
    for key, value in info.items():
        tu.assign_non_tensor_data(tensor_dict=data, key=key, val=value)
    return data


def _values(critic: Any, fields: Any, temperature: float) -> Any:
    """The critic's value before each response token (verl's ``_compute_values``)."""
    from verl.workers.utils.padding import response_from_nested

    out = critic.infer_batch(
        _with_info(fields, {"compute_loss": False, "temperature": temperature})
    )
    return response_from_nested(out["values"], fields["response_mask"])


def _full(t: Any) -> Any:
    return (t.full_tensor() if hasattr(t, "full_tensor") else t).detach().cpu().clone()


def _record_steps(engine: Any) -> list[dict[str, Any]]:
    """The gradients at each of ``engine``'s optimiser steps (after clipping: what the step
    reads), as full CPU tensors."""
    steps: list[dict[str, Any]] = []
    optimizer = engine.optimizer
    step = optimizer.step

    def recording_step(*args: Any, **kwargs: Any) -> Any:
        steps.append(
            {
                n: None if p.grad is None else _full(p.grad)
                for n, p in engine.module.named_parameters()
            }
        )
        return step(*args, **kwargs)

    optimizer.step = recording_step
    return steps


def _params(module: Any) -> dict[str, Any]:
    """An FSDP2 module's parameters as full CPU tensors."""
    return {name: _full(p) for name, p in module.named_parameters()}


def main(args_path: str) -> None:
    import torch

    torch.set_num_threads(1)
    args = json.loads(Path(args_path).read_text())
    from agentspec.runtime.backends.verl.plugin import register_all

    register_all()
    import transfer_queue as tq
    from omegaconf import open_dict

    from agentspec.runtime.backends.verl import trainer as agentspec_trainer
    from agentspec.runtime.backends.verl.cpu.rollout import CpuActorRolloutRefWorker
    from agentspec.runtime.backends.verl.launcher import compose_config
    from agentspec.runtime.backends.verl.trainer import AgentspecTrainer

    config = compose_config(args["overrides"])
    rollout_n = int(config.actor_rollout_ref.rollout.n)
    temperature = float(config.actor_rollout_ref.rollout.temperature)

    keys, fields = _rows(args, None)
    # the whole batch is one mini-batch (verl counts prompts × rollout.n rows)
    rows = len(keys)
    assert rows % rollout_n == 0, (rows, rollout_n)
    with open_dict(config):
        config.actor_rollout_ref.actor.ppo_mini_batch_size = rows // rollout_n
        config.critic.ppo_mini_batch_size = rows // rollout_n

    actor = CpuActorRolloutRefWorker(config.actor_rollout_ref, role="actor")
    actor.init_model()
    use_critic = bool(config.critic.enable)
    critic = _critic(config) if use_critic else None

    actor_steps = _record_steps(actor.actor.engine)
    critic_steps = _record_steps(critic.engine) if critic is not None else []

    queue = MemoryQueue(keys, fields)
    agentspec_trainer.tq = queue  # the trainer's TransferQueue calls
    trainer = AgentspecTrainer.__new__(AgentspecTrainer)
    trainer.config = config
    trainer.global_steps = 1
    batch = tq.KVBatchMeta(
        keys=keys, tags=[{} for _ in keys], partition_id="train", fields=list(fields.keys())
    )
    if critic is not None:
        queue.fields["values"] = _values(critic, queue.fields, temperature)
    metrics: dict[str, Any] = {}
    trainer._compute_advantage(batch, metrics)

    data = queue.fields
    mini_batch = config.actor_rollout_ref.actor.ppo_mini_batch_size * rollout_n
    trained: dict[str, Any] = {}
    if critic is not None:
        trained["critic"] = critic.train_mini_batch(
            _with_info(
                data,
                {
                    "global_batch_size": config.critic.ppo_mini_batch_size * rollout_n,
                    "mini_batch_size": config.critic.ppo_mini_batch_size * rollout_n,
                    "epochs": config.critic.ppo_epochs,
                    "seed": config.critic.data_loader_seed,
                    "dataloader_kwargs": {"shuffle": config.critic.shuffle},
                    "temperature": temperature,
                },
            )
        )
    actor_config = config.actor_rollout_ref.actor
    trained["actor"] = actor.update_actor(
        _with_info(
            data,
            {
                "calculate_entropy": bool(
                    actor_config.calculate_entropy or actor_config.entropy_coeff != 0.0
                ),
                "distillation_use_topk": False,
                "distillation_only": False,
                "global_batch_size": mini_batch,
                "mini_batch_size": mini_batch,
                "epochs": actor_config.ppo_epochs,
                "seed": actor_config.data_loader_seed,
                "dataloader_kwargs": {"shuffle": actor_config.shuffle},
                "temperature": temperature,
            },
        )
    )
    out: dict[str, Any] = {"metrics": {k: v for k, v in metrics.items() if isinstance(v, float)}}
    for role, output in trained.items():  # each mini-batch's metrics, as verl's trainer gets them
        out[f"{role}_metrics"] = dict(output["metrics"])
    out["actor"] = _params(actor.actor.engine.module)
    out["actor_steps"] = actor_steps
    if critic is not None:
        out["critic"] = _params(critic.engine.module)
        out["critic_steps"] = critic_steps
    padded = data.select("advantages", "returns", "response_mask").to_padded_tensor()
    out["advantages"] = padded["advantages"]
    out["response_mask"] = padded["response_mask"]
    torch.save(out, args["out"])


if __name__ == "__main__":
    main(sys.argv[1])
