"""What a user gets for the mistakes a first session makes: an error naming the option or
the spec's line, never a traceback, and nothing written where the command failed."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentspec.cli import app

ROOT = Path(__file__).resolve().parents[2]
CALCULATOR = ROOT / "specs" / "calculator.yaml"
ECHO = ROOT / "tests" / "training" / "echo_word.yaml"
runner = CliRunner()

NO_DATA = """\
agentspec: 1
name: nodata
prompt: {user: "hi"}
tools:
  echo: {description: Echo., parameters: {t: {type: string}}, returns: args.t}
rewards:
  ok: {on: final, value: 1.0}
"""

THIRTY_ROWS = """\
agentspec: 1
name: heldout
data: {source: "jsonl:d.jsonl", fields: {q: str, a: int}}
prompt: {user: "Repeat {{ sample.q }}"}
rewards: {ok: {on: final, value: "1.0 if number(action.text) == sample.a else 0.0"}}
oracle: ["{{ sample.a }}"]
training: {eval_samples: 4}
"""


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTSPEC_CACHE", str(tmp_path / "cache"))


def invoke(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.output


@pytest.mark.parametrize(
    "command",
    [
        ["compile", "{spec}", "--output", "{file}"],
        ["run", "{spec}", "--out", "{file}", "-n", "1"],
        ["train", "{spec}", "--out", "{file}"],
        ["init", "foo", "--dir", "{file}"],
        ["schema", "--output", "{folder}"],
        ["view", "{folder}", "--output", "{folder}"],
    ],
)
def test_an_output_of_the_wrong_kind_is_named(tmp_path: Path, command: list[str]) -> None:
    spec = tmp_path / "calculator.yaml"
    shutil.copyfile(CALCULATOR, spec)
    before = spec.read_bytes()
    args = [a.format(spec=spec, file=spec, folder=tmp_path) for a in command]
    code, output = invoke(*args)
    assert code == 2
    assert "is a file; give a folder" in output or "is a folder; give the file" in output
    assert spec.read_bytes() == before


@pytest.mark.parametrize("link", ["dangling", "loop"])
def test_an_output_that_is_a_broken_link_is_named(tmp_path: Path, link: str) -> None:
    out = tmp_path / "out"
    out.symlink_to(tmp_path / "nowhere" if link == "dangling" else out)
    code, output = invoke("compile", str(CALCULATOR), "--output", str(out))
    assert code == 2
    assert "is a link that leads to nothing" in output


def test_validating_a_folder_skips_what_agentspec_wrote_there(tmp_path: Path) -> None:
    shutil.copyfile(CALCULATOR, tmp_path / "calculator.yaml")
    for target in ("python", "verl", "openenv"):
        code, output = invoke(
            "compile", str(CALCULATOR), "--target", target, "--output", str(tmp_path / target)
        )
        assert code == 0, output
    run = tmp_path / "runs" / "r1"
    (run / "checkpoints").mkdir(parents=True)
    (run / "config.yaml").write_text("spec: calculator.yaml\nseed: 0\n")
    hidden = tmp_path / ".venv" / "lib"
    hidden.mkdir(parents=True)
    (hidden / "package.yaml").write_text("not: a spec\n")
    code, output = invoke("validate", str(tmp_path))
    assert code == 0, output
    assert "1 spec checked: 1 valid" in output


def test_validating_a_folder_compiled_into_itself_checks_only_the_spec(tmp_path: Path) -> None:
    # `compile -o .` beside the spec: verl's agent_loop.yaml and OpenEnv's openenv.yaml
    # say in their first line that agentspec wrote them
    shutil.copyfile(CALCULATOR, tmp_path / "calculator.yaml")
    for target in ("verl", "openenv"):
        code, output = invoke(
            "compile", str(tmp_path / "calculator.yaml"), "--target", target, "-o", str(tmp_path)
        )
        assert code == 0, output
    assert (tmp_path / "agent_loop.yaml").is_file() and (tmp_path / "openenv.yaml").is_file()
    code, output = invoke("validate", str(tmp_path))
    assert code == 0, output
    assert "E104" not in output and "E201" not in output


def test_a_spec_without_data_is_refused_by_what_plays_samples(tmp_path: Path) -> None:
    spec = tmp_path / "nodata.yaml"
    spec.write_text(NO_DATA)
    assert invoke("validate", str(spec))[0] == 0  # `data` is optional in the language
    for args in (
        ["run", str(spec), "--policy", "random", "-n", "1", "--out", str(tmp_path / "r")],
        ["eval", str(spec), "--policy", "random"],
        ["train", str(spec), "--out", str(tmp_path / "t"), "--set", "iterations=1"],
    ):
        code, output = invoke(*args)
        assert code == 1 and "has no `data:` section" in output, (args, output)
    assert not (tmp_path / "r").exists() and not (tmp_path / "t").exists()


def test_eval_takes_every_policy_of_run(tmp_path: Path) -> None:
    script = tmp_path / "turns.txt"
    script.write_text("calculator(expression='1+1')\n")
    for policy in ("oracle", f"scripted:{script}", "random"):
        code, output = invoke("eval", str(CALCULATOR), "--policy", policy, "-n", "3")
        assert code == 0, (policy, output)
        assert re.search(r"·\s+3\s+episodes", output), output
        if policy == "oracle":
            assert re.search(r"success rate\s+│\s+1\.000", output), output


def test_eval_plays_only_what_training_held_out(tmp_path: Path) -> None:
    rows = [{"id": f"s{i}", "q": str(i), "a": i} for i in range(30)]
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = tmp_path / "heldout.yaml"
    spec.write_text(THIRTY_ROWS)
    code, output = invoke("eval", str(spec), "--policy", "oracle")  # -n 200 by default
    assert code == 0, output
    assert re.search(r"·\s+4\s+episodes", output), output
    assert "training held out its last 4 samples" in output


@pytest.mark.parametrize("rows", [1, 2, 4, 5])
def test_data_too_small_to_hold_out_eval_samples_is_held_out_half_and_said(
    tmp_path: Path, rows: int
) -> None:
    # the last `eval_samples` of 4 rows would leave 1 to train on (and of 1 row, none)
    data = [{"id": f"s{i}", "q": str(i), "a": i} for i in range(rows)]
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in data))
    spec = tmp_path / "heldout.yaml"
    spec.write_text(THIRTY_ROWS)
    code, output = invoke("eval", str(spec), "--policy", "oracle")
    if rows < 2:
        assert code == 1 and "holds 1 sample(s)" in output, output
        return
    assert code == 0, output
    if rows <= 4:
        assert f"holds {rows} samples" in output and f"half of them ({rows // 2})" in output
        assert re.search(rf"·\s+{rows // 2}\s+episodes", output), output
    else:
        assert "half of them" not in output
        assert re.search(r"·\s+4\s+episodes", output), output


def test_an_output_path_that_cannot_be_written_is_refused_before_any_work(tmp_path: Path) -> None:
    a_file = tmp_path / "f.txt"
    a_file.write_text("")
    commands = [
        ("run", str(CALCULATOR), "--policy", "oracle", "-n", "1", "--out", f"{a_file}/sub"),
        ("compile", str(CALCULATOR), "-o", f"{a_file}/sub"),
        ("schema", "-o", f"{a_file}/s.json"),
        ("init", "z", "--dir", f"{a_file}/sub"),
        ("view", str(tmp_path), "-o", f"{a_file}/r.html"),
        ("train", str(CALCULATOR), "--out", f"{a_file}/run"),
    ]
    for args in commands:
        code, output = invoke(*args)
        assert code == 2 and f"{a_file} is a file, not a folder" in output, (args, output)
    code, output = invoke("schema", "-o", "/proc/agentspec/s.json")  # a virtual file system
    assert code == 2 and "cannot write there" in output, output


def test_a_split_of_a_one_file_source_is_refused(tmp_path: Path) -> None:
    # one JSONL file has no splits: `--split nonsense` read all of it, silently
    (tmp_path / "d.jsonl").write_text('{"id": "s0", "q": "0", "a": 0}\n')
    spec = tmp_path / "heldout.yaml"
    spec.write_text(THIRTY_ROWS)
    code, output = invoke("run", str(spec), "--policy", "oracle", "--split", "nonsense")
    assert code == 2 and "--split nonsense: the spec's data is one `jsonl:` file" in output
    test = "tests:\n  episodes:\n    - {name: t, split: test, turns: ['0'], expect: {}}\n"
    spec.write_text(THIRTY_ROWS + test)
    code, output = invoke("validate", str(spec))
    assert code == 1 and "E210" in output and "tests.episodes[0].split is 'test'" in output


def test_the_held_out_count_of_a_run_is_read_from_the_run(tmp_path: Path) -> None:
    from agentspec.runtime.backends.local.evaluation import run_eval_samples

    run = tmp_path / "run"
    policy = run / "checkpoints" / "iter_000003" / "policy"
    policy.mkdir(parents=True)
    (run / "config.yaml").write_text("spec: s.yaml\neval_samples: 7\n")
    assert run_eval_samples(run) == 7
    assert run_eval_samples(policy) == 7
    assert run_eval_samples(tmp_path / "elsewhere") is None


def test_eval_reports_an_invalid_spec_at_its_line(tmp_path: Path) -> None:
    spec = tmp_path / "bad.yaml"
    spec.write_text("agentspec: 1\nname: x\nprompt: {usr: hi}\n")
    code, output = invoke("eval", str(spec), "--policy", "random")
    assert code == 1
    assert "bad.yaml:3:10: error[E201]" in output
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    code, output = invoke("eval", str(empty), "--policy", "random")
    assert code == 1 and "E104" in output


def test_a_scripted_policy_file_that_is_not_text_is_named(tmp_path: Path) -> None:
    script = tmp_path / "bin.txt"
    script.write_bytes(b"\xff\xfe\x00bad\n")
    code, output = invoke(
        "run", str(CALCULATOR), "--policy", f"scripted:{script}", "-n", "1", "--out", str(tmp_path)
    )
    assert code == 2 and "is not readable UTF-8 text" in output


def test_distilling_without_a_teacher_is_refused_before_the_run_starts(tmp_path: Path) -> None:
    out = tmp_path / "run"
    code, output = invoke("train", str(ECHO), "--algorithm", "opd", "--out", str(out))
    assert code == 2
    assert "training.algorithm 'opd' distils a teacher" in output
    assert not out.exists()


def test_an_adapter_that_cannot_be_built_fails_its_episodes_not_the_command(
    tmp_path: Path,
) -> None:
    code, output = invoke("init", "lock", "--template", "environment", "--dir", str(tmp_path))
    assert code == 0, output
    spec = tmp_path / "lock.yaml"
    spec.write_text(spec.read_text().replace("example_env:CodeLock", "example_env:Nope"))
    code, output = invoke("run", str(spec), "--policy", "random", "-n", "2", "--out", str(tmp_path))
    # every episode failed: said, exit 1, and the trajectories are still written (no traceback)
    assert code == 1 and "every episode ended in env_error" in output, output
    assert re.search(r"ended: env_error\s+│\s+2", output), output
    trajectory = json.loads((tmp_path / "trajectories.jsonl").read_text().splitlines()[0])
    assert "has no attribute 'Nope'" in trajectory["info"]["env_error"]
    code, output = invoke("explore", str(spec))
    assert code != 0 and "every episode ended in env_error" in output
    code, output = invoke(
        "train", str(spec), "--out", str(tmp_path / "run"), "--set", "warm_start_samples=4"
    )
    assert code == 2, output
    assert "none of the oracle's 4 episodes succeeded (4 ended `env_error`)" in output


@pytest.mark.parametrize("adapter", ["gymnasium:CartPole-v1", "http:http://127.0.0.1:9/env"])
def test_adapters_that_do_not_exist_are_refused_by_validate(tmp_path: Path, adapter: str) -> None:
    spec = tmp_path / "g.yaml"
    spec.write_text(
        "agentspec: 1\nname: g\nprompt: {user: play}\n"
        f'environment: {{adapter: "{adapter}"}}\n'
        "rewards: {ok: {on: final, value: 1.0}}\n"
    )
    code, output = invoke("validate", str(spec))
    assert code == 1 and "error[E204]: environment.adapter" in output


def test_validate_refuses_a_device_as_compile_does() -> None:
    for command in ("validate", "compile"):
        code, output = invoke(command, "/dev/null")
        assert code == 1 and "error[E103]" in output, (command, output)


def test_a_learning_rate_in_exponent_notation_validates(tmp_path: Path) -> None:
    """YAML 1.1 reads `1e-4` (no dot) as text; the spec takes it as the number it means."""
    spec = tmp_path / "calculator.yaml"
    text = CALCULATOR.read_text(encoding="utf-8")
    spec.write_text(text.replace("learning_rate: 0.0001", "learning_rate: 1e-4"))
    code, output = invoke("validate", str(spec))
    assert code == 0, output


def test_a_run_where_every_episode_failed_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    from agentspec.cli.episodes import _say_when_every_episode_failed
    from agentspec.runtime.episode.summary import summarize
    from agentspec.runtime.episode.trajectory import Step, TerminationReason, Trajectory

    failed = Step(0, [], [], [], info={"policy_error": "ConnectError: refused"})
    down = [Trajectory([failed], termination=TerminationReason.POLICY_ERROR) for _ in range(2)]
    assert _say_when_every_episode_failed(summarize(down))
    assert (
        "every episode ended in policy_error, e.g. ConnectError: refused" in capsys.readouterr().err
    )
    # one got through: said as a share, not an exit 1
    assert not _say_when_every_episode_failed(summarize([*down, Trajectory([Step(0, [], [], [])])]))
    said = capsys.readouterr().err
    assert "note: 2 of 3 episodes ended in policy_error, e.g. ConnectError: refused" in said
    assert not _say_when_every_episode_failed(summarize([Trajectory([Step(0, [], [], [])])]))
    assert capsys.readouterr().err == ""


def test_an_eval_where_every_episode_failed_says_why_and_exits_1(tmp_path: Path) -> None:
    # it printed the table (`ended: policy_error 1`) and exited 0: a CI job read it as a result
    code, output = invoke(
        "eval", str(CALCULATOR), "--policy", "chat:http://127.0.0.1:9/v1", "-n", "1"
    )
    assert code == 1, output
    assert "note: every episode ended in policy_error, e.g." in output


def test_a_misspelt_or_empty_policy_is_named() -> None:
    code, output = invoke("run", str(CALCULATOR), "--policy", "smolm2", "-n", "1")
    assert code == 2 and "unknown policy 'smolm2'" in output and "did you mean 'smollm2'" in output
    code, output = invoke("run", str(CALCULATOR), "--policy", "", "-n", "1")
    assert code == 2 and "unknown policy ''" in output
    code, output = invoke("train", str(CALCULATOR), "--set", "algorithm=grpoo")
    assert code == 2 and "did you mean 'grpo'" in output


def test_a_run_where_every_episode_failed_exits_1_and_keeps_its_trajectories(
    tmp_path: Path,
) -> None:
    # nothing listens on port 9: each request fails, the policy gives up, the step fails
    out = tmp_path / "down"
    spec = str(Path(__file__).resolve().parents[2] / "specs" / "calculator.yaml")
    result = CliRunner().invoke(
        app, ["run", spec, "--policy", "chat:http://127.0.0.1:9/v1", "-n", "1", "--out", str(out)]
    )
    assert result.exit_code == 1, result.output
    assert "every episode ended in policy_error" in result.output
    assert (out / "trajectories.jsonl").read_text().count("\n") == 1


def test_an_oracle_turn_that_fails_on_one_sample_ends_that_episode_only(tmp_path: Path) -> None:
    """The oracle's last turn renders on samples with an even answer only: those episodes
    end `done`, the others `policy_error` with the template's line, and the run goes on
    (it used to stop at the first failing sample, exit 2, with no table or trajectories)."""
    spec = tmp_path / "calculator.yaml"
    spec.write_text(
        CALCULATOR.read_text().replace(
            '"<answer>{{ sample.answer }}</answer>"',
            '"<answer>{{ [sample.answer][sample.answer % 2] }}</answer>"',
        )
    )
    code, output = invoke(
        "run", str(spec), "--policy", "oracle", "-n", "12", "--out", str(tmp_path)
    )
    rows = [json.loads(line) for line in (tmp_path / "trajectories.jsonl").read_text().splitlines()]
    endings = {row["termination"] for row in rows}
    assert code == 0 and endings == {"done", "policy_error"}, output
    failed = sum(row["termination"] == "policy_error" for row in rows)
    assert f"note: {failed} of 12 episodes ended in policy_error, e.g. oracle for sample" in output
    assert "calculator.yaml:40: UndefinedError" in output
    assert re.search(rf"ended: policy_error\s+│\s+{failed}", output), output


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "command",
    [["run", "-n", "1"], ["train"], ["eval", "--policy", "oracle"], ["test"], ["explore"]],
)
def test_a_spec_path_that_is_a_fifo_is_refused_not_waited_on(
    tmp_path: Path, command: list[str]
) -> None:
    """`validate` refused a FIFO (E103); the commands that compile into the cache hashed
    it first, which blocks until a writer comes (and read /dev/zero until memory ran out)."""
    fifo = tmp_path / "spec.yaml"
    os.mkfifo(fifo)
    code, output = invoke(command[0], str(fifo), *command[1:])
    assert code != 0 and "E103" in output and "a FIFO (named pipe)" in output, output


def test_a_split_the_data_source_does_not_have_is_a_usage_error(tmp_path: Path) -> None:
    spec = ROOT / "specs" / "webshop.yaml"
    code, output = invoke(
        "run", str(spec), "--policy", "oracle", "--split", "nope", "-n", "1", "--out", str(tmp_path)
    )
    assert code == 2, output
    assert "--split nope: webshop_goals: unknown split 'nope'; use ['dev', 'test'" in output
    assert "Traceback" not in output


def test_what_run_writes_into_its_out_folder_is_checked_before_the_episodes(
    tmp_path: Path,
) -> None:
    (tmp_path / "a" / "trajectories.jsonl").mkdir(parents=True)
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "tokenizer").write_text("")
    for out, said in (("a", "trajectories.jsonl is a folder"), ("b", "tokenizer is a file")):
        code, output = invoke(
            "run", str(CALCULATOR), "--policy", "oracle", "-n", "1", "--out", str(tmp_path / out)
        )
        assert code == 2 and said in output and "Traceback" not in output, output
    code, output = invoke("run", str(CALCULATOR), "--policy", f"scripted:{tmp_path}", "-n", "1")
    assert code == 2 and f"scripted policy file '{tmp_path}' is a folder" in output, output


def test_an_openai_policy_s_tokenizer_must_be_a_local_tokenizer_folder(tmp_path: Path) -> None:
    """A missing path was tried as a model hub's repository id (a download), an empty
    folder or a file gave transformers' traceback."""
    (tmp_path / "empty").mkdir()
    for tokenizer, said in (
        (tmp_path / "missing", "is not a folder"),
        (tmp_path / "empty", "holds no tokenizer.json or tokenizer_config.json"),
    ):
        code, output = invoke(
            "run", str(CALCULATOR), "--policy", "openai:http://127.0.0.1:9/v1",
            "--tokenizer", str(tokenizer), "-n", "1", "--out", str(tmp_path / "out"),
        )  # fmt: skip
        assert code == 2 and f"--tokenizer {tokenizer}: {said}" in output, output


