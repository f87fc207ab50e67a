"""The turns of model-free episodes: the spec's oracle and scripted files.

`episode_script` gives, per sample, an episode's turns for `--policy oracle`
(the spec's `oracle:` list rendered lazily, an `oracle.hook`, or the
environment adapter's walkthrough) and `--policy scripted:FILE`. A turn list
that cannot be made is a `PolicyError` naming the spec line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from agentspec.runtime.policies.scripted import ScriptedPolicy
from agentspec.runtime.text.tokenizer import Tokenizer

__all__ = [
    "PolicyError",
    "Script",
    "episode_script",
    "hook_script",
    "lazy_oracle",
    "sample_policy",
    "walkthrough_script",
]


class PolicyError(ValueError):
    """A `--policy` value that cannot be used, with why."""


Script = list[str] | Callable[[str], str]
"""One episode's turns: a list, or a function of the prompt giving the next turn."""


def has_oracle(module: ModuleType) -> bool:
    """Whether the compiled spec has an `oracle:` (a list, a hook or a walkthrough)."""
    return (
        hasattr(module, "oracle_actions")
        or hasattr(module, "ORACLE_HOOK")
        or bool(getattr(module, "ORACLE_WALKTHROUGH", False))
    )


def episode_script(module: ModuleType, policy: str) -> Callable[[Mapping[str, Any]], Script] | None:
    """The turns of one episode for `oracle` and `scripted:FILE`, else None."""
    kind, _, location = policy.partition(":")
    if kind == "oracle":
        if hasattr(module, "oracle_actions"):
            return lazy_oracle(module.oracle_actions)
        if hasattr(module, "ORACLE_HOOK"):
            hook = hook_script(module.ORACLE_HOOK, getattr(module, "ORACLE_HOOK_LOCATION", ""))
            return lazy_oracle(hook)
        if getattr(module, "ORACLE_WALKTHROUGH", False):
            return lazy_oracle(walkthrough_script(module))
        raise PolicyError("this spec has no `oracle`")
    if kind == "scripted":
        path = Path(location)
        if not path.is_file():
            what = (
                "is a folder"
                if path.is_dir()
                else "is not a regular file"
                if path.exists()
                else "does not exist"
            )
            raise PolicyError(f"scripted policy file {location!r} {what}")
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise PolicyError(
                f"scripted policy file {location!r} is not readable UTF-8 text ({exc})"
            ) from None
        lines = [line for line in text.splitlines() if line.strip()]
        if not lines:
            raise PolicyError(f"{location} has no responses (one per line)")
        turns = [_LINE_BREAK.sub(_unescaped, line) for line in lines]
        return lambda sample: list(turns)
    return None


_LINE_BREAK = re.compile(r"\\\\n|\\n")  # `\\n` (a backslash, then n) or `\n` (a line break)


def _unescaped(match: re.Match[str]) -> str:
    return "\\n" if len(match.group()) == 3 else "\n"


def sample_policy(
    script: Callable[[Mapping[str, Any]], Script], sample: Mapping[str, Any], tokenizer: Tokenizer
) -> ScriptedPolicy:
    """The policy that plays `script` (`episode_script`'s) on one sample. A turn that
    cannot be made for this sample (an oracle template that fails on its fields, a hook
    that raises) ends this episode with `policy_error`, the message kept in its last
    step; the other episodes play on."""
    try:
        turns = script(sample)
    except PolicyError as exc:
        message = str(exc)

        def turns(prompt: str) -> str:
            raise PolicyError(message)

    return ScriptedPolicy(turns, tokenizer, errors=(PolicyError,))


def lazy_oracle(
    oracle_actions: Callable[[dict[str, Any]], Any],
) -> Callable[[Mapping[str, Any]], Callable[[str], str]]:
    """The turns of a spec's oracle (its `oracle:` list, hook or walkthrough), made
    one per step as the episode asks for them; after the last (or an empty)
    action, the oracle answers with nothing, which ends a tool episode: an expert
    whose turns ran out does not start them over. A rendering error is a
    `PolicyError` with the spec line and the sample's id."""
    from agentspec.runtime.compiled.oracle import OracleError

    def script(sample: Mapping[str, Any]) -> Callable[[str], str]:
        turns = iter(oracle_actions(dict(sample)))
        sample_id = sample.get("id", sample.get("sample_id", "?"))

        def next_turn(prompt: str) -> str:
            try:
                return next(turns, "")
            except OracleError as exc:
                raise PolicyError(f"oracle for sample {sample_id}: {exc}") from None

        return next_turn

    return script


def hook_script(target: str, location: str = "") -> Callable[[Mapping[str, Any]], list[str]]:
    """The turns of an `oracle: {hook: module:attr}`: the hook, called with the
    sample, returns the episode's actions in order (a list of texts). A hook
    that cannot be loaded, raises, or returns anything else is a `PolicyError`
    naming `oracle.hook` and its spec line."""
    from agentspec.stdlib.user import import_target

    where = f"the oracle hook '{target}'" + (f" (oracle.hook, {location})" if location else "")
    try:
        hook = import_target(target)
    except (ImportError, AttributeError) as exc:
        raise PolicyError(f"cannot load {where}: {exc}") from None
    if not callable(hook):
        raise PolicyError(f"{where} is not callable")

    def script(sample: Mapping[str, Any]) -> list[str]:
        sample_id = sample.get("id", sample.get("sample_id", "?"))
        try:  # the user's code (a generator's too)
            turns = hook(dict(sample))
            text_like = isinstance(turns, (str, bytes, Mapping))
            listed = list(turns) if isinstance(turns, Iterable) and not text_like else None
        except Exception as exc:
            raise PolicyError(
                f"{where} failed for sample {sample_id}: {type(exc).__name__}: {exc}"
            ) from None
        if listed is None or not all(isinstance(t, str) for t in listed):
            shape = "None" if turns is None else f"a {type(turns).__name__}"
            if listed is not None:
                bad = next(t for t in listed if not isinstance(t, str))
                shape += f" holding {str(bad)[:40]!r} ({type(bad).__name__})"
            raise PolicyError(
                f"{where} returned {shape} for sample {sample_id}; it must return a list of"
                " action texts, one per turn"
            )
        return listed

    return script


def walkthrough_script(module: ModuleType) -> Callable[[Mapping[str, Any]], list[str]]:
    """The turns of `oracle: {walkthrough: true}`: the environment adapter's
    walkthrough of the sample's game."""
    env_class = module.ENV_CLASS
    if not hasattr(env_class, "make_adapter"):
        raise PolicyError("a walkthrough oracle needs an `environment` adapter")
    try:
        adapter = env_class.make_adapter()
    except Exception as exc:  # the user's class or config: said here, before any episode
        raise PolicyError(
            f"the environment adapter cannot be built: {type(exc).__name__}: {exc}"
        ) from None

    def script(sample: Mapping[str, Any]) -> list[str]:
        try:
            return list(adapter.walkthrough(dict(sample)))
        except NotImplementedError:
            raise PolicyError(f"the {type(adapter).__name__} adapter has no walkthrough") from None

    return script
