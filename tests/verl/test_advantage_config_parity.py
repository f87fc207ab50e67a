"""Both backends build the estimators' settings one way (`advantage_config`): the same
training settings give the same γ, λ, ω, β, whitening and std normalisation on the local
backend and in the agentspec trainer on verl (from the composed config it is launched
with). OPD's task weight and top-k are the exception, said in the trainer's docstring:
verl adds the task advantage itself and trains on the sampled token."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from verl_helpers import SPEC

from agentspec.runtime.algorithms import AdvantageConfig, advantage_config

SETTINGS = {"gamma": 0.9, "lam": 0.5, "omega": 0.7, "opd_beta": 2.0}
COMPARED = ("gamma", "lam", "omega", "opd_beta", "whiten", "norm_by_std")


def test_absent_settings_take_the_configs_defaults() -> None:
    assert advantage_config({}) == AdvantageConfig()
    built = advantage_config({"gamma": "0.5", "opd_topk": 4.0, "lam": None, "other": 1})
    assert built == AdvantageConfig(gamma=0.5, opd_topk=4)
    assert advantage_config({}, task_estimator="rloo").opd_task_estimator == "rloo"


@pytest.mark.parametrize("algorithm", ["steppo", "grpo"])
def test_the_local_and_verl_backends_build_the_same_settings(
    tmp_path: Path, algorithm: str
) -> None:
    from agentspec.compiler.build import import_spec
    from agentspec.core.presets import ALGORITHMS
    from agentspec.runtime.backends.local.model_defaults import run_settings
    from agentspec.runtime.backends.verl.launcher import compose_config, prepared_run
    from agentspec.runtime.backends.verl.trainer import AgentspecTrainer

    user = {"algorithm": algorithm, **{k: str(v) for k, v in SETTINGS.items()}}
    local_cfg = run_settings(SPEC, import_spec(SPEC).TRAINING, user).cfg  # what train() uses
    local = advantage_config(local_cfg.model_dump(), ALGORITHMS.get(algorithm).task_estimator)

    composed = compose_config(prepared_run(SPEC, tmp_path / "run", user).overrides)
    trainer = SimpleNamespace(
        config=composed, agentspec_settings=dict(composed.trainer.v1.get("agentspec", {}))
    )
    on_verl = AgentspecTrainer.advantage_config(trainer)  # type: ignore[arg-type]

    for name in COMPARED:
        assert getattr(on_verl, name) == getattr(local, name), name
    assert (local.gamma, local.lam, local.omega, local.opd_beta) == tuple(SETTINGS.values())
