"""The peak-RSS measurement of benchmarks/memory.py, on commands of known size."""

from __future__ import annotations

import importlib.util
import sys
import tracemalloc
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "memory.py"
spec = importlib.util.spec_from_file_location("memory_benchmark", SCRIPT)
assert spec is not None and spec.loader is not None
memory = importlib.util.module_from_spec(spec)
spec.loader.exec_module(memory)


def allocating(mib: int) -> list[str]:
    """A Python child that holds `mib` MiB of touched memory for a moment."""
    return [
        sys.executable,
        "-c",
        f"b = bytearray({mib} * 1024 * 1024); b[::4096] = b'x' * len(b[::4096])",
    ]


def test_peak_of_a_child_covers_what_it_allocated() -> None:
    assert memory.peak_rss(allocating(300))["peak_rss_mib"] >= 300


def test_each_measurement_starts_afresh() -> None:
    """RUSAGE_CHILDREN keeps a process's largest child; the intermediate process
    keeps a big earlier command from showing up in a later, small one."""
    big = memory.peak_rss(allocating(300))["peak_rss_mib"]
    small = memory.peak_rss(allocating(10))["peak_rss_mib"]
    assert small < big - 200


def test_trajectories_held_are_measured_and_freed() -> None:
    """The `held` row: memory kept by played trajectories, counted from what
    dropping them frees (so it is theirs, not caches')."""
    held = memory.held_by_trajectories(memory.LONG_SPEC, 4)
    assert held["steps"] >= 4 * 2
    assert held["step_tokens"] > 0
    assert 0 < held["held_mib"] < 50
    assert not tracemalloc.is_tracing()  # left on, it slows the rest of the process
