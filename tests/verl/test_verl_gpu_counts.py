"""GPU-count checks before launch (``backends/verl/counts.py``), through the dry run.

Every check mirrors an assertion of verl 0.9.1 that depends on the GPU count, the
nodes, the group size or the mini-batch; the dry run must refuse what verl would
refuse (some of it only at the first update, after a whole rollout) with a located
error naming agentspec's setting, and accept every ``agentspec train … --backend verl``
command of docs/verl.md. Nothing starts Ray: a dry run composes verl's config only.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner
from verl_helpers import ROOT, SPEC

from agentspec.cli import app
from agentspec.runtime.text.tiny_model import build_tiny

pytestmark = pytest.mark.slow

DOCS = ROOT / "docs" / "verl.md"
GPU = ("--set", "trainer.device=cuda", "--set", "model=builtin:small")


def _dry_run(out: Path, *args: str, spec: Path = SPEC) -> tuple[int, str]:
    result = CliRunner().invoke(
        app, ["train", str(spec), "--backend", "verl", "--dry-run", "--out", str(out), *args]
    )
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def teacher(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("teacher") / "teacher"
    build_tiny(["a b c d"] * 4, path)
    return path


def test_opd_on_seven_gpus_names_prompts_per_iteration(tmp_path: Path, teacher: Path) -> None:
    # the recipe docs/verl.md had: 32 prompts × 4 = 128 episodes over 7 GPUs
    code, output = _dry_run(
        tmp_path,
        *GPU,
        *("--algorithm", "opd", "--set", f"teacher={teacher}"),
        *("--set", "trainer.n_gpus_per_node=7"),
        *("--set", "+trainer.v1.agentspec.teacher_placement=gpu"),
    )
    assert code == 2, output[-3000:]
    first = output.split("error: ", 1)[1]
    # located at the spec's value, naming the setting, the GPU count and a value that passes
    assert first.startswith(f"{SPEC}:48:26: training.prompts_per_iteration 32 × "), first
    assert "--set trainer.n_gpus_per_node=7" in first
    assert "real_train_batch_size" in first
    assert "set prompts_per_iteration to a multiple of 7 (e.g. 35)" in first
    assert "Traceback" not in output


def test_group_size_six_on_eight_gpus_is_refused_before_the_rollout(tmp_path: Path) -> None:
    # verl's validate_config accepts it (32 × 6 = 192 rows over 8 GPUs); its workers assert
    # the mini-batch (2 prompts × 6 = 12 rows) over 8 at the first update
    code, output = _dry_run(
        tmp_path, *GPU, "--set", "group_size=6", "--set", "trainer.n_gpus_per_node=8"
    )
    assert code == 2, output[-3000:]
    assert "training.minibatch_size 16 (default; verl's " in output
    assert "group_size 6 (--set group_size=6) = 12 rows" in output
    assert "data-parallel size 8" in output
    assert "multiple of 24" in output
    # the value it proposes passes
    code, output = _dry_run(
        tmp_path,
        *GPU,
        *("--set", "group_size=6", "--set", "trainer.n_gpus_per_node=8"),
        *("--set", "minibatch_size=24"),
    )
    assert code == 0, output[-3000:]


def test_micro_batches_fit_the_gpus_unless_the_user_set_them(tmp_path: Path) -> None:
    code, output = _dry_run(tmp_path, *GPU, "--set", "trainer.n_gpus_per_node=8")
    assert code == 0, output[-3000:]
    # 4 prompts × 4 = 16 rows a mini-batch, 2 per GPU: the generated 8 becomes 2
    assert "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2 " in output
    code, output = _dry_run(
        tmp_path,
        *GPU,
        *("--set", "trainer.n_gpus_per_node=8"),
        *("--set", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8"),
    )
    assert code == 2, output[-3000:]
    assert "--set actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8: " in output
    assert "prepare_micro_batches" in output


def test_rollout_tensor_parallel_size_must_divide_the_gpus(tmp_path: Path) -> None:
    code, output = _dry_run(
        tmp_path,
        *GPU,
        *("--set", "trainer.n_gpus_per_node=8"),
        *("--set", "actor_rollout_ref.rollout.tensor_model_parallel_size=3"),
    )
    assert code == 2, output[-3000:]
    assert "--set actor_rollout_ref.rollout.tensor_model_parallel_size=3: " in output
    assert "does not divide 8 GPUs" in output


def test_two_nodes_of_eight_pass_with_a_cluster_address(tmp_path: Path) -> None:
    args = (*GPU, "--set", "trainer.n_gpus_per_node=8", "--set", "trainer.nnodes=2")
    code, output = _dry_run(tmp_path, *args, "--set", "prompts_per_iteration=64")
    assert code == 0, output[-3000:]


def _docs_commands() -> list[list[str]]:
    """Every ``agentspec train … --backend verl`` command in docs/verl.md's bash blocks,
    as argument lists (continuation lines joined)."""
    text = DOCS.read_text(encoding="utf-8")
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            if line.startswith("agentspec train") and "--backend verl" in line:
                commands.append(shlex.split(line, comments=True)[2:])
    return commands


def test_the_docs_have_recipes_to_check() -> None:
    assert len(_docs_commands()) >= 3


@pytest.mark.parametrize("index", range(len(_docs_commands())))
def test_every_verl_recipe_of_the_docs_passes_the_dry_run(
    index: int, tmp_path: Path, teacher: Path
) -> None:
    args = []
    env = {"MODEL": "builtin:small", "SPEC": str(SPEC)}
    for word in _docs_commands()[index]:
        word = word.replace("/models/teacher", str(teacher))
        args.append(re.sub(r"\$(\w+)", lambda m: env.get(m.group(1), m.group(0)), word))
    spec = Path(args.pop(0))
    if "--out" in args:  # the docs' run folder (/shared/…): here, a temporary one
        i = args.index("--out")
        del args[i : i + 2]
    code, output = _dry_run(tmp_path, *args, spec=ROOT / spec if not spec.is_absolute() else spec)
    assert code == 0, f"{args}\n{output[-3000:]}"
    assert os.path.isdir(tmp_path / "target")
