"""The recipe tests run on the real data folder: `$AGENTSPEC_DATA`, by default
`../shared/data` (resolved from the repository root, so any working directory
works). Indexes and tokenizers go to a per-session cache; nothing is downloaded."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def data_folder() -> Path:
    raw = os.environ.get("AGENTSPEC_DATA", "../shared/data")
    path = Path(raw)
    return path if path.is_absolute() else (ROOT / path).resolve()


@pytest.fixture(scope="session", autouse=True)
def recipe_environment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = data_folder()
    if not (folder / "README.md").is_file():
        pytest.fail(f"the shared data folder {folder} is missing (set $AGENTSPEC_DATA)")
    saved = {k: os.environ.get(k) for k in ("AGENTSPEC_DATA", "AGENTSPEC_CACHE")}
    saved |= {k: os.environ.get(k) for k in ("HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE")}
    os.environ["AGENTSPEC_DATA"] = str(folder)
    os.environ["AGENTSPEC_CACHE"] = str(tmp_path_factory.mktemp("agentspec-cache"))
    os.environ["HF_DATASETS_OFFLINE"] = "1"  # nothing may be downloaded
    os.environ["HF_HUB_OFFLINE"] = "1"
    yield folder
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
