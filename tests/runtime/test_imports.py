from __future__ import annotations

import subprocess
import sys


def _modules_after(statement: str) -> set[str]:
    code = f"import sys\n{statement}\nprint(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return set(out.stdout.split())


def test_runtime_does_not_import_torch() -> None:
    loaded = _modules_after(
        "import agentspec.runtime\n"
        "from agentspec.runtime import AgentEnvLoop, ScriptedPolicy, OpenAIPolicy, load_tokenizer\n"
        "import agentspec.runtime.serve.completions_server"
    )
    assert "agentspec.runtime.episode.loop" in loaded
    assert "torch" not in loaded and "transformers" not in loaded


def test_hf_policy_does_import_torch() -> None:
    assert "torch" in _modules_after("import agentspec.runtime.policies.hf")


def test_only_the_verl_backend_imports_verl() -> None:
    # verl is pinned behind one adapter: every other module must import without it
    import ast
    from pathlib import Path

    package = Path(__file__).resolve().parents[2] / "agentspec"
    verl_backend = package / "runtime" / "backends" / "verl"
    offenders = []
    for path in package.rglob("*.py"):
        if verl_backend in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and node.level == 0
                else []
            )
            if any(name == "verl" or name.startswith("verl.") for name in names):
                offenders.append(f"{path.relative_to(package)}:{node.lineno}")
    assert offenders == []


def test_agentspec_and_the_session_import_no_foreign_trainer() -> None:
    """`import agentspec`, the CLI and the episode session import no openenv, trl or
    verifiers: only the OpenEnv server and the generated packages do."""
    loaded = _modules_after(
        "import agentspec\nimport agentspec.cli\nimport agentspec.runtime.serve.session"
    )
    assert "agentspec.runtime.serve.session" in loaded
    foreign = {m.split(".")[0] for m in loaded} & {"openenv", "trl", "verifiers", "torch"}
    assert foreign == set()
