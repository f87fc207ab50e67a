"""Settings of the verl tests' Ray clusters."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _ray_workers_at_normal_priority(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ray starts its workers at nice 15 (`RAY_worker_niceness`), which a cluster machine
    with idle cores never notices; beside the other pytest workers of `make test` on two
    cores, a training run's five worker processes got only what those left and ran 3×
    longer. The raylet reads the setting from the environment the test starts it in."""
    monkeypatch.setenv("RAY_worker_niceness", "0")
