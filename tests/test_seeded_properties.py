"""Property tests draw the same examples on every run (tests/conftest.py)."""

from __future__ import annotations

import os

import pytest
from hypothesis import settings


@pytest.mark.skipif("HYPOTHESIS_PROFILE" in os.environ, reason="another profile was asked for")
def test_hypothesis_runs_seeded_by_default() -> None:
    assert settings.default.derandomize
    assert settings.default.database is None  # no examples carried over from an earlier run
