"""The resolved training configuration: the spec's `training` section plus `--set` overrides.

Overrides are `key=value` pairs; values are read as YAML scalars the way a spec reads them (`0.5`,
`1e-4`, `true`, `grpo`). The result is validated by the same pydantic model as the
spec, so an unknown key or a bad value is an error naming it — never a
silently ignored setting.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

import yaml
from pydantic import ValidationError

from agentspec.spec.model import TrainingSpec
from agentspec.spec.yaml_errors import LimitExceeded
from agentspec.spec.yaml_loader import read_scalar


class ConfigError(ValueError):
    """Bad `--set` overrides: every problem, one per line."""


def parse_overrides(pairs: Iterable[str]) -> dict[str, Any]:
    """`["lr=0.1", "algorithm=grpo"]` → `{"lr": 0.1, "algorithm": "grpo"}`."""
    out: dict[str, Any] = {}
    problems = []
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        key = key.strip().removeprefix("training.")
        if not sep or not key:
            problems.append(f"--set {pair!r}: expected KEY=VALUE")
            continue
        try:
            out[key] = read_scalar(raw) if raw.strip() else ""
        except (yaml.YAMLError, LimitExceeded):
            out[key] = raw
    if problems:
        raise ConfigError("\n".join(problems))
    return out


def resolve_config(base: TrainingSpec, overrides: dict[str, Any]) -> TrainingSpec:
    """`base` with `overrides` applied and validated."""
    known = list(TrainingSpec.model_fields)
    problems = []
    for key in overrides:
        if key not in known:
            close = difflib.get_close_matches(key, known, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            problems.append(f"unknown training setting '{key}'{hint}")
    if problems:
        raise ConfigError("\n".join(problems))
    try:
        return TrainingSpec.model_validate({**base.model_dump(), **overrides})
    except ValidationError as exc:
        lines = []
        for error in exc.errors():
            where = ".".join(str(p) for p in error["loc"])
            line = f"training.{where}: {error['msg']} (got {error.get('input')!r})"
            expected = str(error.get("ctx", {}).get("expected", ""))
            if error["type"] == "literal_error" and isinstance(error.get("input"), str):
                choices = [c.strip(" '") for c in expected.replace(" or ", ", ").split(",")]
                close = difflib.get_close_matches(error["input"], choices, n=1)
                line += f"; did you mean {close[0]!r}?" if close else ""
            lines.append(line)
        raise ConfigError("\n".join(lines)) from None
