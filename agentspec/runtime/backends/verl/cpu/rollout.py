"""The CPU path's engines, workers and transformers rollout (see :mod:`agentspec.runtime.backends.verl.cpu`)."""

from __future__ import annotations

import asyncio
import hashlib
import os
import threading
from typing import Any

import ray
import torch
from verl.workers.engine.base import EngineRegistry
from verl.workers.engine.fsdp.transformer_impl import FSDPEngineWithLMHead
from verl.workers.engine_workers import ActorRolloutRefWorker, TrainingWorker
from verl.workers.rollout import base as rollout_base
from verl.workers.rollout.base import BaseRollout
from verl.workers.rollout.replica import RolloutReplica, RolloutReplicaRegistry, TokenOutput

from agentspec.runtime.backends.verl import engines

__all__ = [
    "ROLLOUT_NAME",
    "CpuActorRolloutRefWorker",
    "CpuTrainingWorker",
    "HFReplica",
    "HFServer",
    "HFServerAdapter",
    "register",
    "server_name",
]

ROLLOUT_NAME = "agentspec_hf"


# ----------------------------------------------------------------------------
# engines: verl's FSDP engines, registered for the cpu device
# ----------------------------------------------------------------------------


def _register_engines() -> None:
    """verl's FSDP actor engine and agentspec's critic engine (:mod:`..engines`) for ``cpu``."""
    backends = EngineRegistry._engines.get("language_model", {})
    if not all("cpu" in backends.get(b, {}) for b in ("fsdp", "fsdp2")):
        EngineRegistry.register(
            model_type="language_model", backend=["fsdp", "fsdp2"], device="cpu"
        )(FSDPEngineWithLMHead)
    engines.register("cpu")


# ----------------------------------------------------------------------------
# workers: one process group over gloo
# ----------------------------------------------------------------------------


def _init_gloo() -> None:
    if torch.distributed.is_initialized():
        return
    rank = int(os.environ.get("RANK", 0))
    world_size = int(os.environ.get("WORLD_SIZE", 1))
    if world_size == 1:
        # One process needs no rendezvous. verl probes a free MASTER_PORT when
        # it builds the worker group and the worker listens on it later; on a
        # busy machine another process can take the port in between
        # (EADDRINUSE). An in-process store opens no socket at all.
        torch.distributed.init_process_group(
            backend="gloo", store=torch.distributed.HashStore(), rank=0, world_size=1
        )
        return
    torch.distributed.init_process_group(
        backend="gloo",
        rank=rank,
        world_size=world_size,
        init_method=os.environ.get("DIST_INIT_METHOD", None),
    )


class CpuTrainingWorker(TrainingWorker):
    """verl's training worker with its process group opened over ``gloo`` only."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _init_gloo()
        super().__init__(*args, **kwargs)


class CpuActorRolloutRefWorker(ActorRolloutRefWorker):
    """verl's actor/rollout/ref worker whose inner training workers use ``gloo`` only."""

    actor_worker_cls = CpuTrainingWorker
    ref_worker_cls = CpuTrainingWorker


# ----------------------------------------------------------------------------
# rollout on transformers
# ----------------------------------------------------------------------------


def server_name(replica_rank: int, suffix: str = "") -> str:
    """The Ray actor name of replica ``replica_rank``'s server."""
    return f"agentspec_hf_server_{replica_rank}{suffix}"


def _weights_digest(model: Any) -> str:
    h = hashlib.sha1(usedforsecurity=False)
    for name, t in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(t.detach().float().cpu().numpy().tobytes())
    return h.hexdigest()


