"""TextWorld games (and ALFWorld's) as an `environment` adapter.

`environment: {adapter: textworld, config: {folder: ..., admissible_commands: true}}`
plays the game a sample names (`z8`, `game_file` or `gamefile`: a path,
relative to `folder`) with the `textworld` package. Each observation is the
game's text, followed by the admissible commands when asked for. Facts for
expressions (`env.NAME`): `score`, `score_delta`, `max_score`, `won`, `lost`,
`done`, `moves`, `observation`, `admissible_commands`.

ALFWorld games (`*.tw-pddl`, or `adapter: alfworld`) go through the same
class: they are TextWorld PDDL games, played with `textworld.gym`, TextWorld's
PDDL engine (fast-downward) and the `alfworld` package's wrappers
(`AlfredDemangler`: "mug 1" for ALFWorld's mangled object names; `AlfredInfos`).
The `alfworld` extra installs them (`make venv` does); ALFWorld's games
themselves come with ALFWorld's data (`alfworld-download`).

The walkthrough oracle (`oracle: {walkthrough: true}`) replays the sample's
`walkthrough` field, else the one stored in the game file's metadata.
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentspec.stdlib.adapters import EnvironmentAdapter, register_adapter
from agentspec.stdlib.data import resolve_path

GAME_KEYS = ("z8", "game_file", "gamefile", "game")
MAX_COMMAND = 120
_ART = re.compile(r"^[\s$\\|/_<>-]*$")


def clean(text: str) -> str:
    """Game text without the banner art, the `>` prompt line (with its status
    bar) and runs of blank lines."""
    kept = []
    for line in text.splitlines():
        line = line.rstrip()
        if line.strip() and (_ART.match(line) or "$$" in line or line.startswith(">")):
            continue
        kept.append(line)
    out = re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip()
    return out.removesuffix(">").strip()


def sanitize(command: str, limit: int = MAX_COMMAND) -> str:
    """A command the interpreter accepts: printable ASCII on one line, at most
    `limit` characters (the Z-machine crashes on some other input)."""
    text = "".join(ch if " " <= ch <= "~" else " " for ch in command)
    return " ".join(text.split())[:limit].strip()


class TextWorldAdapter(EnvironmentAdapter):
    """One game at a time: `reset(sample)` starts the sample's game."""

    def __init__(
        self,
        folder: str = "${AGENTSPEC_DATA}/textworld",
        admissible_commands: bool = False,
        alfworld: bool = False,
        max_episode_steps: int = 200,
    ):
        self.folder = folder
        self.show_admissible = admissible_commands
        self.alfworld = alfworld
        self.max_episode_steps = max_episode_steps
        self.env: Any = None
        self.gym = False
        self.info: dict[str, Any] = {}

    # -------------------------------------------------------------- games

    def game_path(self, sample: Mapping[str, Any]) -> Path:
        for key in GAME_KEYS:
            if sample.get(key):
                path = Path(str(sample[key]))
                if not path.is_absolute() and "$" not in str(path):
                    path = resolve_path(self.folder) / path
                return resolve_path(str(path))
        raise KeyError(f"a TextWorld sample needs one of the fields {', '.join(GAME_KEYS)}")

    def walkthrough(self, sample: Mapping[str, Any]) -> list[str]:
        """The sample's `walkthrough`, else the game file's (TextWorld `.json`
        metadata, or an ALFWorld `.tw-pddl` file's `walkthrough`)."""
        if sample.get("walkthrough"):
            return [str(c) for c in sample["walkthrough"]]
        path = self.game_path(sample)
        for candidate in (path.with_suffix(".json"), path):
            if candidate.suffix in (".json", ".tw-pddl") and candidate.is_file():
                data = json.loads(candidate.read_text(encoding="utf-8"))
                steps = data.get("walkthrough") or data.get("metadata", {}).get("walkthrough")
                if steps:
                    return [str(c) for c in steps]
        raise NotImplementedError(f"no walkthrough for {path.name}")

    # -------------------------------------------------------------- playing

    def _start(self, path: Path) -> tuple[str, dict[str, Any]]:
        import textworld

        infos = textworld.EnvInfos(
            admissible_commands=True, won=True, lost=True, score=True, max_score=True, moves=True
        )
        with warnings.catch_warnings():
            # jericho: "not fully supported ... score detection disabled" — TextWorld
            # reads scores from the game itself, so this does not apply.
            warnings.filterwarnings("ignore", message=".*not fully supported.*")
            if self.alfworld or path.suffix == ".tw-pddl":
                return self._start_alfworld(path, infos)
            self.env = textworld.start(str(path), request_infos=infos)
            state = self.env.reset()
        self.gym = False
        return state.feedback, dict(state)

    def _start_alfworld(self, path: Path, infos: Any) -> tuple[str, dict[str, Any]]:
        try:
            import fast_downward  # noqa: F401 (TextWorld's PDDL engine: `textworld[pddl]`)
            from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredInfos
        except ImportError:
            raise RuntimeError(
                "ALFWorld games need the `alfworld` package and TextWorld's PDDL engine"
                " (pip install 'agentspec-rl[alfworld]'; docs/recipes/alfworld.md)"
            ) from None
        import textworld.gym

        infos.extras = ["gamefile"]
        env_id = textworld.gym.register_game(
            str(path),
            infos,
            max_episode_steps=self.max_episode_steps,
            wrappers=[AlfredDemangler(), AlfredInfos],
        )
        self.env = textworld.gym.make(env_id)
        self.gym = True
        observation, facts = self.env.reset()
        return observation, dict(facts)

    def _update(self, text: str, facts: Mapping[str, Any], done: bool, command: str) -> str:
        before = float(self.info.get("score", 0) or 0)
        score = float(facts.get("score", 0) or 0)
        won, lost = bool(facts.get("won")), bool(facts.get("lost"))
        observation = clean(text)
        commands = [str(c) for c in facts.get("admissible_commands") or []]
        self.info = {
            "score": score,
            "score_delta": score - before,
            "max_score": facts.get("max_score"),
            "won": won,
            "lost": lost,
            "done": bool(done or won or lost),
            "moves": facts.get("moves"),
            "observation": observation,
            "admissible_commands": commands,
            "last_command": command,
        }
        if self.show_admissible and commands and not self.info["done"]:
            return f"{observation}\n\nAdmissible commands: {', '.join(commands)}"
        return observation

    async def reset(self, sample: Mapping[str, Any]) -> str:
        await self.close()
        self.info = {}
        text, facts = self._start(self.game_path(sample))
        return self._update(text, facts, False, "")

    async def step(self, command: str) -> str:
        if self.env is None:
            raise RuntimeError("step() before reset()")
        command = sanitize(command)
        if self.gym:
            text, _, done, facts = self.env.step(command)
        else:
            state, _, done = self.env.step(command)
            text, facts = state.feedback, dict(state)
        return self._update(text, facts, done, command)

    async def close(self) -> None:
        if self.env is not None:
            self.env.close()
            self.env = None


@register_adapter("textworld")
def textworld_adapter(name: str = "textworld", **config: Any) -> TextWorldAdapter:
    """`adapter: textworld`. Accepts `folder`, `admissible_commands`,
    `max_episode_steps` (and ignores `games`, the sample list, which `data` names)."""
    config.pop("games", None)
    return TextWorldAdapter(**config)


@register_adapter("alfworld")
def alfworld_adapter(name: str = "alfworld", **config: Any) -> TextWorldAdapter:
    """`adapter: alfworld`: ALFWorld's PDDL games through the same adapter."""
    config.pop("games", None)
    return TextWorldAdapter(alfworld=True, **config)
