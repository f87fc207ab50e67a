"""The `agentspec-validate` pre-commit hook (.pre-commit-hooks.yaml) blocks a commit
of a broken spec in a fresh git repository and lets the fixed one through."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
HOOKS = ROOT / ".pre-commit-hooks.yaml"
BROKEN = ROOT / "tests" / "specs" / "invalid" / "name_unknown_state.yaml"
GOOD = ROOT / "specs" / "calculator.yaml"


def pre_commit() -> str:
    exe = Path(sys.executable).with_name("pre-commit")
    if not exe.exists():
        pytest.fail(
            "the pre-commit hook test needs the `pre-commit` tool in the virtual "
            "environment: pip install pre-commit",
            pytrace=False,
        )
    return str(exe)


def test_manifest_is_valid_and_matches_spec_files() -> None:
    pre_commit()
    from pre_commit.clientlib import load_manifest

    hooks = {h["id"]: h for h in load_manifest(str(HOOKS))}
    assert set(hooks) == {"agentspec-validate", "agentspec-validate-strict", "agentspec-test"}
    assert hooks["agentspec-test"]["entry"] == "agentspec test"
    assert hooks["agentspec-test"]["files"] == hooks["agentspec-validate"]["files"]
    hook = hooks["agentspec-validate"]
    assert hook["entry"] == "agentspec validate" and hook["language"] == "python"
    files = re.compile(hook["files"])
    for path in ("specs/shop.yaml", "specs/a.yml", "project/specs/nested/b.yaml"):
        assert files.search(path), path
    for path in (".pre-commit-config.yaml", ".github/workflows/ci.yml", "specs.md"):
        assert not files.search(path), path


GIT_ENV = {
    "GIT_AUTHOR_NAME": "test",
    "GIT_AUTHOR_EMAIL": "test@example.org",
    "GIT_COMMITTER_NAME": "test",
    "GIT_COMMITTER_EMAIL": "test@example.org",
}


def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **GIT_ENV, "PRE_COMMIT_HOME": str(cwd.parent / "pre-commit-home")}
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=check, env=env
    )


@pytest.mark.slow
def test_hook_blocks_a_broken_spec_in_a_temporary_repo(tmp_path: Path) -> None:
    exe = pre_commit()
    env = {**os.environ, **GIT_ENV, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home")}
    # The hook repository: this project's installable files as they are now
    # (committed or not), as pre-commit would clone them from a tag.
    hook_repo = tmp_path / "agentspec-hooks"
    hook_repo.mkdir()
    for name in ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml"):
        shutil.copy(ROOT / name, hook_repo / name)
    shutil.copytree(
        ROOT / "agentspec", hook_repo / "agentspec", ignore=shutil.ignore_patterns("__pycache__")
    )
    git(hook_repo, "init", "-q")
    git(hook_repo, "add", "-A")
    git(hook_repo, "commit", "-qm", "hooks")
    rev = git(hook_repo, "rev-parse", "HEAD").stdout.strip()

    project = tmp_path / "project"
    (project / "specs").mkdir(parents=True)
    git(project, "init", "-q")
    config = {
        "repos": [{"repo": str(hook_repo), "rev": rev, "hooks": [{"id": "agentspec-validate"}]}]
    }
    (project / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config))
    subprocess.run([exe, "install"], cwd=project, check=True, capture_output=True, env=env)

    shutil.copy(BROKEN, project / "specs" / "shop.yaml")
    (project / "notes.yaml").write_text("not: [a spec\n")  # outside specs/: not checked
    git(project, "add", "-A")
    blocked = git(project, "commit", "-m", "broken spec", check=False)
    output = blocked.stdout + blocked.stderr
    assert blocked.returncode != 0, output
    assert "agentspec validate" in output and "Failed" in output
    assert "specs/shop.yaml:17:17: error[E402]: unknown state variable 'pgae'" in output
    assert git(project, "rev-list", "--all").stdout == ""  # nothing was committed

    shutil.copy(GOOD, project / "specs" / "shop.yaml")
    git(project, "add", "-A")
    passed = git(project, "commit", "-m", "fixed spec", check=False)
    output = passed.stdout + passed.stderr
    assert passed.returncode == 0, output
    assert re.search(r"agentspec validate\.+Passed", output), output