class HFServer:
    """A token-in, token-out sampler on a transformers model (one Ray actor per replica).

    ``generate`` samples with temperature / top-k / top-p and returns the
    log-prob of each chosen token under ``log_softmax(logits / temperature)``
    (the raw distribution at temperature 0, which is greedy).
    """

    def __init__(self, model_path: str, seed: int = 0) -> None:
        from transformers import AutoModelForCausalLM, GenerationConfig

        torch.set_num_threads(1)
        self.model = AutoModelForCausalLM.from_pretrained(
            model_path, dtype=torch.float32, attn_implementation="sdpa"
        ).eval()
        gen = GenerationConfig.from_model_config(self.model.config)
        eos = self.model.generation_config.eos_token_id or gen.eos_token_id
        self.eos_ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        self.seed = seed
        self.asked: dict[tuple[int, str], int] = {}  # (step, prompt digest) → requests so far
        self.lock = threading.Lock()
        self.global_steps = 0
        self.digests: list[str] = [_weights_digest(self.model)]

    def ready(self) -> bool:
        return True

    def _generator(self, prompt_ids: list[int]) -> torch.Generator:
        """The random stream of one request: from the seed, the training step, the prompt
        and how many times this step asked for that prompt before. Requests arrive in
        the order threads reach the server, not a fixed one; keyed like this, a seed
        samples the same episodes whatever that order (the requests for one prompt are
        interchangeable)."""
        digest = hashlib.sha1(str(prompt_ids).encode(), usedforsecurity=False).hexdigest()
        key = (self.global_steps, digest)
        nth = self.asked.get(key, 0)
        self.asked[key] = nth + 1
        stream = hashlib.sha1(f"{self.seed}:{key}:{nth}".encode(), usedforsecurity=False)
        return torch.Generator().manual_seed(int(stream.hexdigest()[:15], 16))

    @torch.no_grad()
    def _sample(
        self, prompt_ids: list[int], params: dict[str, Any]
    ) -> tuple[list[int], list[float]]:
        max_tokens = int(params.get("max_tokens") or params.get("max_new_tokens") or 64)
        temperature = float(params.get("temperature", 1.0) or 0.0)
        top_k = int(params.get("top_k", -1) or -1)
        top_p = float(params.get("top_p", 1.0) or 1.0)
        generator = self._generator(prompt_ids)
        ids = torch.tensor([prompt_ids], dtype=torch.long)
        past = None
        out_ids: list[int] = []
        out_lp: list[float] = []
        for _ in range(max_tokens):
            result = self.model(input_ids=ids, past_key_values=past, use_cache=True)
            past = result.past_key_values
            logits = result.logits[0, -1].float()
            if temperature > 0:
                logp = torch.log_softmax(logits / temperature, dim=-1)
                scores = logp.clone()
                if top_k > 0:
                    kth = torch.topk(scores, min(top_k, scores.numel())).values[-1]
                    scores[scores < kth] = -float("inf")
                if top_p < 1.0:
                    sorted_scores, order = torch.sort(scores, descending=True)
                    cum = torch.softmax(sorted_scores, dim=-1).cumsum(-1)
                    drop = cum - torch.softmax(sorted_scores, dim=-1) > top_p
                    scores[order[drop]] = -float("inf")
                probs = torch.softmax(scores, dim=-1)
                token = int(torch.multinomial(probs, 1, generator=generator).item())
            else:
                logp = torch.log_softmax(logits, dim=-1)
                token = int(torch.argmax(logp).item())
            out_ids.append(token)
            out_lp.append(float(logp[token]))
            if token in self.eos_ids:
                break
            ids = torch.tensor([[token]], dtype=torch.long)
        return out_ids, out_lp

    async def generate(
        self,
        prompt_ids: list[int],
        sampling_params: dict[str, Any],
        request_id: str = "",
        image_data: Any = None,
        video_data: Any = None,
        **kwargs: Any,
    ) -> TokenOutput:
        def run() -> tuple[list[int], list[float]]:
            with self.lock:
                return self._sample(list(prompt_ids), sampling_params)

        token_ids, log_probs = await asyncio.to_thread(run)
        return TokenOutput(
            token_ids=token_ids,
            log_probs=log_probs,
            stop_reason="completed",
            extra_fields={"global_steps": self.global_steps},
        )

    def update_weights(self, state_dict: dict[str, torch.Tensor], global_steps: int | None) -> str:
        with self.lock:
            missing, unexpected = self.model.load_state_dict(state_dict, strict=False)
            real_missing = [m for m in missing if not m.endswith("lm_head.weight")]
            if real_missing or unexpected:
                raise RuntimeError(
                    f"rollout weights do not match the model: missing {real_missing[:5]}, "
                    f"unexpected {unexpected[:5]}"
                )
            if self.model.config.tie_word_embeddings:
                self.model.tie_weights()
            if global_steps is not None:
                self._step(int(global_steps))
            self.digests.append(_weights_digest(self.model))
            return self.digests[-1]

    def weight_digests(self) -> list[str]:
        """The weights' digest at load and after every update (tests: did training change them)."""
        return list(self.digests)

    async def wake_up(self) -> None:
        return None

    async def sleep(self) -> None:
        return None

    async def clear_kv_cache(self) -> None:
        return None

    async def release_kv_cache(self) -> None:
        return None

    async def resume_kv_cache(self) -> None:
        return None

    async def abort_all_requests(self, reject_request: bool = False) -> None:
        return None

    async def resume_generation(self) -> None:
        return None

    async def start_profile(self, **kwargs: Any) -> None:
        return None

    async def stop_profile(self) -> None:
        return None

    async def set_global_steps(self, global_steps: int) -> None:
        self._step(int(global_steps))  # between steps: no request is being sampled

    def _step(self, global_steps: int) -> None:
        """A new training step: earlier steps' request counts are never read again."""
        self.global_steps = global_steps
        self.asked = {k: n for k, n in self.asked.items() if k[0] == global_steps}


