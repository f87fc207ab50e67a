"""The recipe library pieces on their own: metrics, the TextWorld adapter,
paper search, and the oracle kinds `agentspec run` plays."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path
from types import SimpleNamespace

import pytest

from agentspec.runtime.spec.run import PolicyError, episode_script
from agentspec.stdlib import papers
from agentspec.stdlib.adapters import make_adapter
from agentspec.stdlib.library import lookup
from agentspec.stdlib.metrics import f1_at_all, numeric_match, recall
from agentspec.stdlib.textworld import TextWorldAdapter, clean, sanitize


def test_numeric_match_reads_gsm8k_answers() -> None:
    assert numeric_match("1,234", "She earns $1234 in total.\n#### 1,234") == 1.0
    assert numeric_match("18.0", "#### 18") == 1.0
    assert numeric_match("17", "#### 18") == 0.0
    assert numeric_match(None, "#### 18") == 0.0
    assert numeric_match("-3", "#### -3") == 1.0


def test_set_metrics() -> None:
    assert f1_at_all(["a", "b"], ["a", "b"]) == 1.0
    # precision 1/2, recall 1/3 → F1 = 2·(1/2)(1/3)/(1/2+1/3) = 0.4
    assert f1_at_all(["a", "x"], ["a", "b", "c"]) == pytest.approx(0.4)
    assert recall(["a", "x"], ["a", "b"]) == 0.5 and recall([], []) == 1.0


def test_library_functions_register_on_lookup() -> None:
    for name in ("bm25", "numeric_match", "f1_at_all", "webshop_reward", "paper_search"):
        assert lookup(name) is not None
    assert lookup("no_such_function") is None


def test_graded_ndcg_by_hand() -> None:
    grades = {"a": 3, "b": 1, "c": 0}
    # ideal: 7/log2(2) + 1/log2(3); ranked b, a: 1/1 + 7/log2(3)
    ideal = 7 + 1 / math.log2(3)
    assert papers.graded_dcg(["b", "a"], grades) == pytest.approx((1 + 7 / math.log2(3)) / ideal)
    assert papers.graded_dcg(["a", "b"], grades) == pytest.approx(1.0)


def test_paper_tools(recipe_environment: Path) -> None:
    search = lookup("paper_search")
    similar = lookup("paper_similar")
    assert search is not None and similar is not None
    text = search(k=3)("Sentiment Analysis Using Subjectivity Summarization Based on Minimum Cuts")
    assert (
        text.splitlines()[0].startswith("[388] A Sentimental Education")
        and len(text.splitlines()) == 3
    )
    neighbours = similar(k=5)("388")
    assert len(neighbours.splitlines()) == 5 and "[388]" not in neighbours
    assert similar()("nope").startswith("No paper")


def test_text_cleanup_and_command_sanitising() -> None:
    assert (
        clean("  $$$$ \\ $$\n\nYou see a fridge.\n\n\n\n>  -= Kitchen =-0/3\n")
        == "You see a fridge."
    )
    assert sanitize("take\x00 apple\nfrom  fridge") == "take apple from fridge"
    assert len(sanitize("x" * 500)) == 120


def test_textworld_adapter_plays_a_game(recipe_environment: Path) -> None:
    adapter = make_adapter(
        "textworld", {"folder": str(recipe_environment / "textworld"), "admissible_commands": True}
    )
    assert isinstance(adapter, TextWorldAdapter)
    sample = {"z8": "cooking_01_r1_t1_g1.z8"}
    # the walkthrough comes from the game's own metadata when the sample has none
    walkthrough = adapter.walkthrough(sample)
    assert walkthrough == [
        "inventory",
        "examine cookbook",
        "take block of cheese from fridge",
        "prepare meal",
        "eat meal",
    ]

    async def play() -> list[dict[str, object]]:
        first = await adapter.reset(sample)
        assert "Admissible commands:" in first and "$$" not in first
        facts = []
        for command in walkthrough:
            await adapter.step(command)
            facts.append(dict(adapter.info))
        await adapter.close()
        return facts

    facts = asyncio.run(play())
    assert facts[2]["score_delta"] == 1.0 and not facts[2]["done"]
    assert facts[-1]["won"] is True and facts[-1]["done"] is True and facts[-1]["score"] == 3.0


def test_alfworld_games_need_the_alfworld_package(recipe_environment: Path, tmp_path: Path) -> None:
    import textworld  # noqa: F401 (the recipes extra: a missing install fails)

    game = tmp_path / "game.tw-pddl"
    game.write_text('{"walkthrough": ["go to desk 1", "take pen 1 from desk 1"]}')
    adapter = make_adapter("alfworld", {"folder": str(tmp_path)})
    assert adapter.walkthrough({"gamefile": "game.tw-pddl"}) == [
        "go to desk 1",
        "take pen 1 from desk 1",
    ]
    try:
        import alfworld  # noqa: F401
    except ImportError:
        with pytest.raises(RuntimeError, match="alfworld"):
            asyncio.run(adapter.reset({"gamefile": "game.tw-pddl"}))


def test_oracle_kinds_of_episode_script() -> None:
    hooked = SimpleNamespace(ORACLE_HOOK="agentspec.stdlib.webshop:oracle")
    script = episode_script(hooked, "oracle")  # type: ignore[arg-type]
    assert script is not None
    with pytest.raises(PolicyError, match="cannot load the oracle hook"):
        episode_script(SimpleNamespace(ORACLE_HOOK="agentspec.nope:oracle"), "oracle")  # type: ignore[arg-type]
    with pytest.raises(PolicyError, match="no `oracle`"):
        episode_script(SimpleNamespace(), "oracle")  # type: ignore[arg-type]
    bad = SimpleNamespace(ORACLE_HOOK="agentspec.stdlib.metrics:normalize_answer")  # returns a str
    with pytest.raises(PolicyError, match="must return a list"):
        episode_script(bad, "oracle")({"q": "x"})  # type: ignore[arg-type,misc]


def test_the_alfworld_path_plays_through_textworld_gym(
    recipe_environment: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ALFWorld's games run through `textworld.gym` with ALFWorld's wrappers; with
    stand-in (identity) wrappers the same code path plays a TextWorld game."""
    import sys
    import types

    fake = types.ModuleType("alfworld.agents.environment.alfred_tw_env")
    fake.AlfredDemangler = lambda: lambda env: env  # type: ignore[attr-defined]
    fake.AlfredInfos = lambda env: env  # type: ignore[attr-defined]
    for name in ("alfworld", "alfworld.agents", "alfworld.agents.environment"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, fake.__name__, fake)
    adapter = make_adapter("alfworld", {"folder": str(recipe_environment / "textworld")})
    sample = {"z8": "custom_03_w4_o8_q3.z8"}

    async def play() -> dict[str, object]:
        first = await adapter.reset(sample)
        assert first and adapter.gym  # type: ignore[attr-defined]
        for command in adapter.walkthrough(sample):
            await adapter.step(command)
        await adapter.close()
        return dict(adapter.info)

    facts = asyncio.run(play())
    assert facts["won"] is True and facts["done"] is True
