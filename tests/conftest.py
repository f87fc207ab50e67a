"""Shared test settings."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# Property tests are seeded: the same examples on every run and machine, so a red
# CI run reproduces here. `HYPOTHESIS_PROFILE=explore` draws fresh examples.
settings.register_profile("seeded", derandomize=True, database=None, print_blob=True)
settings.register_profile("explore", max_examples=500, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "seeded"))

ROOT = Path(__file__).resolve().parent.parent


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
    """Slow tests first (stable otherwise): the two workers of `make test` start the long
    end-to-end runs early and fill the end with short tests, instead of one worker
    finishing a long run alone while the other waits."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
