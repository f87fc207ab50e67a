"""What every timing script prints about the machine: its load average at the
start and the end of the measurement. A timing taken beside other work measures
the machine, not the code; compare runs only at similar (low) loads."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def load_average() -> str:
    """The 1, 5 and 15 minute load averages."""
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def with_load_average(run: Callable[[], T]) -> T:
    """``run()``, with the load average printed before and after."""
    print(f"load average at start: {load_average()}", flush=True)
    try:
        return run()
    finally:
        print(f"load average at end: {load_average()}", flush=True)
