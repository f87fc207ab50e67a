"""The local backend: train and evaluate on this machine with torch (CPU or one GPU)."""

from agentspec.runtime.backends.local.config import ConfigError, parse_overrides, resolve_config
from agentspec.runtime.backends.local.trainer import TrainingInterrupted, train

__all__ = ["ConfigError", "TrainingInterrupted", "parse_overrides", "resolve_config", "train"]
