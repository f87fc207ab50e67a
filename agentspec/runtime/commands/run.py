"""Roll out a compiled spec with a policy chosen by name (`agentspec run`).

Policies: `oracle` (the spec's expert turns, per sample), `random` (random
schema-valid calls and answers: `spec.explore.policy`), `random_tokens`
(uniform token ids), `scripted:FILE` (one response per line, cycling), `hf:MODEL` or a bare
model name (a model loaded here: a checkpoint or run directory, `smollm2`, a
`.gguf` file; see `runtime.text.model_names`), `openai:URL` (an
OpenAI-compatible completions server that returns token ids), `chat:URL` (an
OpenAI-compatible chat-completions API with native tool calling; baselines only,
see `policies.chat`).
"""

from __future__ import annotations

import asyncio
import difflib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from agentspec.runtime.compiled.samples import (
    evaluation_samples,
    sample_ids,
)
from agentspec.runtime.compiled.scripts import (
    PolicyError,
    episode_script,
    sample_policy,
)
from agentspec.runtime.episode.trajectory import Trajectory
from agentspec.runtime.text.byte_tokenizer import ByteTokenizer
from agentspec.runtime.text.model_names import LOADABLE_MODEL_NAMES_HELP, SMOLLM2, ModelNameError
from agentspec.runtime.text.tokenizer import Tokenizer


async def rollout(
    module: ModuleType,
    samples: Sequence[Mapping[str, Any]],
    policy: str,
    *,
    seed: int = 0,
    temperature: float = 1.0,
    on_episode: Callable[[Trajectory], None] | None = None,
    tokenizer_dir: str | None = None,
    served_model: str = "default",
    task_tokenizer: Tokenizer | None = None,
    api_key_env: str = "OPENAI_API_KEY",
    max_concurrency: int = 8,
) -> list[Trajectory]:
    """One episode per sample with the named policy, concurrently.

    Policies without a model of their own (oracle, random, scripted) use
    `task_tokenizer` (the tokenizer the default model would have), else bytes.
    """
    flow_class = module.FLOW_CLASS
    ids = sample_ids(samples)

    async def one(flow: Any, sample: Mapping[str, Any], sid: str) -> Trajectory:
        traj: Trajectory = await flow.run(sample, sample_id=sid, group_id=sid)
        if on_episode is not None:
            on_episode(traj)
        return traj

    if policy == "random":
        from agentspec.runtime.commands.explore.policy import random_episodes

        tokenizer = task_tokenizer or ByteTokenizer()
        return await random_episodes(
            module, samples, tokenizer, seed=seed, sample_ids=ids, on_episode=on_episode
        )
    script = episode_script(module, policy)
    if script is not None:
        # Scripted turns are per episode: each one gets its own policy.
        tokenizer = task_tokenizer or ByteTokenizer()
        flows = [flow_class(sample_policy(script, s, tokenizer), tokenizer) for s in samples]
        episodes = (one(f, s, i) for f, s, i in zip(flows, samples, ids, strict=True))
        return list(await asyncio.gather(*episodes))
    model_policy, tokenizer = make_policy(
        policy,
        seed=seed,
        tokenizer_dir=tokenizer_dir,
        served_model=served_model,
        task_tokenizer=task_tokenizer,
        api_key_env=api_key_env,
        max_concurrency=max_concurrency,
    )
    flow = flow_class(model_policy, tokenizer, temperature=temperature, seed=seed)
    return list(await asyncio.gather(*(one(flow, s, i) for s, i in zip(samples, ids, strict=True))))


def make_policy(
    name: str,
    *,
    seed: int = 0,
    tokenizer_dir: str | None = None,
    served_model: str = "default",
    task_tokenizer: Tokenizer | None = None,
    api_key_env: str = "OPENAI_API_KEY",
    max_concurrency: int = 8,
) -> tuple[Any, Tokenizer]:
    """A model policy and its tokenizer from a `--policy` value: random, hf:MODEL or a
    model name, openai:URL, chat:URL."""
    kind, _, location = name.partition(":")
    if kind == "random_tokens":
        from agentspec.runtime.policies.random import RandomPolicy

        own: Any = task_tokenizer or ByteTokenizer()
        return RandomPolicy(len(own), own.eos_token_id, seed=seed), own
    model_name = policy_model(name)
    if model_name is not None:
        from agentspec.runtime.backends.local.models import load_checkpoint
        from agentspec.runtime.policies.hf import HFPolicy

        try:
            model, hf_tokenizer = load_checkpoint(model_name)
        except ModelNameError as exc:
            raise PolicyError(str(exc)) from None
        return HFPolicy(model.eval(), hf_tokenizer), hf_tokenizer
    if kind == "openai":
        from agentspec.runtime.policies.openai import OpenAIPolicy

        served_tokenizer = _served_tokenizer(tokenizer_dir)
        return OpenAIPolicy(location, model=served_model), served_tokenizer
    if kind == "chat":
        return chat_policy(location, served_model, task_tokenizer, api_key_env, max_concurrency)
    close = difflib.get_close_matches(name, ["oracle", "random", "random_tokens", SMOLLM2], n=1)
    raise PolicyError(
        f"unknown policy {name!r}: use oracle, random, random_tokens, scripted:FILE, openai:URL, chat:URL, "
        f"or a model to load here (hf: prefix optional): {LOADABLE_MODEL_NAMES_HELP}"
        + (f"; did you mean {close[0]!r}?" if close else "")
    )