def test_a_specs_control_characters_are_shown_not_sent_to_the_terminal(tmp_path: Path) -> None:
    """An escape sequence in a spec (a clipboard write, a colour, a carriage return that
    overwrites the error line) reaches the terminal only as visible pictures."""
    spec = tmp_path / "escapes.yaml"
    spec.write_text(
        CALCULATOR.read_text() + '"A\\e]52;c;cHduZWQ=\\aC\\x9b31mD\\bE\\rF\\e[31mG\\u202eH": 1\n',
        encoding="utf-8",
    )
    code, output = invoke("validate", str(spec))
    assert code == 1
    assert "E201" in output and "A␛]52;c;cHduZWQ=␇C" in output
    assert not set(output) & {"\x1b", "\x07", "\x9b", "\x08", "\r", "\u202e"}


@pytest.mark.parametrize(
    "command", [["prompt"], ["compile", "--target", "verl"], ["run", "-n", "1"]]
)
def test_a_spec_without_data_says_to_add_it_in_every_command(
    tmp_path: Path, command: list[str]
) -> None:
    # prompt and compile --target verl said "declares no `data`; pass samples directly"
    spec = tmp_path / "nodata.yaml"
    spec.write_text(
        "agentspec: 1\nname: nodata\nprompt: {user: Say hi.}\nepisode: {max_steps: 1}\n"
        "rewards: {ok: {on: final, value: 1.0}}\n"
    )
    extra = ["-o", str(tmp_path / "out")] if command[0] == "compile" else []
    extra += ["--out", str(tmp_path / "run"), "--policy", "random"] if command[0] == "run" else []
    code, output = invoke(command[0], str(spec), *command[1:], *extra)
    assert code in (1, 2), output
    assert "spec 'nodata' has no `data:` section" in output
    assert "docs/reference.md#dataspec" in output and "Traceback" not in output


