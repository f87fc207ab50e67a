"""`agentspec compile --target trl`: TRL reads the spec's tools back exactly, and the
generated environment plays the spec's episode (TRL's own run: test_trl_grpo.py)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest
import transformers  # noqa: F401 (TRL reads tools with its get_json_schema; the train extra)
from typer.testing import CliRunner

from agentspec.cli import app
from agentspec.runtime.serve.spec import ServedSpec

from .helpers import ROOT


def generated(spec: str, tmp_path: Path) -> Any:
    result = CliRunner().invoke(
        app, ["compile", str(ROOT / "specs" / spec), "--target", "trl", "-o", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    name = Path(spec).stem
    module_spec = importlib.util.spec_from_file_location(f"{name}_trl", tmp_path / f"{name}_trl.py")
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_spec.name] = module
    module_spec.loader.exec_module(module)
    return module


def as_trl_says_it(schema: dict[str, Any]) -> dict[str, Any]:
    """The spec's schema as a Python signature can say it: `additionalProperties` has
    no spelling there, and every argument has a description (its name if the spec gave none)."""
    parameters = {k: v for k, v in schema["parameters"].items() if k != "additionalProperties"}
    parameters["properties"] = {
        name: {"description": name, **prop} for name, prop in parameters["properties"].items()
    }
    return {**schema, "parameters": parameters}


@pytest.mark.parametrize(
    "spec", ["calculator.yaml", "airline_service.yaml", "keys_and_doors.yaml", "gridworld.yaml"]
)
def test_trl_reads_every_tool_as_the_spec_declares_it(spec: str, tmp_path: Path) -> None:
    from transformers.utils import get_json_schema

    module = generated(spec, tmp_path)
    env_class = next(
        v for k, v in vars(module).items() if k.endswith("Env") and k != "AgentspecTRLEnv"
    )
    served = ServedSpec.load(ROOT / "specs" / spec)
    for tool in served.tool_schemas:
        read = get_json_schema(getattr(env_class, tool["function"]["name"]))["function"]
        read.pop("return", None)
        assert read == as_trl_says_it(tool["function"])


def test_enum_choices_are_written_as_json(tmp_path: Path) -> None:
    # newer transformers read `(choices: [...])` with json.loads: a Python repr
    # (['up', 'down']) failed get_json_schema for every spec with an enum argument
    import json
    import re

    module = generated("gridworld.yaml", tmp_path)
    doc = module.GridworldEnv.move.__doc__
    choices = re.search(r"\(choices: (\[.*?\])\)", doc)
    assert choices is not None, doc
    assert json.loads(choices.group(1)) == ["up", "down", "left", "right"]


def test_the_trl_environment_plays_the_episode_and_scores_the_final_answer(tmp_path: Path) -> None:
    module = generated("calculator.yaml", tmp_path)
    rows = module.dataset(split="test", limit=3)
    assert [m["role"] for m in rows[0]["prompt"]] == ["system", "user"]
    envs = [module.CalculatorEnv() for _ in rows]
    for env, row in zip(envs, rows, strict=True):
        assert env.reset(**row) is None
        assert env.calculator(row["expression"]) == str(row["answer"])
    with pytest.raises(ValueError, match="is a required property"):
        envs[0].calculator(None)
    answers = [rows[0]["answer"], rows[1]["answer"] + 1, rows[2]["answer"]]
    completions = [[{"role": "assistant", "content": f"<answer>{a}</answer>"}] for a in answers]
    correct, malformed = module.REWARD_FUNCS
    assert module.REWARD_WEIGHTS == [1.0, 1.0]
    assert correct(completions, envs) == [1.0, 0.0, 1.0]
    assert malformed(completions, envs) == [0.0, 0.0, 0.0]
    assert [env.end.termination for env in envs] == ["done"] * 3
    assert len(envs[0].end.trajectory.steps) == 3  # the call, the refused call, the answer


HOSTILE = r"""agentspec: 1
name: hostile_words
prompt: {user: hi}
tools:
  echo:
    description: "Read C:\\Users\\me\\notes.txt.\"\"\"\r__import__('pathlib').Path(MARK).touch()\r\"\"\""
    parameters:
      x: {type: string, description: "a\"\"\"; __import__('pathlib').Path(MARK).touch(); \"\"\"\u2028b"}
    returns: args.x
rewards: {r: {on: final, value: 1}}
"""


def test_descriptions_are_data_in_the_generated_module(tmp_path: Path) -> None:
    """A description that closes the docstring, breaks a line with \\r or holds a Windows
    path neither runs code nor breaks the module: TRL reads the words back as written."""
    from transformers.utils import get_json_schema

    mark = tmp_path / "ran"
    spec = tmp_path / "hostile_words.yaml"
    spec.write_text(HOSTILE.replace("MARK", repr(str(mark))))
    result = CliRunner().invoke(app, ["compile", str(spec), "--target", "trl", "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    module_spec = importlib.util.spec_from_file_location(
        "hostile_words_trl", tmp_path / "hostile_words_trl.py"
    )
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    read = get_json_schema(module.HostileWordsEnv.echo)["function"]
    served = ServedSpec.load(spec).tool_schemas[0]["function"]
    assert read["description"] == served["description"]
    assert read["parameters"]["properties"]["x"]["description"] == " ".join(
        served["parameters"]["properties"]["x"]["description"].splitlines()
    )
    module.HostileWordsEnv.echo.__doc__  # noqa: B018 (read, never run)
    assert not mark.exists()


def test_rows_through_arrow_start_the_true_sample(tmp_path: Path) -> None:
    """docs/trl.md's `Dataset.from_list(rows)`: Arrow merged the keys of dict fields
    across rows and filled the missing ones with None (airline_service's `expected_db`,
    on which success then compared a corrupted copy). Reset starts the spec's own sample."""
    from datasets import Dataset

    module = generated("airline_service.yaml", tmp_path)
    rows = module.dataset()
    truth = module.AirlineServiceEnv().spec.samples("train")
    assert all(isinstance(v, str | int | float | bool | list) for row in rows for v in row.values())
    for i, row in enumerate(Dataset.from_list(rows)):
        env = module.AirlineServiceEnv()
        env.reset(**row)
        assert env.session.session._open_env.sample == truth[i]


CONTINUE = """\
agentspec: 1
name: keeps_going
prompt: {user: "Say something."}
tools:
  noop: {description: Do nothing., parameters: {}}
episode: {max_steps: 6, tool_format: hermes, final_answer: continue, max_response_tokens: 32}
rewards:
  per_step: {on: step, value: "1.0"}
"""


def test_a_continue_answer_ends_the_rollout_unpadded(tmp_path: Path) -> None:
    """`final_answer: continue`: the answer does not end the episode, but TRL's rollout is
    over; the episode was padded with empty turns to max_steps, each paid `on: step`."""
    spec = tmp_path / "keeps_going.yaml"
    spec.write_text(CONTINUE)
    result = CliRunner().invoke(
        app, ["compile", str(spec), "--target", "trl", "-o", str(tmp_path / "out")]
    )
    assert result.exit_code == 0, result.output
    module_spec = importlib.util.spec_from_file_location(
        "keeps_going_trl", tmp_path / "out" / "keeps_going_trl.py"
    )
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    env = module.KeepsGoingEnv()
    env.reset()
    (per_step,) = module.REWARD_FUNCS
    completion = [{"role": "assistant", "content": "hello"}]
    assert per_step([completion], [env]) == [1.0]
    assert env.end.termination == "agent_stopped"
    assert len(env.end.trajectory.steps) == 1
