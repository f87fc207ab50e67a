"""A generator of the user's code: its parameters checked by validate against its
signature, and what fails in its code a located one-line error in every command,
never a traceback."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentspec.cli import app

runner = CliRunner()


@pytest.fixture(autouse=True)
def fresh_module() -> Iterator[None]:
    """Each test imports the generators from its own folder (a module of that name
    another test imported first would be the one used)."""
    sys.modules.pop("kilogram_generators", None)
    yield
    sys.modules.pop("kilogram_generators", None)


GENERATORS = """\
def samples(*, split="train", count=200):
    for i in range(count):
        yield {"id": f"{split}-{i}", "amount": i, "answer": i * 1000}


def no_split(count=3):
    return [{"id": str(i), "amount": i, "answer": i * 1000} for i in range(count)]


def broken(*, split="train"):
    yield {"id": "a", "amount": 1, "answer": 1000}
    raise RuntimeError("the unit table is missing")


def numbers(*, split="train"):
    yield from range(3)
"""

SPEC = """\
agentspec: 1
name: kilograms
description: Kilograms to grams.
data:
  source: generator:kilogram_generators:{generator}
  params: {params}
  fields: {{id: str, amount: int, answer: int}}
prompt:
  user: "Convert {{{{ sample.amount }}}} kg to grams."
episode: {{max_steps: 1}}
rewards:
  correct: {{on: final, value: "1.0 if number(action.text) == sample.answer else 0.0"}}
oracle:
  - "{{{{ sample.answer }}}}"
"""


def _spec(tmp_path: Path, generator: str, params: str = "{}") -> Path:
    (tmp_path / "kilogram_generators.py").write_text(GENERATORS)
    spec = tmp_path / "kilograms.yaml"
    spec.write_text(SPEC.format(generator=generator, params=params))
    return spec


def test_validate_names_a_parameter_the_generator_does_not_take(tmp_path: Path) -> None:
    result = runner.invoke(app, ["validate", str(_spec(tmp_path, "samples", "{cnt: 300}"))])
    assert result.exit_code == 1
    assert (
        "kilograms.yaml:6:12: error[E906]: generator 'kilogram_generators:samples' has no parameter 'cnt'"
        in result.output
    )
    assert "did you mean 'count'?" in result.output


def test_validate_says_a_generator_must_take_split(tmp_path: Path) -> None:
    result = runner.invoke(app, ["validate", str(_spec(tmp_path, "no_split"))])
    assert result.exit_code == 1
    assert "error[E906]" in result.output and "unexpected keyword argument 'split'" in result.output
    assert "its signature is no_split(count=3)" in result.output


def test_a_good_generator_validates_and_runs(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "samples", "{count: 5}")
    assert runner.invoke(app, ["validate", str(spec)]).exit_code == 0
    result = runner.invoke(
        app, ["run", str(spec), "--policy", "oracle", "-n", "2", "--out", str(tmp_path / "out")]
    )
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    ("generator", "message"),
    [
        (
            "broken",
            "the generator 'kilogram_generators:broken' failed: RuntimeError: the unit table is"
            " missing",
        ),
        (
            "numbers",
            "row 1 of generator:kilogram_generators:numbers is int, not a mapping of field names",
        ),
    ],
)
@pytest.mark.parametrize(
    "command",
    [["run", "--policy", "oracle", "-n", "2"], ["prompt"], ["explore", "--seconds", "2"], ["test"]],
)
def test_a_failing_generator_is_one_error_line_in_every_command(
    tmp_path: Path, generator: str, message: str, command: list[str]
) -> None:
    spec = _spec(tmp_path, generator)
    result = runner.invoke(app, [command[0], str(spec), *command[1:]])
    assert result.exit_code != 0
    assert message in result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
