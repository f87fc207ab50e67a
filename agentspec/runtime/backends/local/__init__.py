"""The local backend: train and evaluate on this machine with torch (CPU or one GPU).

The trainer (and torch) is imported on first use of `train` or `TrainingInterrupted`,
so that the settings (`config`, `model_defaults`) can be read where torch is not
installed: `agentspec train` says which install it needs instead of a traceback.
"""

from typing import TYPE_CHECKING, Any

from agentspec.runtime.backends.local.config import ConfigError, parse_overrides, resolve_config

if TYPE_CHECKING:
    from agentspec.runtime.backends.local.trainer import TrainingInterrupted, train

__all__ = ["ConfigError", "TrainingInterrupted", "parse_overrides", "resolve_config", "train"]


def __getattr__(name: str) -> Any:
    if name in ("train", "TrainingInterrupted"):
        from agentspec.runtime.backends.local import trainer

        return getattr(trainer, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