def _served_tokenizer(tokenizer_dir: str | None) -> Any:
    """The tokenizer of an openai:URL policy's served model, from a local folder."""
    if tokenizer_dir is None:
        raise PolicyError(
            "openai:URL needs --tokenizer DIR: the served model's tokenizer (token in, token out)"
        )
    from transformers import AutoTokenizer

    folder = Path(tokenizer_dir)
    if (
        not (folder / "tokenizer.json").is_file()
        and not (folder / "tokenizer_config.json").is_file()
    ):
        what = (
            "is not a folder"
            if not folder.is_dir()
            else "holds no tokenizer.json or tokenizer_config.json"
        )
        raise PolicyError(
            f"--tokenizer {tokenizer_dir}: {what}; give the served model's tokenizer folder"
            " (a run's `tokenizer/`, or the model's own folder)"
        )
    try:  # a local folder only: never a download from a model hub
        served_tokenizer: Any = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    except (OSError, ValueError) as exc:
        raise PolicyError(f"--tokenizer {tokenizer_dir}: cannot load it ({exc})") from None
    return served_tokenizer


def policy_model(name: str) -> str | None:
    """The model a `--policy` value loads into this process (`hf:MODEL`, or a model name
    that is no other policy), or None."""
    kind, _, location = name.partition(":")
    if not name.strip():
        return None  # an empty name is no model (`Path("")` is the current folder)
    if kind == "hf":
        return location
    if name in ("oracle", "random", "random_tokens") or kind in ("scripted", "openai", "chat"):
        return None
    # written as a model (even one not installed here: its error then says what is missing)
    model_like = kind == "builtin" or name == SMOLLM2 or name.endswith(".gguf") or "/" in name
    return name if model_like or Path(name).exists() else None


def chat_policy(
    url: str,
    served_model: str,
    task_tokenizer: Tokenizer | None,
    api_key_env: str,
    max_concurrency: int,
) -> tuple[Any, Tokenizer]:
    """`chat:URL`: a chat-completions API; the key (if any) from the `api_key_env` variable."""
    import os

    from agentspec.runtime.policies.chat import ChatPolicy

    if not url.startswith(("http://", "https://")):
        raise PolicyError(f"chat: needs the API's base URL (http://HOST:PORT/v1), got {url!r}")
    if max_concurrency < 1:
        raise PolicyError("the chat policy's concurrency must be at least 1")
    tokenizer: Any = task_tokenizer or ByteTokenizer()
    policy = ChatPolicy(
        url,
        served_model,
        tokenizer,
        api_key=os.environ.get(api_key_env) or None,
        max_concurrency=max_concurrency,
    )
    return policy, tokenizer


def evaluate_policy(
    spec: Path,
    policy: str,
    episodes: int,
    temperature: float = 0.0,
    *,
    tokenizer_dir: str | None = None,
    served_model: str = "default",
    api_key_env: str = "OPENAI_API_KEY",
    max_concurrency: int = 8,
    note: Callable[[str], None] | None = None,
) -> Any:
    """`agentspec eval --policy`: any policy `agentspec run` takes (oracle, random,
    random_tokens, scripted:FILE, chat:URL, openai:URL, a model) on the held-out samples
    a checkpoint of the spec is evaluated on; no torch but for a model. `note` hears
    when fewer samples than asked are held out."""
    from agentspec.compiler.build import import_spec
    from agentspec.runtime.compiled.task_text import CORPUS_SAMPLES, cached_task_tokenizer
    from agentspec.runtime.episode.summary import summarize
    from agentspec.spec.training import TrainingSpec

    module = import_spec(spec)
    held_out = TrainingSpec.model_validate(module.TRAINING).eval_samples
    train_samples, samples, says = evaluation_samples(
        module, episodes, held_out, train_limit=CORPUS_SAMPLES
    )
    if says and note is not None:
        note(says)
    task_tokenizer, _ = cached_task_tokenizer(spec, module, train_samples)
    trajectories = asyncio.run(
        rollout(
            module,
            samples,
            policy,
            temperature=temperature,
            tokenizer_dir=tokenizer_dir,
            served_model=served_model,
            task_tokenizer=task_tokenizer,
            api_key_env=api_key_env,
            max_concurrency=max_concurrency,
        )
    )
    return summarize(trajectories, [c.name for c in module.ENV_CLASS.reward_components])
