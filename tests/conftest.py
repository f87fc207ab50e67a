"""Shared test settings."""

from __future__ import annotations

import gc
import os
import sys
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

# Property tests are seeded: the same examples on every run and machine, so a red
# CI run reproduces here. `HYPOTHESIS_PROFILE=explore` draws fresh examples.
# No deadline: a test worker paused by the others on two cores is not a failure.
settings.register_profile("seeded", derandomize=True, database=None, print_blob=True, deadline=None)
settings.register_profile("explore", max_examples=500, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "seeded"))

ROOT = Path(__file__).resolve().parent.parent

# One OpenMP thread per test process, inherited by every subprocess a test starts (CLI
# runs, Ray workers). `make test` runs three workers on two cores; torch's default of one
# thread per core makes each worker's threads spin against the others': behaviour
# cloning of a tiny model took 2 s a step beside a busy core with 2 threads, 0.08 s with 1.
# Tests that are about threads set their own (a spec's `training.torch_threads`).
os.environ["OMP_NUM_THREADS"] = "1"
if "torch" in sys.modules:  # a plugin imported it before this file: tell it too
    sys.modules["torch"].set_num_threads(1)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="Rewrite golden files (expected diagnostics, generated code) from the current output.",
    )


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Slow tests first (stable otherwise): the workers of `make test` start the long
    end-to-end runs early and fill the end with short tests, instead of one worker
    finishing a long run alone while the others wait."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(scope="module", autouse=True)
def _frozen_heap() -> None:
    """Each module starts with the objects of the modules before it frozen out of the
    garbage collector's sight. A worker that has run the verl and torch tests holds
    millions of long-lived objects, and every full collection walks them all: the
    hostile-YAML fuzz test, which makes many short-lived deep structures, took 68 s in
    the suite against 7 s alone. Garbage is collected first, so only what is still
    alive is frozen (a later module's collection frees what this one left)."""
    gc.collect()
    gc.freeze()


@pytest.fixture(scope="module", autouse=True)
def _no_tracing_left_on() -> Iterator[None]:
    """A module that leaves allocation tracing on slows every later module of its worker
    several times over (benchmarks/memory.py once did: the fuzz tests took 48 s, not 5)."""
    tracing = tracemalloc.is_tracing()
    yield
    assert tracemalloc.is_tracing() == tracing, "this module left tracemalloc tracing"
