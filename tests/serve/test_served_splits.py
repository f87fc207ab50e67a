"""The splits a served spec offers are the ones `agentspec train` and `agentspec eval` use:
`train` never holds a sample `eval` reports on, so an outside trainer that trains on the
served `train` split does not train on the evaluation set (it did: hotpotqa's 64 of 64)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentspec.runtime.compiled.samples import evaluation_samples, held_out_split
from agentspec.runtime.serve.spec import ServedSpec, SessionError
from agentspec.spec.training import TrainingSpec

ROOT = Path(__file__).resolve().parents[2]

SPEC = """\
agentspec: 1
name: rows
data:
  source: jsonl:rows.jsonl
  fields: {question: str, answer: int}
prompt: {user: "{{ sample.question }}"}
episode: {max_steps: 1}
rewards:
  correct: {on: final, value: "1.0 if number(action.text) == sample.answer else 0.0"}
training: {eval_samples: EVAL}
"""


def rows_spec(folder: Path, rows: int, eval_samples: int) -> ServedSpec:
    lines = [f'{{"id": "r{i}", "question": "q{i}", "answer": {i}}}\n' for i in range(rows)]
    (folder / "rows.jsonl").write_text("".join(lines), encoding="utf-8")
    (folder / "spec.yaml").write_text(SPEC.replace("EVAL", str(eval_samples)), encoding="utf-8")
    return ServedSpec.load(folder / "spec.yaml")


def ids(samples: list[dict]) -> list[str]:
    return [str(sample["id"]) for sample in samples]


def test_hotpotqas_served_train_split_holds_none_of_what_eval_reports_on() -> None:
    served = ServedSpec.load(ROOT / "specs" / "hotpotqa.yaml")
    module = served.module
    held_out = TrainingSpec.model_validate(module.TRAINING).eval_samples
    _, evaluated, _ = evaluation_samples(module, 64, held_out)

    assert len(evaluated) == 64
    assert set(ids(served.samples("train"))).isdisjoint(ids(evaluated))
    assert served.splits() == ["train", "test"]
    assert ids(served.samples("test")) == ids(evaluated)


def test_the_served_splits_are_the_ones_training_carves(tmp_path: Path) -> None:
    served = rows_spec(tmp_path, rows=10, eval_samples=3)
    trained, held = held_out_split(served.module, 3)

    assert ids(served.samples("train")) == ids(trained) == [f"r{i}" for i in range(7)]
    assert ids(served.samples("test")) == ids(held) == ["r7", "r8", "r9"]
    # a sample id finds its sample in either split
    session_choice = served.choose(sample_id="r8")
    assert session_choice == ("r8", {"id": "r8", "question": "q8", "answer": 8})


def test_small_data_is_held_out_half_as_training_holds_it_out(tmp_path: Path) -> None:
    served = rows_spec(tmp_path, rows=4, eval_samples=64)

    assert ids(served.samples("train")) == ["r0", "r1"]
    assert ids(served.samples("test")) == ["r2", "r3"]


def test_a_single_sample_is_served_for_training_with_nothing_held_out(tmp_path: Path) -> None:
    served = rows_spec(tmp_path, rows=1, eval_samples=64)

    assert ids(served.samples("train")) == ["r0"]
    assert served.samples("test") == []
    with pytest.raises(SessionError, match="split 'test' has no samples"):
        served.choose(split="test", index=0)


def test_a_generators_test_split_is_served_whole() -> None:
    served = ServedSpec.load(ROOT / "specs" / "calculator.yaml")

    assert served.splits() == ["train", "test"]
    assert ids(served.samples("test")[:3]) == ids(served.module.load_samples(split="test", limit=3))