class HFReplica(RolloutReplica):
    """One :class:`HFServer` per replica, next to verl's hybrid workers."""

    def rollout_worker_use_gpu(self) -> bool:
        return False

    async def launch_servers(self) -> None:
        name = server_name(self.replica_rank, self.name_suffix)
        path = getattr(self.model_config, "local_path", None) or self.model_config.path
        actor: Any = (
            ray.remote(HFServer)
            .options(name=name, num_cpus=0.1, max_concurrency=self.max_concurrency)
            # each replica its own streams (vLLM seeds replica r with seed + r)
            .remote(str(path), seed=int(self.config.seed) + self.replica_rank)
        )
        await actor.ready.remote()
        self.servers = [actor]
        self._server_handle = actor
        self._server_address = f"ray-actor://{name}"


class HFServerAdapter(BaseRollout):
    """The worker-side half of the rollout: sends the trained weights to the replica's server.

    FSDP2 shards are gathered with ``full_tensor()`` on every rank (a collective);
    the first rank of each replica sends them.
    """

    def __init__(self, config: Any, model_config: Any, device_mesh: Any, *args: Any, **kwargs: Any):
        super().__init__(config, model_config, device_mesh, *args, **kwargs)
        rank = torch.distributed.get_rank() if torch.distributed.is_initialized() else 0
        size = (
            self.config.tensor_model_parallel_size
            * self.config.data_parallel_size
            * self.config.pipeline_model_parallel_size
        )
        self.replica_rank = rank // size
        self.is_sender = rank % size == 0

    async def resume(self, tags: list[str]) -> None:
        return None

    async def release(self) -> None:
        return None

    async def update_weights(
        self, weights: Any, wire_format: str = "named_tensors", **kwargs: Any
    ) -> None:
        if wire_format != "named_tensors":
            raise ValueError(
                f"the transformers rollout takes full named tensors, not {wire_format!r}"
            )
        state: dict[str, torch.Tensor] = {}
        for name, tensor in weights:
            full = tensor.full_tensor() if hasattr(tensor, "full_tensor") else tensor
            state[name] = full.detach().to("cpu", copy=True)
        if self.is_sender:
            server = ray.get_actor(server_name(self.replica_rank))
            await server.update_weights.remote(state, kwargs.get("global_steps"))


def register() -> None:
    """Register the cpu engines and the ``agentspec_hf`` rollout: the replica in verl's public
    registry, the worker-side adapter in verl's (private) rollout-class table. Runs on import."""
    _register_engines()
    RolloutReplicaRegistry.register(ROLLOUT_NAME, lambda: HFReplica)
    rollout_base._ROLLOUT_REGISTRY[(ROLLOUT_NAME, "async")] = (
        f"{__name__}.{HFServerAdapter.__name__}"
    )


register()
