"""verl 0.9.1's checks that depend on the GPU count, before anything starts.

verl checks some of these in ``validate_config`` (in the driver, with a message that
names verl's keys, not the spec's settings) and the rest only inside its workers, at
the first update, after a whole rollout. Each check here mirrors one place of verl's
source (quoted in the message) and says which agentspec setting to change, where
that setting was given (``FILE:LINE:COL`` in the spec, ``--set KEY=VALUE``, or
the default), and a value that passes:

- ``data.train_batch_size × rollout.n`` divisible by the GPU count
  (``verl/utils/config.py``, ``validate_config``);
- a mini-batch (``ppo_mini_batch_size × rollout.n`` rows, actor and critic) divisible
  by the data-parallel size (``workers/engine_workers.py``, ``train_mini_batch``);
- each GPU's share of a mini-batch divisible by its micro-batch, and each GPU's share
  of the (padded) batch by the log-prob micro-batches (``workers/engine/utils.py``,
  ``prepare_micro_batches``);
- the rollout's ``tensor × data × pipeline`` parallel size dividing the GPU count
  (``engine_workers.py``: "rollout world_size … is not divisible") and a multiple of
  the GPUs per node when larger (``workers/rollout/replica.py``);
- more nodes or GPUs than a cluster agentspec starts itself can have.

:func:`fit_micro_batches` first makes the micro-batch sizes agentspec generated fit
the GPU count (a user's own value is checked, never changed). Nothing here imports
verl or torch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["count_problems", "fit_micro_batches"]

ACTOR = "actor_rollout_ref.actor."
ROLLOUT = "actor_rollout_ref.rollout."
CRITIC = "critic."

# the verl key of each agentspec setting the generated overrides map one to one
SETTING_OF = {
    "data.train_batch_size": "prompts_per_iteration",
    ROLLOUT + "n": "group_size",
    ACTOR + "ppo_mini_batch_size": "minibatch_size",
    CRITIC + "ppo_mini_batch_size": "minibatch_size",
}


def _get(overrides: Mapping[str, str], key: str, default: str | None = None) -> str | None:
    return overrides.get(key, overrides.get("+" + key, default))


def _int(overrides: Mapping[str, str], key: str, default: int) -> int:
    value = _get(overrides, key)
    return default if value in (None, "null", "None") else int(float(str(value)))


def _truthy(value: Any) -> bool:
    return str(value).strip().lower() in ("true", "1", "yes")


def _batch_multiple(dp: int, actor_rows: int, critic_rows: int | None) -> int:
    """verl's padding multiple of a batch (``_get_required_batch_multiple``)."""
    multiple = math.lcm(dp, actor_rows)
    return math.lcm(multiple, critic_rows) if critic_rows else multiple


