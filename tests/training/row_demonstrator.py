"""The demonstrator of tests/training/switch_row.yaml's warm start: each sample's
`demo` turns (up three times in four, whatever the switch), every one cloned."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def replay(sample: Mapping[str, Any]) -> list[str]:
    return [f"set[{position}]" for position in sample["demo"]]
