"""The verl backend is pinned to verl 0.9.1 and says so loudly."""

from __future__ import annotations

from importlib import metadata

import pytest

from agentspec.runtime.backends import verl as backend


def test_installed_verl_is_the_pinned_version() -> None:
    # an upgrade must fail here first: the backend relies on verl 0.9.1 internals
    # (the rollout-class table, the process-group backend string, agent-loop post-processing)
    assert metadata.version("verl") == backend.VERL_VERSION == "0.9.1"
    assert backend.check_verl_version() == "0.9.1"


def test_another_version_is_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(backend.metadata, "version", lambda name: "0.9.2")
    with pytest.raises(backend.VerlVersionError, match=r"verl 0\.9\.2 .* pinned to verl==0\.9\.1"):
        backend.check_verl_version()


def test_missing_verl_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(backend.metadata, "version", missing)
    with pytest.raises(backend.VerlVersionError, match="not installed"):
        backend.check_verl_version()
