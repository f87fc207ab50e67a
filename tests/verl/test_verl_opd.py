"""OPD on verl: `agentspec train --backend verl --algorithm opd` with a teacher checkpoint.

verl's real `main_ppo` on CPU. The teacher (a behaviour-cloned tiny model with the
student's tokenizer) scores every verl row inside the `agentspec` trainer; the
test checks that those log-probs equal the teacher's own forward pass on the same
step rows, that the advantages are OPD's −β (log π_student − log π_teacher), and
that training moved the student towards the teacher: the exact reverse KL (over
the whole vocabulary) on the first iteration's rows is lower for the trained
actor than for the student it started from. (The run's own `opd/reverse_kl` is a
sampled estimate on each iteration's new episodes: too noisy to compare over a
few iterations.)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner
from verl_helpers import SPEC, warm_started_tiny

from agentspec.cli import app
from agentspec.runtime.backends.local.models import load_checkpoint
from agentspec.runtime.backends.verl.run_folder import build_verl_target

pytestmark = pytest.mark.slow

SETTINGS = {
    "iterations": "8",  # 4 moved the student too little to judge reliably (see the end)
    "prompts_per_iteration": "8",  # 16 rows an iteration: 4 gave too noisy a step
    "group_size": "2",
    "minibatch_size": "8",
    "epochs": "4",  # several updates on each iteration's rows: the student visibly moves
    "eval_every": "8",
    "checkpoint_every": "8",
    "eval_samples": "4",
    "temperature": "1.0",
    "learning_rate": "0.002",
    "opd_beta": "1.0",
}


def _teacher_row_log_probs(
    model: torch.nn.Module, prompt: list[int], response: list[int]
) -> torch.Tensor:
    """log π_teacher of each response token, one unpadded sequence at a time."""
    ids = torch.tensor([prompt + response])
    logits = model(input_ids=ids).logits[0].float()
    logp = torch.log_softmax(logits[:-1], dim=-1).gather(-1, ids[0, 1:, None])[:, 0]
    return logp[len(prompt) - 1 :]


def _reverse_kl(
    student: torch.nn.Module, teacher: torch.nn.Module, rows: list[tuple[list[int], list[int]]]
) -> float:
    """Mean over response tokens of KL(π_student ‖ π_teacher), over the whole vocabulary."""
    total, count = 0.0, 0
    with torch.no_grad():
        for prompt, response in rows:
            ids = torch.tensor([prompt + response])
            positions = slice(len(prompt) - 1, len(prompt) + len(response) - 1)
            log_s = torch.log_softmax(student(input_ids=ids).logits[0, positions].float(), -1)
            log_t = torch.log_softmax(teacher(input_ids=ids).logits[0, positions].float(), -1)
            total += float((log_s.exp() * (log_s - log_t)).sum())
            count += len(response)
    return total / count


def test_opd_trains_on_verl_with_per_step_teacher_scores(tmp_path: Path) -> None:
    run = tmp_path / "run"
    target, _ = build_verl_target(
        SPEC, run / "target", training={"algorithm": "opd", "teacher": str(tmp_path / "t")}
    )
    teacher_dir = warm_started_tiny(target.module, tmp_path / "teacher", steps=200)
    warm_started_tiny(target.module, target.model_dir, steps=15, seed=1)
    student_tokenizer = json.loads((target.model_dir / "tokenizer.json").read_text())
    assert json.loads((teacher_dir / "tokenizer.json").read_text()) == student_tokenizer

    args = ["train", str(SPEC), "--backend", "verl", "--algorithm", "opd", "--out", str(run)]
    for key, value in {
        **SETTINGS,
        "teacher": str(teacher_dir),
        "data.val_max_samples": "4",
        "+trainer.v1.agentspec.dump_dir": str(run / "dump"),
    }.items():
        args += ["--set", f"{key}={value}"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output[-4000:]

    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    train = [r for r in records if "loss/policy" in r]
    assert [r["iteration"] for r in train] == list(range(1, 9))
    assert all(r["opd/reverse_kl"] >= 0 for r in train)

    teacher, _ = load_checkpoint(teacher_dir)
    teacher.eval()
    dumps = sorted((run / "dump").glob("advantages_step*.pt"))
    assert len(dumps) == 8
    for path in dumps:
        dump = torch.load(path, weights_only=False)
        mask = dump["response_mask"].bool()
        scored = dump["teacher_log_probs"]
        with torch.no_grad():
            for i, (prompt, response) in enumerate(dump["token_ids"]):
                expected = _teacher_row_log_probs(teacher, prompt, response)
                torch.testing.assert_close(
                    scored[i, : len(response)], expected, atol=1e-4, rtol=1e-4
                )
        # every step of every row got its teacher scores, and OPD's advantage is built on them
        for i, record in enumerate(dump["records"]):
            steps = torch.tensor(record["token_steps"])
            assert bool((scored[i, : len(steps)][steps >= 0] < 0).all())
        expected_adv = torch.where(mask, -(dump["old_log_probs"] - scored), torch.zeros(()))
        torch.testing.assert_close(dump["advantages"], expected_adv, atol=1e-5, rtol=1e-5)

    # the trained actor is closer to the teacher than the student it started from
    rows = [tuple(r) for r in torch.load(dumps[0], weights_only=False)["token_ids"]]
    student, _ = load_checkpoint(target.model_dir)
    student.eval()
    before = _reverse_kl(student, teacher, rows)
    actor = run / "checkpoints" / "global_step_8" / "actor" / "model_world_size_1_rank_0.pt"
    trained = torch.load(actor, weights_only=False, map_location="cpu")
    student.load_state_dict(
        {k: v.full_tensor() if hasattr(v, "full_tensor") else v for k, v in trained.items()}
    )
    after = _reverse_kl(student, teacher, rows)
    # PPO's clip bounds how far one iteration moves the student, and the sampled-token
    # advantage is noisy: after 4 iterations the exact KL fell 0.5-5 % (3.20 → 3.19 failed a
    # 1 % check); after 8 it fell 12 % and 20 % (3.21 → 2.84, 3.20 → 2.56). A wider clip does
    # not help: at clip_ratio 0.9 the sampled-token steps overshoot and the KL rose.
    assert after < 0.97 * before, (before, after)


def test_opd_without_a_teacher_is_a_clear_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        ["train", str(SPEC), "--backend", "verl", "--algorithm", "opd", "--out", str(tmp_path)],
    )
    assert result.exit_code == 2
    assert "distils a teacher: name it with `training.teacher`" in result.output
