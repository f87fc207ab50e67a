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
        "import agentspec.runtime.policies.serve"
    )
    assert "agentspec.runtime.loop" in loaded
    assert "torch" not in loaded and "transformers" not in loaded


def test_hf_policy_does_import_torch() -> None:
    assert "torch" in _modules_after("import agentspec.runtime.policies.hf")
