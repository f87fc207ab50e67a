"""The recipe library pieces on their own: metrics, the TextWorld adapter,
paper search, and the oracle kinds `agentspec run` plays."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path
from types import SimpleNamespace

import pytest

from agentspec.runtime.compiled.scripts import PolicyError, episode_script
from agentspec.stdlib import papers
from agentspec.stdlib.adapters import make_adapter
from agentspec.stdlib.library import lookup
from agentspec.stdlib.metrics import f1_at_all, numeric_match, recall
from agentspec.stdlib.textworld import TextWorldAdapter, clean, sanitize

from .recipe_helpers import run


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


def test_alfworld_games_need_the_alfworld_package(
    recipe_environment: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without ALFWorld installed (`None` in `sys.modules` makes its import fail,
    as a missing package does) an ALFWorld game is refused with the install
    command; the walkthrough is still read from the game file."""
    import sys

    game = tmp_path / "game.tw-pddl"
    game.write_text('{"walkthrough": ["go to desk 1", "take pen 1 from desk 1"]}')
    adapter = make_adapter("alfworld", {"folder": str(tmp_path)})
    assert adapter.walkthrough({"gamefile": "game.tw-pddl"}) == [
        "go to desk 1",
        "take pen 1 from desk 1",
    ]
    monkeypatch.setitem(sys.modules, "alfworld.agents.environment.alfred_tw_env", None)
    with pytest.raises(RuntimeError, match=r"agentspec-rl\[alfworld\]"):
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


# An ALFWorld game: a problem written for these tests (data/alfworld/), played
# against ALFWorld's own domain and grammar from the installed `alfworld` package.
ALFWORLD_PROBLEM = Path(__file__).parent / "data" / "alfworld" / "put_mug_in_cabinet.pddl"
MUG_WALKTHROUGH = [
    "go to countertop 1",
    "take mug 1 from countertop 1",
    "go to cabinet 1",
    "open cabinet 1",
    "move mug 1 to cabinet 1",
]


@pytest.fixture
def alfworld_game(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`game.tw-pddl` as `alfworld-generate` writes one: ALFWorld's domain
    (`alfred.pddl`) and grammar (`alfred.twl2`, its `UNKNOWN GOAL` filled in),
    the problem and its walkthrough."""
    # importing alfworld creates its data folder ($ALFWORLD_DATA, else ~/.cache/alfworld)
    monkeypatch.setenv("ALFWORLD_DATA", str(tmp_path / "alfworld-data"))
    from alfworld.info import ALFRED_PDDL_PATH, ALFRED_TWL2_PATH

    grammar = Path(ALFRED_TWL2_PATH).read_text(encoding="utf-8")
    game = {
        "pddl_domain": Path(ALFRED_PDDL_PATH).read_text(encoding="utf-8"),
        "grammar": grammar.replace("UNKNOWN GOAL", "put a mug in cabinet"),
        "pddl_problem": ALFWORLD_PROBLEM.read_text(encoding="utf-8"),
        "solvable": True,
        "walkthrough": MUG_WALKTHROUGH,
    }
    path = tmp_path / "games" / "put_mug_in_cabinet" / "game.tw-pddl"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(game), encoding="utf-8")
    return path


def test_an_alfworld_game_plays_with_alfworld_s_own_wrappers(
    recipe_environment: Path, alfworld_game: Path
) -> None:
    """`adapter: alfworld` plays the game with TextWorld's PDDL engine and
    ALFWorld's `AlfredDemangler` and `AlfredInfos`: objects read "mug 1" (the
    problem names them `Mug_bar_1_bar_0_bar_1`...), commands outside the game's
    actions do nothing, and the walkthrough wins."""
    folder = alfworld_game.parent.parent
    adapter = make_adapter("alfworld", {"folder": str(folder), "admissible_commands": True})
    assert isinstance(adapter, TextWorldAdapter)
    sample = {"gamefile": "put_mug_in_cabinet/game.tw-pddl"}
    assert adapter.walkthrough(sample) == MUG_WALKTHROUGH  # from the game file

    # AlfredInfos: the game state carries the game file's path
    _, state = adapter._start(adapter.game_path(sample))
    assert state["extra.gamefile"] == str(alfworld_game)

    async def play() -> list[dict[str, object]]:
        first = await adapter.reset(sample)
        assert first.startswith("-= Welcome to TextWorld, ALFRED! =-")
        assert "you see a cabinet 1, and a countertop 1." in first
        assert "Your task is to: put a mug in cabinet." in first
        assert adapter.info["admissible_commands"] == [
            "go to cabinet 1",
            "go to countertop 1",
            "help",
            "inventory",
            "look",
        ]
        assert "Admissible commands: go to cabinet 1, go to countertop 1" in first
        # the mug is out of reach from the middle of the room
        await adapter.step("take mug 1 from countertop 1")
        assert adapter.info["observation"] == "Nothing happens."
        facts = []
        for command in MUG_WALKTHROUGH:
            await adapter.step(command)
            facts.append(dict(adapter.info))
        await adapter.close()
        return facts

    facts = asyncio.run(play())
    text = " ".join(str(f["observation"]) for f in facts)
    assert "_bar_" not in text
    assert [f["observation"] for f in facts[:2]] == [
        "You arrive at countertop 1. On the countertop 1, you see a mug 1.",
        "You pick up the mug 1 from the countertop 1.",
    ]
    assert facts[2]["observation"] == "You arrive at cabinet 1. The cabinet 1 is closed."
    assert "move mug 1 to cabinet 1" in facts[3]["admissible_commands"]  # type: ignore[operator]
    assert not any(f["done"] for f in facts[:-1])
    assert facts[-1]["won"] is True and facts[-1]["done"] is True
    assert facts[-1]["score"] == 1.0 and facts[-1]["score_delta"] == 1.0
    assert facts[-1]["moves"] == 5  # the refused command was not a move


def test_a_spec_with_adapter_alfworld_wins_with_its_walkthrough(
    recipe_environment: Path, alfworld_game: Path, tmp_path: Path
) -> None:
    """The whole path: a spec with `adapter: alfworld`, a data file of game
    files, `agentspec run --policy oracle` (the walkthrough stored in the game)."""
    folder = alfworld_game.parent.parent
    (tmp_path / "games.jsonl").write_text(
        json.dumps({"gamefile": "put_mug_in_cabinet/game.tw-pddl"}) + "\n", encoding="utf-8"
    )
    spec = tmp_path / "alfworld_pddl.yaml"
    spec.write_text(
        SPEC_TEMPLATE.format(data=tmp_path / "games.jsonl", folder=folder), encoding="utf-8"
    )
    result = run(spec, "oracle", 1, tmp_path / "out")
    [trajectory] = result.trajectories
    assert trajectory["success"] is True
    assert [s["action_text"] for s in trajectory["steps"]] == MUG_WALKTHROUGH
    assert "you see a cabinet 1, and a countertop 1." in trajectory["steps"][0]["anchor"]
    assert result.component("win") == 1.0


SPEC_TEMPLATE = """\
agentspec: 1
name: alfworld_pddl
description: Put a mug in the cabinet.
data:
  source: jsonl:{data}
  fields: {{gamefile: str}}
prompt:
  system: Reply with one command per turn, chosen from the admissible commands.
  user: Your task starts now.
environment:
  adapter: alfworld
  config: {{folder: "{folder}", admissible_commands: true}}
  admissible_commands: true
episode:
  max_steps: 10
  done_when: env.done
  success: env.won == True
  anchor: env.observation
rewards:
  win: {{on: final, value: "1.0 if env.won else 0.0"}}
oracle: {{walkthrough: true}}
"""
