"""Algorithm presets: consistent with the estimator and loss registries, the one place
algorithm names are branched on, and the source of the spec's allowed names and docs."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from agentspec.core.presets import ALGORITHMS, DEFAULT_KL_COEF, Algorithm, clip_range, kl_coef
from agentspec.core.registry import UnknownNameError
from agentspec.runtime.algorithms import ESTIMATORS, POLICY_LOSSES

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "agentspec"


def _presets() -> list[Algorithm]:
    return [ALGORITHMS.get(name) for name in ALGORITHMS]


def test_every_preset_names_registered_parts() -> None:
    for preset in _presets():
        estimator = ESTIMATORS.get(preset.estimator)
        POLICY_LOSSES.get(preset.loss)
        if preset.task_estimator is not None:
            ESTIMATORS.get(preset.task_estimator)
            assert preset.needs_teacher, preset.name
        # the critic trains exactly when the estimator reads its values
        assert preset.trains_critic == (estimator.critic != "none"), preset.name
        # a run is refused before loading exactly when the estimator would need anchors
        assert ("episode.anchor" in preset.spec_needs) == ("anchor_ids" in estimator.requires), (
            preset.name
        )
        assert preset.needs_step_rows == preset.clips_steps


def test_step_clip_goes_with_the_step_ratio_loss() -> None:
    assert {p.name for p in _presets() if p.clips_steps} == {"steppo"}
    assert ALGORITHMS.get("steppo").verl_overrides == {
        "actor_rollout_ref.actor.loss_agg_mode": "seq-mean-token-mean"
    }
    assert clip_range(ALGORITHMS.get("grpo"), {"clip_ratio": 0.3, "step_clip_ratio": 0.1}) == (
        0.3,
        0.3,
    )


def test_reward_driven_algorithms_are_anchored_to_the_warm_start_by_default() -> None:
    # without the anchor the policy drifts without bound from what behaviour cloning
    # taught (DEFAULT_KL_COEF has the runs); on-policy distillation follows its teacher
    for preset in _presets():
        expected = 0.0 if preset.needs_teacher else DEFAULT_KL_COEF
        assert kl_coef(preset, {}) == expected, preset.name
        assert kl_coef(preset, {"kl_coef": None}) == expected, preset.name
        assert kl_coef(preset, {"kl_coef": 0}) == 0.0  # the spec's value wins, 0 included
        assert kl_coef(preset, {"kl_coef": 0.3}) == 0.3
    assert DEFAULT_KL_COEF > 0


def test_the_kl_default_reaches_both_backends(tmp_path: Path) -> None:
    from agentspec.runtime.backends.local.models import needs_reference
    from agentspec.runtime.backends.verl.run_folder import algorithm_overrides
    from agentspec.spec.training import TrainingSpec

    for name, (use, coef) in {
        "grpo": ("True", str(DEFAULT_KL_COEF)),
        "opd": ("False", "0.0"),
    }.items():
        settings = {"algorithm": name, "teacher": str(tmp_path), "prompts_per_iteration": 8}
        verl = algorithm_overrides(ALGORITHMS.get(name), TrainingSpec(**settings).model_dump())
        assert verl["actor_rollout_ref.actor.use_kl_loss"] == use
        assert verl["actor_rollout_ref.actor.kl_loss_coef"] == coef
        # without a warm start the local trainer builds a reference only for the penalty
        assert needs_reference(TrainingSpec(**settings)) == (use == "True")


def test_unknown_algorithm_suggests_a_name() -> None:
    with pytest.raises(UnknownNameError, match="Did you mean 'steppo'"):
        ALGORITHMS.get("stepo")


def test_presets_import_without_torch() -> None:
    code = (
        "import sys\n"
        "from agentspec.core.presets import ALGORITHMS\n"
        "import agentspec.spec.model\n"
        "print('torch' in sys.modules, len(ALGORITHMS))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout.split()
    assert out == ["False", str(len(ALGORITHMS))]


def test_spec_model_names_come_from_the_registries() -> None:
    from typing import get_args

    from agentspec.core.contexts import CONTEXT_POLICIES
    from agentspec.formats import available_formats
    from agentspec.spec.model import ContextSpec, EpisodeSpec, TrainingSpec

    def allowed(model: type, field: str) -> tuple[str, ...]:
        return get_args(model.model_fields[field].annotation)

    assert allowed(TrainingSpec, "algorithm") == ALGORITHMS.names()
    assert allowed(ContextSpec, "policy") == CONTEXT_POLICIES.names()
    assert allowed(EpisodeSpec, "tool_format") == tuple(available_formats())
    description = TrainingSpec.model_fields["algorithm"].description or ""
    for preset in _presets():
        assert f"`{preset.name}`: {preset.description}" in description


def test_docs_table_lists_every_preset() -> None:
    text = (ROOT / "docs" / "algorithms.md").read_text(encoding="utf-8")
    table = text[: text.index("Notation:")]
    rows = re.findall(r"^\| `(\w+)`(?: \(default\))? \| [^|]+\| [^|]+\| ([^|]+)\|", table, re.M)
    assert sorted(name for name, _ in rows) == list(ALGORITHMS.names())
    for name, critic in rows:
        assert (critic.strip() != "none") == ALGORITHMS.get(name).trains_critic, name


# Where a name is registered or documented, not branched on.
_REGISTRY_HOMES = {
    "core/presets.py",
    "runtime/algorithms/advantages.py",
    "runtime/algorithms/losses.py",
}
# Known, being fixed elsewhere: the local trainer's OPD block (the `trn` branch makes it
# read `Algorithm.task_estimator`). Remove the entry when that lands; a stale entry fails.
# A call that runs a named estimator or loss (the name should come from a preset).
_RUNNERS = {"compute_advantages", "policy_loss", "actor_loss", "get_adv_estimator_fn"}


def _algorithm_names() -> set[str]:
    names = set(ALGORITHMS.names()) | set(ESTIMATORS.names()) | set(POLICY_LOSSES.names())
    return names | {f"agentspec_{n}" for n in names}


def _branches_on_a_name(tree: ast.AST, names: set[str]) -> list[tuple[int, str]]:
    def literal(node: ast.AST) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value if node.value in names else None
        return None

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for side in [node.left, *node.comparators]:
                elements = side.elts if isinstance(side, (ast.Tuple, ast.List, ast.Set)) else [side]
                found += [(node.lineno, v) for v in map(literal, elements) if v]
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            value = literal(node.args[0])
            if called in _RUNNERS and value:
                found.append((node.lineno, value))
    return found


def test_no_code_branches_on_an_algorithm_name() -> None:
    names = _algorithm_names()
    offenders: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative in _REGISTRY_HOMES:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for line, name in _branches_on_a_name(tree, names):
            offenders.append(f"{relative}:{line}: {name!r}")
    assert offenders == [], "branch on the preset's fields instead:\n" + "\n".join(offenders)


def test_the_scan_finds_a_name_comparison() -> None:
    code = 'if loss == "steppo" or algo in ("opd", "x"):\n    compute_advantages("grpo", b, c)\n'
    found = _branches_on_a_name(ast.parse(code), _algorithm_names())
    assert sorted(name for _, name in found) == ["grpo", "opd", "steppo"]


def test_registries_are_complete_whichever_name_comes_first() -> None:
    code = (
        "from agentspec.runtime.algorithms import ESTIMATORS as E\n"
        "from agentspec.core.presets import ALGORITHMS as A\n"
        "from agentspec.runtime.algorithms import POLICY_LOSSES as L\n"
        "for name in A:\n"
        "    E.get(A.get(name).estimator); L.get(A.get(name).loss)\n"
        "print('ok')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert result.stdout.strip() == "ok", result.stderr[-2000:]
