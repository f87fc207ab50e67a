"""The GPU path's configuration, checked on a CPU: attention, vLLM's limits, the teacher.

- every model verl builds (actor, reference, critic) is given an attention
  implementation: FlashAttention-2 where ``flash_attn`` is importable, sdpa
  otherwise, and the critic engine builds the critic with it;
- vLLM's head sizes and processed log-probs are checked before launch;
- the OPD teacher's placement is checked and a large teacher left on the CPU is
  warned about.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from verl_helpers import SPEC

from agentspec.runtime.backends.local.models import BUILTIN_SHAPES
from agentspec.runtime.backends.verl.attention import (
    FLASH_ATTENTION_2,
    SDPA,
    attention_overrides,
    choose_attention,
    flash_attn_status,
)
from agentspec.runtime.backends.verl.placement import teacher_parameters, teacher_placement
from agentspec.runtime.backends.verl.vllm_rollout import sampling_note, vllm_head_size_error

GPU = {"trainer.device": "cuda", "model": "builtin:small"}
ATTENTION = "override_config.attn_implementation"


@pytest.fixture(autouse=True)
def _forget_flash_attn() -> Iterator[None]:
    """The chooser imports ``flash_attn``: a stub imported by one test must not stay in
    ``sys.modules`` for the next."""
    yield
    for name in [m for m in sys.modules if m == "flash_attn" or m.startswith("flash_attn.")]:
        del sys.modules[name]
    importlib.invalidate_caches()


def _stub_flash_attn(directory: Path) -> Path:
    """A directory holding an importable ``flash_attn`` package (empty: the chooser only
    asks whether the package is importable)."""
    (directory / "flash_attn").mkdir(parents=True)
    (directory / "flash_attn" / "__init__.py").write_text("")
    return directory


def test_the_chooser_takes_flash_attention_where_flash_attn_imports(tmp_path: Path) -> None:
    assert choose_attention(lambda: "not installed") == SDPA
    assert choose_attention(lambda: "installed but does not import (ImportError: …)") == SDPA
    assert choose_attention(lambda: "importable") == FLASH_ATTENTION_2
    # this machine: no flash-attn (a CPU install), so the default is sdpa
    assert importlib.util.find_spec("flash_attn") is None
    assert choose_attention() == SDPA


def test_a_flash_attn_that_is_found_but_does_not_import_is_not_chosen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # what a flash-attn wheel built against another torch does: found, then fails to import
    site = _stub_flash_attn(tmp_path / "site")
    (site / "flash_attn" / "__init__.py").write_text("raise ImportError('undefined symbol: X')\n")
    monkeypatch.syspath_prepend(str(site))
    assert importlib.util.find_spec("flash_attn") is not None
    assert choose_attention() == SDPA
    status = flash_attn_status()
    assert status.startswith("installed but does not import (ImportError: undefined symbol")


@pytest.mark.slow
@pytest.mark.parametrize("flash_attn", [False, True])
def test_gpu_config_names_the_attention_of_actor_reference_and_critic(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flash_attn: bool
) -> None:
    from verl.trainer.ppo.utils import need_critic, need_reference_policy

    from agentspec.runtime.backends.verl.dry_run import dry_run

    if flash_attn:
        monkeypatch.syspath_prepend(str(_stub_flash_attn(tmp_path / "site")))
    expected = FLASH_ATTENTION_2 if flash_attn else SDPA
    # steppo trains a critic; kl_coef > 0 makes verl load the reference policy
    result = dry_run(SPEC, tmp_path / "run", {**GPU, "algorithm": "steppo", "kl_coef": "0.01"})
    import yaml

    config = yaml.safe_load(result.config_yaml)
    from omegaconf import OmegaConf

    composed = OmegaConf.create(config)
    assert need_critic(composed) and need_reference_policy(composed)
    # the actor and the reference are built from actor_rollout_ref.model, the critic from
    # critic.model (verl 0.9.1 has no model section for the reference)
    assert "model" not in config["actor_rollout_ref"]["ref"]
    assert config["actor_rollout_ref"]["model"]["override_config"]["attn_implementation"] == (
        expected
    )
    assert config["critic"]["model"]["override_config"]["attn_implementation"] == expected
    for model in (config["actor_rollout_ref"]["model"], config["critic"]["model"]):
        assert model["use_remove_padding"] is flash_attn  # packed rows need flash-attn's kernels
    state = "importable" if flash_attn else "not installed"
    assert f"attention: actor and reference {expected}, critic {expected} " in result.render()
    assert f"(flash_attn {state} here)" in result.render()


def test_the_critic_engine_builds_the_critic_with_the_chosen_attention(tmp_path: Path) -> None:
    """verl's own value loader asks for flash_attention_2 whatever the config says; the
    critic engine's config builds a one-label token classifier with the config's attention
    from the policy's causal-LM checkpoint (a real transformers load)."""
    from transformers import AutoConfig
    from verl.utils.model import get_hf_auto_model_class, load_valuehead_model
    from verl_helpers import warm_started_tiny

    from agentspec.runtime.backends.verl.engines import value_model_config
    from agentspec.runtime.backends.verl.run_folder import build_verl_target

    target, _ = build_verl_target(SPEC, tmp_path / "target")
    policy = warm_started_tiny(target.module, target.model_dir, steps=1)
    hf_config = AutoConfig.from_pretrained(policy, attn_implementation=SDPA)
    assert hf_config.architectures == ["Qwen2ForCausalLM"]
    value_model_config(hf_config)
    auto_class = get_hf_auto_model_class(hf_config)
    critic = auto_class.from_pretrained(policy, config=hf_config, dtype=torch.float32)
    assert type(critic).__name__ == "Qwen2ForTokenClassification"
    assert critic.config._attn_implementation == SDPA
    values = critic(input_ids=torch.tensor([[1, 2, 3]])).logits
    assert tuple(values.shape) == (1, 3, 1)
    with pytest.raises(RuntimeError, match="not a value head model"):  # verl's own: flash-attn
        load_valuehead_model(str(policy), torch.float32, AutoConfig.from_pretrained(policy), False)


