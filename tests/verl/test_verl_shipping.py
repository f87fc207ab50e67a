"""What a verl run ships to its Ray workers (issue 51): the run, not a path.

The two-node run itself is tests/verl/test_verl_two_nodes.py (slow); these check what
goes into the shipment, the limit, and the shared-storage setting, from dry runs.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from test_verl_two_nodes import _write_task

from agentspec.compiler.package_files import data_root_files, spec_variables
from agentspec.runtime.backends.verl import shipping
from agentspec.runtime.backends.verl.dry_run import dry_run
from agentspec.runtime.backends.verl.launcher import VerlSetupError

ROOT = Path(__file__).resolve().parents[2]
WORKING_DIR = "+ray_kwargs.ray_init.runtime_env.working_dir"


@pytest.fixture
def task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The two-node test's spec (its own module, a data file beside it, one under
    ${AGENTSPEC_DATA}, two variables of its own), with its data root exported."""
    spec, data = _write_task(tmp_path / "driver")
    monkeypatch.setenv("AGENTSPEC_DATA", str(data))
    monkeypatch.setenv("TWO_NODE_EVIDENCE", str(tmp_path / "evidence"))
    monkeypatch.setenv("TWO_NODE_DRIVER", str(tmp_path / "driver"))
    return spec


def test_the_shipped_folder_holds_all_a_worker_reads(task: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    result = dry_run(task, run, {"trainer.device": "cpu"})
    shipped = Path(result.overrides[WORKING_DIR])
    assert shipped == run / "target"
    # the spec, its module and data file; the data root's file; the model and the data
    for name in ("spec/lookup_desk.yaml", "spec/tablelib.py", "spec/table.json"):
        assert (shipped / name).is_file(), name
    assert json.loads((shipped / "data" / "units.json").read_text()) == {"unit": "kg"}
    assert (shipped / result.overrides["actor_rollout_ref.model.path"] / "config.json").is_file()
    for key in ("data.train_files", "data.val_files"):
        assert (shipped / result.overrides[key]).is_file()
    # no input of the workers is a path of the driver's; the spec's variables go along
    inputs = [v for k, v in result.overrides.items() if k != WORKING_DIR and "local_dir" not in k]
    assert not [v for v in inputs if str(run / "target") in v]
    assert "PYTHONPATH" not in result.env and "AGENTSPEC_DATA" not in result.env
    assert result.env["TWO_NODE_EVIDENCE"] == str(tmp_path / "evidence")
    # the agent loop binds the copy and its data root, by its own place
    loop = next(shipped.glob("*_verl.py")).read_text()
    assert 'bind_spec_dir(spec_module, HERE / "spec")' in loop
    assert str(tmp_path) not in loop
    assert any("ships" in note and "units.json" in note for note in result.notes)


def test_the_shared_storage_setting_ships_nothing(task: Path, tmp_path: Path) -> None:
    result = dry_run(task, tmp_path / "run", {"trainer.device": "cpu"}, shared_storage=True)
    assert WORKING_DIR not in result.overrides
    assert result.env["PYTHONPATH"].split(":")[0] == str(tmp_path / "run" / "target")
    assert Path(result.overrides["data.train_files"]).is_absolute()
    assert result.env["AGENTSPEC_DATA"] == str(tmp_path / "driver" / "data")
    assert not any("ships" in note for note in result.notes)


def test_a_run_too_big_to_ship_is_refused_before_it_starts(
    task: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (task.parent / "table.json").write_bytes(b"{}" + b" " * (2 * 2**20))  # 2 MiB beside the spec
    monkeypatch.setattr(shipping, "SHIP_LIMIT_MIB", 1)
    with pytest.raises(VerlSetupError) as error:
        dry_run(task, tmp_path / "run", {"trainer.device": "cpu"})
    message = str(error.value)
    assert "over the 1 MiB agentspec ships" in message
    assert "spec 2.0 MiB" in message  # the largest part, named
    assert "--shared-storage" in message


def test_a_model_folder_outside_the_run_is_shipped_in_it(task: Path, tmp_path: Path) -> None:
    first = dry_run(task, tmp_path / "first", {"trainer.device": "cpu"})
    model = tmp_path / "my_model"
    shutil.copytree(Path(first.overrides[WORKING_DIR]) / "model", model)
    result = dry_run(task, tmp_path / "run", {"trainer.device": "cpu", "model": str(model)})
    assert result.overrides["actor_rollout_ref.model.path"] == "inputs/model"
    assert result.overrides["critic.model.path"] == "inputs/model"  # one copy for both
    shipped = Path(result.overrides[WORKING_DIR])
    assert (shipped / "inputs" / "model" / "config.json").is_file()
    assert not (shipped / "inputs" / "critic_model").exists()


def test_the_files_and_variables_a_spec_names_under_its_data_root() -> None:
    def named(spec: str) -> list[str]:
        return [f.relative.as_posix() for f in data_root_files(ROOT / "specs" / f"{spec}.yaml")]

    assert named("hotpotqa") == ["hotpotqa/corpus.jsonl", "hotpotqa/questions.jsonl"]
    assert named("alfworld") == ["textworld", "textworld/games.jsonl"]
    assert named("calculator") == []
    assert spec_variables(ROOT / "specs" / "webshop.yaml") == ["AGENTSPEC_DATA"]