@pytest.mark.parametrize(
    ("name", "target"), [("manifest.json", "python"), ("calculator_trl.py", "trl")]
)
def test_compiling_over_the_spec_itself_puts_it_back_and_says_so(
    tmp_path: Path, name: str, target: str
) -> None:
    # `compile -o . manifest.json` replaced the spec with the generated manifest
    spec = tmp_path / name
    spec.write_bytes(CALCULATOR.read_bytes())
    code, output = invoke("compile", str(spec), "--target", target, "-o", str(tmp_path))
    assert code == 2, output
    assert f"{name} is also the name of a file" in output and "the spec was put back" in output
    assert spec.read_bytes() == CALCULATOR.read_bytes()


def test_a_weighted_reward_that_overflows_counts_0_and_is_recorded(tmp_path: Path) -> None:
    # each weight finite (1e308), their sum infinite: `run` showed `mean reward inf`
    spec = tmp_path / "infr.yaml"
    spec.write_text(
        "agentspec: 1\nname: infr\ndata: {source: generator:arithmetic, fields: {question: str}}\n"
        "prompt: {user: '{{ sample.question }}'}\n"
        "tools: {t: {description: T., returns: \"'ok'\"}}\n"
        "episode: {max_steps: 2, tool_format: hermes}\n"
        "rewards:\n"
        "  a: {on: 'tool:t', value: 1.0, weight: 1e308}\n"
        "  b: {on: 'tool:t', value: 1.0, weight: 1e308}\n"
        "  c: {on: final, value: 1.0}\n"
        'oracle: [\'<tool_call>{"name": "t", "arguments": {}}</tool_call>\', done]\n'
    )
    code, output = invoke(
        "run", str(spec), "--policy", "oracle", "-n", "2", "--out", str(tmp_path / "r")
    )
    assert code == 0, output
    assert re.search(r"mean reward\s+│\s+1\.000", output), output
    trajectory = json.loads((tmp_path / "r" / "trajectories.jsonl").read_text().splitlines()[0])
    errors = trajectory["steps"][0]["info"]["expression_errors"]
    assert "the step's weighted reward is inf: every component counts 0" in errors[0]