def test_attention_overrides_cover_both_model_sections() -> None:
    assert attention_overrides(FLASH_ATTENTION_2) == {
        f"+actor_rollout_ref.model.{ATTENTION}": FLASH_ATTENTION_2,
        f"+critic.model.{ATTENTION}": FLASH_ATTENTION_2,
    }
    assert attention_overrides(SDPA)["critic.model.use_remove_padding"] == "False"


def test_builtin_shapes_and_vllm_head_sizes() -> None:
    sizes = {name: s.hidden_size // s.num_heads for name, s in BUILTIN_SHAPES.items()}
    assert sizes == {"tiny": 16, "small": 32, "300m": 64}
    assert "head size 16" in (vllm_head_size_error(sizes["tiny"], "builtin:tiny") or "")
    assert vllm_head_size_error(sizes["small"], "builtin:small") is None
    assert vllm_head_size_error(sizes["300m"], "builtin:300m") is None
    assert vllm_head_size_error(128, "Qwen2.5-1.5B") is None  # what real checkpoints have
    assert vllm_head_size_error(36, "odd") is not None  # not a multiple of 8
    assert vllm_head_size_error(None, "unknown") is None


def test_processed_log_probs_match_only_without_top_p_and_top_k() -> None:
    assert sampling_note({}) is None
    assert sampling_note({"actor_rollout_ref.rollout.top_p": "1.0"}) is None
    note = sampling_note({"actor_rollout_ref.rollout.top_p": "0.9"})
    assert note is not None and "top_p=0.9" in note and "renormalised" in note
    assert sampling_note({"actor_rollout_ref.rollout.top_k": "20"}) is not None
    raw = {"actor_rollout_ref.rollout.top_k": "20", "actor_rollout_ref.rollout.logprobs_mode": "x"}
    assert sampling_note(raw) is None


def test_teacher_placement(tmp_path: Path) -> None:
    from agentspec.runtime.text.tiny_model import build_tiny

    model, _ = build_tiny(["a b c d"] * 4, tmp_path / "teacher")
    count = teacher_parameters(tmp_path / "teacher")
    assert count == sum(p.numel() for p in model.parameters())  # read from the headers only
    teacher = str(tmp_path / "teacher")
    kw = {"local_gpus": None, "pool_gpus": 1}
    assert teacher_placement(None, "trainer", 1, **kw).placement is None
    assert teacher_placement(teacher, "trainer", 1, **kw).notes == []  # a tiny teacher
    (warning,) = teacher_placement(teacher, "trainer", 1, large=1000, **kw).notes
    assert "scored on the CPU" in warning and "teacher_placement=gpu" in warning
    on_gpu = teacher_placement(teacher, "gpu", 1, local_gpus=8, pool_gpus=7)
    assert (on_gpu.placement, on_gpu.num_gpus) == ("gpu", 1.0)
    with pytest.raises(ValueError, match=r"lower trainer\.n_gpus_per_node"):
        teacher_placement(teacher, "gpu", 1, local_gpus=8, pool_gpus=8)
    with pytest.raises(ValueError, match="use trainer or gpu"):
        teacher_placement(teacher, "vllm", 1, **kw)


@pytest.mark.slow
def test_a_teacher_on_a_gpu_gets_its_logical_gpu_on_the_cpu_path(tmp_path: Path) -> None:
    from agentspec.runtime.backends.verl.launcher import prepared_run
    from agentspec.runtime.text.tiny_model import build_tiny

    build_tiny(["a b c d"] * 4, tmp_path / "teacher")
    user = {
        "algorithm": "opd",
        "teacher": str(tmp_path / "teacher"),
        "trainer.device": "cpu",
        "+trainer.v1.agentspec.teacher_placement": "gpu",
    }
    prepared = prepared_run(SPEC, tmp_path / "run", user)
    assert prepared.overrides["+ray_kwargs.ray_init.num_gpus"] == "2"  # verl's 1 + the teacher's
    assert any("Ray actor of its own" in note for note in prepared.notes)
    assert json.loads(json.dumps(prepared.notes))  # plain strings


@pytest.mark.slow
def test_a_teacher_in_an_actor_of_its_own_scores_as_the_one_in_the_trainer(tmp_path: Path) -> None:
    """Placement `gpu`: the teacher runs in a Ray actor asking for a GPU (here a logical
    one: it scores on the CPU in float32) and gives the trainer-placed teacher's numbers."""
    import ray

    from agentspec.runtime.backends.verl.teacher import RemoteTeacher, TeacherScorer, make_teacher
    from agentspec.runtime.text.tiny_model import build_tiny

    build_tiny(["a b c d e f"] * 4, tmp_path / "teacher")
    teacher = str(tmp_path / "teacher")
    prompts = [torch.tensor([1, 2, 3]), torch.tensor([4, 5])]
    responses = [torch.tensor([6, 7]), torch.tensor([8, 9, 10])]
    local = make_teacher(teacher, teacher, temperature=1.0)
    assert isinstance(local, TeacherScorer) and local.where() == ("cpu", "torch.float32")
    expected = local.log_probs(prompts, responses, width=4)
    ray.init(num_cpus=2, num_gpus=1, include_dashboard=False)
    try:
        remote = make_teacher(teacher, teacher, 1.0, placement="gpu", num_gpus=1)
        assert isinstance(remote, RemoteTeacher)
        assert (remote.device, remote.dtype) == ("cpu", "torch.float32")  # no CUDA here
        torch.testing.assert_close(remote.log_probs(prompts, responses, width=4), expected)
        assert ray.available_resources().get("GPU", 0) == 0  # the actor holds the GPU
    finally:
        ray.shutdown()


@pytest.mark.slow
@pytest.mark.parametrize("launched_by_agentspec", [True, False])
def test_the_critic_engine_is_registered_for_nvidia_gpus_in_agentspec_runs_only(
    launched_by_agentspec: bool,
) -> None:
    """verl's plugin entry point loads agentspec in every verl run of the environment:
    only a run agentspec launched (its workers' environment) replaces verl's critic engine."""
    import os
    import subprocess
    import sys

    from verl_helpers import ROOT

    from agentspec.runtime.backends.verl import ENGINES_ENV, PLUGIN_MODULE

    code = (
        "import verl\n"
        "from verl.workers.engine.base import EngineRegistry\n"
        "backends = EngineRegistry._engines['value_model']\n"
        "print([getattr(backends[b].get(('cuda', 'nvidia')), '__name__', None)"
        " for b in ('fsdp', 'fsdp2')])\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in (ENGINES_ENV, "VERL_PLATFORM")}
    env["VERL_USE_EXTERNAL_MODULES"] = PLUGIN_MODULE
    if launched_by_agentspec:
        env[ENGINES_ENV] = "1"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    expected = ["ValueEngine"] * 2 if launched_by_agentspec else [None, None]
    assert result.stdout.strip().splitlines()[-1] == str(expected)


@pytest.mark.slow
def test_the_teacher_is_bfloat16_on_the_gpu_path_and_float32_on_the_cpu_path(
    tmp_path: Path,
) -> None:
    """Issue 51 item 7: the GPU path's teacher no longer defaults to float32 (in the task
    runner it runs on a CPU); the CPU path keeps the local backend's float32."""
    from agentspec.runtime.backends.verl.launcher import prepared_run
    from agentspec.runtime.backends.verl.teacher import TeacherScorer
    from agentspec.runtime.text.tiny_model import build_tiny

    build_tiny(["a b c d"] * 4, tmp_path / "teacher")
    opd = {"algorithm": "opd", "teacher": str(tmp_path / "teacher")}
    key = "+trainer.v1.agentspec.teacher_dtype"
    gpu = prepared_run(SPEC, tmp_path / "gpu", {**opd, **GPU})
    assert gpu.overrides[key] == "bfloat16"
    cpu = prepared_run(SPEC, tmp_path / "cpu", {**opd, "trainer.device": "cpu"})
    assert cpu.overrides[key] == "float32"
    kept = prepared_run(SPEC, tmp_path / "kept", {**opd, **GPU, key: "float32"})
    assert kept.overrides[key] == "float32"  # the user's choice wins
    # the scorer honours it on a CPU: bfloat16 log-probs close to float32's
    teacher = tmp_path / "teacher"
    rows = ([torch.tensor([1, 2, 3])], [torch.tensor([4, 5, 6, 7])])
    half = TeacherScorer(teacher, teacher, 1.0, device="cpu", dtype="bfloat16")
    full = TeacherScorer(teacher, teacher, 1.0, device="cpu", dtype="float32")
    assert half.where() == ("cpu", "torch.bfloat16")
    diff = (half.log_probs(*rows, width=4) - full.log_probs(*rows, width=4)).abs().max()
    assert 0 < float(diff) < 0.1
    with pytest.raises(ValueError, match="teacher_dtype='float16': give bfloat16 or float32"):
        TeacherScorer(teacher, teacher, 1.0, device="cpu", dtype="float16")
