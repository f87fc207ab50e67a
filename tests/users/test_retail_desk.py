"""specs/retail_desk.yaml: the recipe of a desk with a rule-based user.

Its data are generated here (`generator:retail_desk`); the oracle is the
agent's side of a correct dialogue; explore's dialogue strategies run on it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from agentspec.runtime.commands.explore.user_strategies import CLOSING, user_variants
from agentspec.stdlib.desk import retail_desk

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "specs" / "retail_desk.yaml"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentspec.cli", *args], capture_output=True, text=True, timeout=600
    )


def test_generated_requests_are_private_to_the_user() -> None:
    samples = [s for _, s in zip(range(50), retail_desk(split="train"), strict=False)]
    assert {s["kind"] for s in samples} == {"return", "cancel"}
    for s in samples:
        order = s["db"]["orders"][s["order"]]
        assert order["customer"] == s["email"]
        assert s["db"] != s["expected_db"]
        assert s["refund"] == (
            order["items"][s["item"]] if s["kind"] == "return" else sum(order["items"].values())
        )
    assert next(retail_desk(split="test"))["email"] != samples[0]["email"] or True


def test_validate_strict_and_the_spec_tests_pass() -> None:
    assert _cli("validate", "--strict", str(SPEC)).returncode == 0
    result = _cli("test", str(SPEC))
    assert result.returncode == 0, result.stdout[-2000:]
    assert "3 passed" in result.stdout


def _success(policy: str) -> float:
    result = _cli("eval", str(SPEC), "--policy", policy, "-n", "100")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    line = next(x for x in result.stdout.splitlines() if "success rate" in x)
    return float(line.split("│")[2])


def test_oracle_succeeds_and_random_does_not_on_100_episodes() -> None:
    assert _success("oracle") == 1.0
    assert _success("random") <= 0.1


def test_dialogue_strategies() -> None:
    turns = [
        "Your email?",
        "<tool_call>a</tool_call>",
        "Which order?",
        "<tool_call>b</tool_call>",
        "Done.",
    ]
    variants = dict(user_variants(turns, lambda t: t.startswith("<tool_call>")))
    assert variants["an agent that never asks the user"] == [turns[1], turns[3], CLOSING]
    assert variants["an agent that promises without acting"] == [turns[0], turns[2], turns[4]]
    assert variants["an agent that stops talking once it has acted"] == turns[:4]


def test_explore_finds_nothing_on_the_recipe_and_a_user_paid_for_promises(tmp_path: Path) -> None:
    result = _cli("explore", str(SPEC), "-f", "json")
    assert json.loads(result.stdout)["findings"] == [], result.stdout[-2000:]
    # a user who thanks any agent that says "refunded", and a reward that reads only
    # that the user ended: an agent that promises without acting is paid
    loose = SPEC.read_text(encoding="utf-8")
    loose = loose.replace(
        "      when: state.db == sample.expected_db\n",
        "      when: '\"refunded\" in lower(action.text)'\n",
    ).replace(
        "1.0 if user.ended and state.db == sample.expected_db else 0.0",
        "1.0 if user.ended else 0.0",
    )
    path = tmp_path / "loose_desk.yaml"
    path.write_text(loose, encoding="utf-8")
    result = _cli("explore", str(path), "-f", "json")
    codes = {f["code"] for f in json.loads(result.stdout)["findings"]}
    assert "X102" in codes, result.stdout[-2000:]
