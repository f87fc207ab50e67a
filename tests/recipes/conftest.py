"""The recipe tests run on the real data folder: `$AGENTSPEC_DATA`, by default
`../shared/data` (resolved from the repository root, so any working directory
works). Indexes and tokenizers go to a per-session cache; nothing is downloaded."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def data_folder() -> Path:
    raw = os.environ.get("AGENTSPEC_DATA", "../shared/data")
    path = Path(raw)
    return path if path.is_absolute() else (ROOT / path).resolve()


@pytest.fixture(scope="session")
def recipe_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache of indexes and tokenizers for the whole run (built once)."""
    return tmp_path_factory.mktemp("agentspec-cache")


@pytest.fixture(scope="package", autouse=True)
def recipe_environment(recipe_cache: Path) -> Iterator[Path]:
    """The data folder, the cache and offline Hugging Face libraries, for the
    recipe tests only: the variables are restored when the package's tests end."""
    folder = data_folder()
    if not (folder / "README.md").is_file():
        pytest.fail(f"the shared data folder {folder} is missing (set $AGENTSPEC_DATA)")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AGENTSPEC_DATA", str(folder))
        patch.setenv("AGENTSPEC_CACHE", str(recipe_cache))
        patch.setenv("HF_DATASETS_OFFLINE", "1")  # nothing may be downloaded
        patch.setenv("HF_HUB_OFFLINE", "1")
        # The libraries read those variables once, at import: where another test of this
        # worker imported them already, their flags are set as the import would have
        # (else they try the network, and wait for it to time out).
        for module, names in _OFFLINE_FLAGS.items():
            if module in sys.modules:
                for name in names:
                    patch.setattr(sys.modules[module], name, True)
        yield folder


_OFFLINE_FLAGS = {
    "huggingface_hub.constants": ("HF_HUB_OFFLINE",),
    "datasets.config": ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"),
}