def fit_micro_batches(merged: dict[str, str], user: Mapping[str, Any]) -> dict[str, str]:
    """``merged`` with every micro-batch size the user did not set lowered to divide the
    rows each GPU gets: a mini-batch's share (training) and the padded batch's share
    (log-probs, values). verl asserts both divisions at the first update."""
    out = dict(merged)
    world = _int(out, "trainer.n_gpus_per_node", 1) * _int(out, "trainer.nnodes", 1)
    n = _int(out, ROLLOUT + "n", 1)
    actor_rows = _int(out, ACTOR + "ppo_mini_batch_size", 1) * n
    critic = _truthy(_get(out, CRITIC + "enable", "False"))
    critic_rows = _int(out, CRITIC + "ppo_mini_batch_size", 1) * n if critic else None
    dp = max(1, world // max(1, _int(out, ACTOR + "ulysses_sequence_parallel_size", 1)))
    if actor_rows % dp or (critic_rows and critic_rows % dp):
        return out  # count_problems names the mini-batch: no micro-batch can fit
    padded = _batch_multiple(dp, actor_rows, critic_rows) // dp
    shares = {
        ACTOR + "ppo_micro_batch_size_per_gpu": actor_rows // dp,
        ROLLOUT + "log_prob_micro_batch_size_per_gpu": padded,
        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu": padded,
        CRITIC + "ppo_micro_batch_size_per_gpu": (critic_rows or actor_rows) // dp,
    }
    given = {k.lstrip("+") for k in user}
    for key, share in shares.items():
        value = _get(out, key)
        if key in given or value in (None, "null"):
            continue
        out[key] = str(math.gcd(int(value), share))
    return out


class _Where:
    """Where each setting was given, for the messages."""

    def __init__(
        self, origins: Mapping[str, str], user: Mapping[str, Any], training: Mapping[str, Any]
    ) -> None:
        self.origins = dict(origins)
        self.user = {k.lstrip("+"): v for k, v in user.items()}
        self.training = dict(training)

    def at(self, key: str) -> str:
        """Where a verl key's value comes from: ``--set KEY=VALUE``, the spec's
        ``FILE:LINE:COL`` of the agentspec setting it maps, or the default."""
        if key in self.user:
            return f"--set {key}={self.user[key]}"
        setting = SETTING_OF.get(key)
        if setting is None:
            return "default"
        return self.origins.get(setting, "default")

    def lead(self, key: str) -> str:
        """The message's start: where the setting was given, nothing for a default."""
        at = self.at(key)
        return "" if at == "default" else f"{at}: "

    def __call__(self, key: str, value: Any, *, located: bool = True) -> str:
        """``NAME VALUE (where)`` for a verl key, by its agentspec name if it has one."""
        setting = SETTING_OF.get(key)
        where = [self.at(key)] if located else []
        if setting is None or key in self.user or setting not in self.training:
            name, own = key, value
        else:
            name, own = f"training.{setting}", self.training[setting]
            if str(own) != str(value):
                where.append(f"verl's {key} {value}")
        return f"{name} {own}" + (f" ({'; '.join(where)})" if where else "")


def count_problems(
    config: Any,
    origins: Mapping[str, str],
    user: Mapping[str, Any],
    training: Mapping[str, Any],
    *,
    local_gpus: int | None = None,
    use_critic: bool = False,
    use_ref: bool = False,
) -> list[str]:
    """What verl would refuse in ``config`` (its composed config) because of the GPU
    count, each problem one message; ``origins``: where each training setting was
    given (:func:`~agentspec.runtime.backends.local.model_defaults.setting_origins`);
    ``user``: the ``--set`` overrides; ``training``: the resolved training settings;
    ``local_gpus``: the GPUs of the machine when
    agentspec starts the Ray cluster itself (``None``: joining a cluster, or the CPU path)."""
    where = _Where(origins, user, training)
    t, actor = config.trainer, config.actor_rollout_ref.actor
    per_node, nnodes = int(t.n_gpus_per_node), int(t.nnodes)
    world = per_node * nnodes
    gpus = (
        f"{world} GPUs ({where('trainer.n_gpus_per_node', per_node)} × "
        f"{where('trainer.nnodes', nnodes)})"
    )
    problems = _cluster_problems(per_node, nnodes, gpus, local_gpus)
    problems += _rollout_problems(config, per_node, world, gpus)
    if problems or bool(actor.use_dynamic_bsz) or str(actor.strategy) == "megatron":
        return problems  # dynamic batch sizes split by tokens: no row-count rule applies
    batch = _Batch(config, use_critic)
    problems += _batch_problems(batch, where, world, gpus)
    if problems:
        return problems
    return _micro_problems(config, batch, where, world, use_critic=use_critic, use_ref=use_ref)


def _cluster_problems(per_node: int, nnodes: int, gpus: str, local: int | None) -> list[str]:
    if per_node < 1 or nnodes < 1:
        return [f"{gpus}: verl needs at least one GPU on at least one node"]
    if local is None:
        return []
    if nnodes > 1:
        return [
            f"trainer.nnodes {nnodes}: a cluster agentspec starts itself has this one node; "
            "start Ray on every node (`ray start`) and pass --ray-address"
        ]
    if per_node > local:
        return [
            f"trainer.n_gpus_per_node {per_node}: this machine has {local} GPUs; "
            f"set --set trainer.n_gpus_per_node={local} or join a cluster with --ray-address"
        ]
    return []


def _rollout_problems(config: Any, per_node: int, world: int, gpus: str) -> list[str]:
    r = config.actor_rollout_ref.rollout
    tp, dp, pp = (
        int(r.tensor_model_parallel_size),
        int(r.data_parallel_size),
        int(r.pipeline_model_parallel_size),
    )
    size = tp * dp * pp
    tp_key = ROLLOUT + "tensor_model_parallel_size"
    lead = f"--set {tp_key}={tp}: " if tp != 1 else ""
    what = (
        f"{lead}the rollout's parallel size {size} ({ROLLOUT}tensor_model_parallel_size {tp} × "
        f"data_parallel_size {dp} × pipeline_model_parallel_size {pp})"
    )
    if world % size:
        return [
            f"{what} does not divide {gpus}: verl 0.9.1 asserts it in its rollout workers "
            "(workers/engine_workers.py: 'rollout world_size is not divisible by "
            f"infer_world_size'); use a tensor parallel size dividing {world}"
        ]
    if size % min(per_node, size):
        return [
            f"{what} spans nodes of {per_node} GPUs without filling them: verl's rollout "
            "replica asserts it is a multiple of the GPUs per node (workers/rollout/replica.py)"
        ]
    return []


class _Batch:
    """The row counts of one iteration, as verl's trainer computes them."""

    def __init__(self, config: Any, use_critic: bool) -> None:
        self.prompts = int(config.data.train_batch_size)
        self.n = int(config.actor_rollout_ref.rollout.n)
        self.actor_mini = int(config.actor_rollout_ref.actor.ppo_mini_batch_size)
        self.critic_mini = int(config.critic.ppo_mini_batch_size) if use_critic else None
        sp = int(config.actor_rollout_ref.actor.get("ulysses_sequence_parallel_size", 1) or 1)
        self.sp = sp

    def rows(self, mini: int | None) -> int | None:
        return None if mini is None else mini * self.n


def _first_multiple(start: int, step: int) -> int:
    return max(step, -(-start // step) * step)


def _batch_problems(b: _Batch, where: _Where, world: int, gpus: str) -> list[str]:
    problems = []
    key = "data.train_batch_size"
    episodes = b.prompts * b.n
    if episodes % world:
        step = world // math.gcd(world, b.n)
        problems.append(
            f"{where.lead('data.train_batch_size')}"
            f"{where('data.train_batch_size', b.prompts, located=not where.lead(key))} × {where(ROLLOUT + 'n', b.n)} = "
            f"{episodes} episodes an iteration do not split over {gpus}: verl 0.9.1 requires "
            "data.train_batch_size × rollout.n to be a multiple of the GPU count "
            "(verl/utils/config.py, validate_config: 'real_train_batch_size must be divisible "
            f"by minimal possible batch size'); set prompts_per_iteration to a multiple of "
            f"{step} (e.g. {_first_multiple(b.prompts, step)}) or use a GPU count dividing "
            f"{episodes}"
        )
    if world % b.sp:
        problems.append(f"{gpus} is not a multiple of the sequence-parallel size {b.sp}")
        return problems
    dp = world // b.sp
    for role, key, mini in (
        ("actor", ACTOR + "ppo_mini_batch_size", b.actor_mini),
        ("critic", CRITIC + "ppo_mini_batch_size", b.critic_mini),
    ):
        if mini is None or (role == "critic" and mini == b.actor_mini):
            continue  # one setting, one message
        if mini > b.prompts:
            continue  # verl's validate_config names both keys ("train_batch_size must be >=")
        rows = mini * b.n
        if rows % dp:
            step = math.lcm(b.n, dp)
            problems.append(
                f"{where.lead(key)}{where(key, mini, located=where.at(key) == 'default')}: the mini-batch "
                f"of {mini} prompts × {where(ROLLOUT + 'n', b.n)} = {rows} rows does not split over the data-parallel size {dp} "
                f"({gpus}); verl 0.9.1 asserts it at the first update, after a whole rollout "
                "(workers/engine_workers.py, train_mini_batch: 'mini_batch_size % "
                "get_data_parallel_size() == 0'); set training.minibatch_size to a multiple "
                f"of {step} (lcm of group_size {b.n} and {dp}), e.g. {_first_multiple(rows, step)}"
            )
    return problems


def _micro_problems(
    config: Any, b: _Batch, where: _Where, world: int, *, use_critic: bool, use_ref: bool
) -> list[str]:
    dp = world // b.sp
    actor_rows = b.rows(b.actor_mini) or 0
    critic_rows = b.rows(b.critic_mini)
    padded = _batch_multiple(dp, actor_rows, critic_rows) // dp
    a, r = config.actor_rollout_ref.actor, config.actor_rollout_ref
    checks = [
        (
            ACTOR + "ppo_micro_batch_size_per_gpu",
            a.ppo_micro_batch_size_per_gpu,
            actor_rows // dp,
            "the actor's mini-batch share of each GPU",
        ),
        (
            ROLLOUT + "log_prob_micro_batch_size_per_gpu",
            r.rollout.log_prob_micro_batch_size_per_gpu,
            padded,
            "each GPU's share of a padded batch (old log-probs)",
        ),
    ]
    if use_ref:
        checks.append(
            (
                "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu",
                r.ref.log_prob_micro_batch_size_per_gpu,
                padded,
                "each GPU's share of a padded batch (reference log-probs)",
            )
        )
    if use_critic and critic_rows:
        c = config.critic
        checks.append(
            (
                CRITIC + "ppo_micro_batch_size_per_gpu",
                c.ppo_micro_batch_size_per_gpu,
                critic_rows // dp,
                "the critic's mini-batch share of each GPU",
            )
        )
    problems = []
    for key, micro, share, what in checks:
        if micro is not None and share % int(micro):
            problems.append(
                f"{where.lead(key)}{where(key, micro, located=where.at(key) == 'default')} does not divide {what}, {share} rows: verl 0.9.1 asserts "
                "it at the first update (workers/engine/utils.py, prepare_micro_batches: 'data "
                "size must be divisible by … micro_batch_size_per_gpu'); set "
                f"{key}={math.gcd(int(micro), share)} or leave it to agentspec"
            )
    return problems
