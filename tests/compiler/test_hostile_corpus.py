"""Hostile specs: `agentspec validate` answers each with located diagnostics,
within 512 MB, and never with a traceback.

tests/specs/hostile/ holds one spec per case of issue 13 (each starts with
`# expect: CODE`); worst_cases.py there generates the ones up to 1 MB. Each
group is validated by one real `agentspec validate` process under an address
space limit of 512 MB, so the limit holds for all the inputs together.
"""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
from pathlib import Path

import pytest

HOSTILE = Path(__file__).resolve().parents[1] / "specs" / "hostile"
sys.path.insert(0, str(HOSTILE))
from worst_cases import worst_cases  # noqa: E402

MEMORY_LIMIT = 512 * 1024 * 1024
LOCATED = re.compile(
    r"^(?P<file>.+?):(?P<line>\d+):(?P<column>\d+): (?:error|warning)\[(?P<code>[EW]\d{3})\]"
)


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def validate(paths: list[Path]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentspec.cli", "validate", *map(str, paths)],
        capture_output=True,
        text=True,
        preexec_fn=_limit_memory,
        timeout=300,
    )


def expected_code(path: Path) -> str:
    first = path.read_text(encoding="utf-8").split("\n", 1)[0]
    assert first.startswith("# expect: "), f"{path.name} must start with '# expect: CODE'"
    return first.removeprefix("# expect: ").split()[0]


def codes_by_file(output: str) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for line in output.splitlines():
        match = LOCATED.match(line)
        if match:
            found.setdefault(match["file"], set()).add(match["code"])
    return found


def check_group(expected: dict[Path, str]) -> None:
    result = validate(sorted(expected))
    output = result.stdout + result.stderr
    assert "Traceback" not in output and "MemoryError" not in output, output[-3000:]
    assert result.returncode in (0, 1), output[-3000:]
    found = codes_by_file(output)
    for path, code in expected.items():
        codes = found.get(str(path), set())
        if code == "valid":
            assert not any(c.startswith("E") for c in codes), (path.name, codes)
        else:
            assert code in codes, f"{path.name}: expected {code}, got {sorted(codes)}"
    # Every diagnostic line is located: no "error[...]" without file:line:col.
    for line in output.splitlines():
        if "error[" in line:
            assert LOCATED.match(line), line


def test_corpus_covers_every_case_of_the_issue() -> None:
    names = {p.stem for p in HOSTILE.glob("*.yaml")}
    assert len(names) >= 20
    assert {"yaml_alias_bomb", "yaml_recursive_alias", "expr_long_sum"} <= names


def test_hostile_corpus_is_rejected_with_located_errors() -> None:
    check_group({path: expected_code(path) for path in HOSTILE.glob("*.yaml")})


@pytest.mark.slow
def test_generated_worst_cases_up_to_a_megabyte(tmp_path: Path) -> None:
    expected = {}
    for name, (code, text) in worst_cases().items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        expected[path] = code
    check_group(expected)


def play_commands(path: Path) -> list[str]:
    """The commands a spec's `# play: …` line names (run, test, prompt), if any."""
    for line in path.read_text(encoding="utf-8").splitlines()[:3]:
        if line.startswith("# play: "):
            return line.removeprefix("# play: ").split()
    return []


PLAYED = sorted(p for p in HOSTILE.glob("*.yaml") if play_commands(p))


def test_specs_that_fail_at_run_time_are_played() -> None:
    assert len(PLAYED) >= 6


def test_hostile_specs_play_without_a_traceback(tmp_path: Path) -> None:
    """`agentspec test` on every hostile spec, and `run` and `prompt` on those
    that fail only when they run (issue 26): each failure is an error naming
    the spec's key and line, or an episode that ends with it; never a traceback."""
    env = {**os.environ, "AGENTSPEC_CACHE": str(tmp_path / "cache")}
    everything = sorted(HOSTILE.glob("*.yaml"))  # the invalid ones must fail cleanly too
    commands = [["test", *map(str, everything)]]
    for path in PLAYED:
        if "run" in play_commands(path):
            commands.append(["run", str(path), "-n", "2", "--out", str(tmp_path / path.stem)])
        if "prompt" in play_commands(path):
            commands.append(["prompt", str(path), "--sample", "1"])
    for command in commands:
        result = subprocess.run(
            [sys.executable, "-m", "agentspec.cli", *command],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
        output = result.stdout + result.stderr
        assert "Traceback" not in output, (command[:2], output[-3000:])
        assert result.returncode in (0, 1, 2), (command[:2], output[-3000:])