@pytest.mark.parametrize(
    "field", ["episode: {max_response_tokens: ", "context: {max_prompt_tokens: "]
)
def test_token_limits_past_any_context_are_refused(tmp_path: Path, field: str) -> None:
    # max_response_tokens: 10**12 validated, and training hung in its first evaluation
    spec = tmp_path / "big.yaml"
    spec.write_text(
        "agentspec: 1\nname: big\nprompt: {user: hi}\nrewards: {r: {on: final, value: 1}}\n"
        f"{field}1000000000000}}\n"
    )
    code, output = invoke("validate", str(spec))
    assert code == 1 and "error[E204]" in output and "less than or equal to 1048576" in output


@pytest.mark.parametrize("impl", ["mymod:f.", "mymod:f..g", "os.path.:join", "mymod.:f"])
def test_an_import_path_with_an_empty_name_is_refused(tmp_path: Path, impl: str) -> None:
    # `mymod:f.` passed plain validate and failed at import
    spec = tmp_path / "s.yaml"
    spec.write_text(
        "agentspec: 1\nname: s\nprompt: {user: hi}\nrewards: {r: {on: final, value: 1}}\n"
        f"functions: {{f: {{impl: '{impl}'}}}}\n"
    )
    code, output = invoke("validate", str(spec))
    assert code == 1 and "error[E204]: functions.f.impl" in output, output
