"""`training.warm_start_demonstrator`: behaviour cloning of a demonstrator other than
the oracle, every episode it plays (specs/panel.yaml's warm start: a demonstrator
of the lamps' rule, which never succeeds on the panel)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentspec.compiler.build import import_spec
from agentspec.runtime.backends.local import train
from agentspec.runtime.backends.local.config import ConfigError

ROOT = Path(__file__).resolve().parents[2]
PANEL = ROOT / "specs" / "panel.yaml"
TINY = {
    "iterations": 1,
    "warm_start": 2,
    "warm_start_samples": 4,
    "prompts_per_iteration": 2,
    "group_size": 2,
    "eval_samples": 2,
    "trace_samples": 0,
    "torch_threads": 1,
}


@pytest.fixture(autouse=True)
def private_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTSPEC_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))


def test_the_demonstrators_failed_episodes_are_cloned(tmp_path: Path) -> None:
    """The panel's demonstrator sets the backwards switches wrong on every sample (no
    episode succeeds), and all four of its episodes are cloned; the oracle's would be
    too, but they succeed: the demonstrator, not the oracle, is what was cloned."""
    run = train(PANEL, tmp_path / "run", TINY)
    first = json.loads((run / "metrics.jsonl").read_text().splitlines()[0])
    assert first["warm_start/episodes"] == 4.0
    config = (run / "config.yaml").read_text()
    assert "warm_start_demonstrator: agentspec.stdlib.panel:follow_the_lamps" in config


def test_without_it_the_oracle_is_cloned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentspec.runtime.backends.local import warm_start

    played: list[object] = []
    original = warm_start.oracle_episodes

    def spy(module, models, pool, script=None):  # type: ignore[no-untyped-def]
        played.append(script)
        return original(module, models, pool, script)

    monkeypatch.setattr(warm_start, "oracle_episodes", spy)
    train(PANEL, tmp_path / "oracle", {**TINY, "warm_start_demonstrator": None})
    train(PANEL, tmp_path / "demonstrator", TINY)
    assert played[0] is None and callable(played[1])


def test_a_demonstrator_that_cannot_be_loaded_stops_the_run_before_it_starts(
    tmp_path: Path,
) -> None:
    settings = {**TINY, "warm_start_demonstrator": "agentspec.stdlib.panel:no_such_rule"}
    with pytest.raises(ConfigError, match="cannot load the demonstrator"):
        train(PANEL, tmp_path / "run", settings)
    assert not (tmp_path / "run").exists()


def test_a_spec_with_a_demonstrator_and_no_oracle_is_valid(tmp_path: Path) -> None:
    """E211 (a warm start with nothing to clone) does not apply: the demonstrator is it."""
    text = PANEL.read_text()
    start, end = text.index("oracle:\n"), text.index("training:\n")
    spec = tmp_path / "panel.yaml"
    spec.write_text(
        text[:start] + text[end:].replace("tests:\n  oracle: {samples: 16}\n", "tests:\n")
    )
    module = import_spec(spec)
    assert module.TRAINING["warm_start_demonstrator"] == "agentspec.stdlib.panel:follow_the_lamps"
    spec.write_text(
        spec.read_text().replace(
            "  warm_start_demonstrator: agentspec.stdlib.panel:follow_the_lamps\n", ""
        )
    )
    from agentspec.core.diagnostics import SpecError

    with pytest.raises(SpecError, match="E211"):
        import_spec(spec)
