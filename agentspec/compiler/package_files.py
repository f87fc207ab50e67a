"""The local files a spec reads when it runs, copied into a package of it.

A package written by `agentspec compile --target trl | verifiers | openenv`
holds a copy of the spec, and its code loads that copy: relative data paths and
the spec's own Python modules then resolve against the copy's folder (the
generated module's ``SPEC_DIR``, which is also put first on ``sys.path``). So
every file the spec names relative to its folder is copied there too, at the
same relative place, and the copied spec needs no change:

- the data file or folder of ``data.source`` (``jsonl:PATH``, ``parquet:PATH``,
  a local ``hf:`` folder);
- a relative path among the values of ``data.params`` and of a function's
  ``config`` that exists in the spec's folder (what the runtime reads from
  there: :func:`agentspec.stdlib.user.resolve_config_paths`);
- the spec-local module of every ``module:attr`` the spec names
  (``functions.NAME.impl``, ``generator:module:attr``, ``environment.adapter``,
  ``oracle.hook``, ``context.custom``): ``NAME.py``, or the whole package
  folder ``NAME/``; and, transitively, the spec-local modules those import;
- for an ``mcp.NAME.command`` (run in the spec's folder): its arguments that
  name files or folders there, and the module of ``-m MODULE``.

A module found elsewhere (installed, or on ``PYTHONPATH``) is a dependency of
the package, not part of it. Absolute paths, ``~`` and ``${AGENTSPEC_DATA}`` (or
any ``$VARIABLE``) paths name a place on the machine, not in the spec's folder:
they are left as they are and read from there. A relative path that leaves the
spec's folder (``../data.jsonl``) cannot be copied without rewriting the spec:
:class:`PackageFileError` says so and how to fix it (unless the package's spec
folder is the spec's own folder, where every path still resolves).
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from agentspec.compiler.static_signature import MAX_SOURCE_BYTES
from agentspec.stdlib.data import DATA_ENV, DataError, data_root, resolve_path

__all__ = [
    "PackageFileError",
    "SpecFile",
    "copy_spec_files",
    "data_root_files",
    "package_data",
    "package_folders",
    "spec_files",
    "spec_variables",
]

# Never copied: the package depends on agentspec, it does not hold a copy of it.
NOT_COPIED_MODULES = frozenset({"agentspec"})
SKIPPED_NAMES = frozenset({"__pycache__", ".git", ".hg", ".svn", ".mypy_cache", ".pytest_cache"})


class PackageFileError(DataError):
    """A file the spec reads that a package of it cannot hold, with what to do about it."""


@dataclass(frozen=True)
class SpecFile:
    """One file or folder the spec reads at run time, in its folder."""

    field: str  # where the spec names it: "data.source", "functions.convert.impl", ...
    source: Path  # the file or folder as it is now
    relative: PurePosixPath  # its place relative to the spec's folder


def spec_files(spec_path: Path, into: Path | None = None) -> list[SpecFile]:
    """Every file and folder under the spec's folder that the spec reads at run time.

    ``into``: the folder the spec's copy goes to; when it is the spec's own folder,
    nothing needs copying (and a path outside it still resolves): []. Raises
    :class:`PackageFileError` for a relative path outside the spec's folder.
    """
    spec_dir = spec_path.resolve().parent
    if into is not None and into.resolve() == spec_dir:
        return []
    return _Finder(spec_path, spec_dir).find()


def data_root_files(spec_path: Path) -> list[SpecFile]:
    """Every file and folder under ``${AGENTSPEC_DATA}`` that the spec names (in
    ``data.source``, ``data.params``, the functions' and the environment adapter's
    ``config``), with its place
    relative to the data root; what does not exist on this machine is left out (the
    runtime reports it where it reads it). A library default the spec does not name
    is not among them."""
    spec_dir = spec_path.resolve().parent
    finder = _Finder(spec_path, spec_dir)
    finder.find()
    return sorted(finder.data_root_found.values(), key=lambda f: f.relative.as_posix())


_VARIABLE = re.compile(r"\$\{([A-Za-z_]\w*)\}|\$([A-Za-z_]\w*)")


def spec_variables(spec_path: Path) -> list[str]:
    """The environment variables the spec's paths and configs name (``$NAME`` or
    ``${NAME}`` in ``data.source``, ``data.params``, the functions' and the environment
    adapter's ``config``): what the runtime expands where it reads them, so a process
    that runs the spec's tools needs them set as the driver has them."""
    finder = _Finder(spec_path, spec_path.resolve().parent)
    spec = finder.load()
    sections: list[object] = []
    if spec.data is not None:
        sections += [spec.data.source, spec.data.params]
    sections += [f.config for f in spec.functions.values()]
    if spec.environment is not None:
        sections.append(spec.environment.config)
    names: set[str] = set()
    for text in _strings(sections):
        names.update(a or b for a, b in _VARIABLE.findall(text))
    return sorted(names)


def _strings(value: object) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def copy_spec_files(
    spec_path: Path, into: Path, reserved: Iterable[Path] = (), exclude: Iterable[Path] = ()
) -> list[Path]:
    """Copy :func:`spec_files` into ``into`` (the folder of the spec's copy), at the
    same relative places; the files written. ``reserved``: files the package writes
    itself, which a copy must not replace; ``exclude``: folders never copied into
    the package (the package's own, when it lies inside a copied folder)."""
    found = spec_files(spec_path, into)
    spec_dir = spec_path.resolve().parent
    taken = {p.resolve() for p in reserved}
    skipped = {p.resolve() for p in [into, *exclude]}
    written: dict[Path, None] = {}  # in order, once each (a file may be in a copied folder too)
    for item in found:
        destination = into.joinpath(*item.relative.parts)
        if item.source.is_dir():
            sources = [p for p in _tree(item.source, skipped, root=spec_dir) if p.is_file()]
            pairs = [(p, destination / p.relative_to(item.source)) for p in sources]
        else:
            pairs = [(item.source, destination)]
        for source, target in pairs:
            if target.resolve() in taken:
                raise PackageFileError(
                    f"{item.field}: {item.relative} would replace {target.name}, which the "
                    "package writes itself; rename it in the spec's folder"
                )
            target.parent.mkdir(parents=True, exist_ok=True)
            if not (target.exists() and os.path.samefile(source, target)):
                shutil.copy2(source, target)
            written[target] = None
    return list(written)


def package_data(folder: Path, files: Iterable[Path]) -> list[str]:
    """``files`` relative to ``folder`` (a package's), as setuptools' package-data lists them."""
    return sorted({f.relative_to(folder).as_posix() for f in files})


def package_folders(folder: Path, files: Iterable[Path]) -> list[str]:
    """The folders of ``files`` below ``folder``, dotted, that Python could import as
    packages: setuptools wants them listed as packages (their files stay package data)."""
    found: set[str] = set()
    for file in files:
        parts = file.relative_to(folder).parts[:-1]
        for end in range(1, len(parts) + 1):
            if all(part.isidentifier() for part in parts[:end]):
                found.add(".".join(parts[:end]))
    return sorted(found)


def _tree(
    folder: Path, skipped: set[Path], seen: set[Path] | None = None, *, root: Path
) -> list[Path]:
    """The files and folders under ``folder``, without caches, VCS folders and ``skipped``
    (a folder linked from inside itself is walked once); a link out of ``root`` (the
    spec's folder) is a PackageFileError."""
    seen = set() if seen is None else seen
    seen.add(folder.resolve())
    found: list[Path] = []
    for path in sorted(folder.iterdir()):
        if path.name in SKIPPED_NAMES or path.suffix in (".pyc", ".pyo"):
            continue
        if path.resolve() in skipped or path.resolve() in seen:
            continue
        outside_link(path, root, str(folder))
        found.append(path)
        if path.is_dir():
            found.extend(_tree(path, skipped, seen, root=root))
    return found


def outside_link(path: Path, root: Path, field: str) -> None:
    """A PackageFileError when ``path`` (in the spec's folder) resolves outside ``root``
    through a link: a package would carry whatever the link names (`/etc/passwd`, a
    home folder) under the spec's own paths."""
    real, inside = path.resolve(), root.resolve()
    if real != inside and inside not in real.parents:
        raise PackageFileError(
            f"{field}: {path} is a link to {real}, outside the spec's folder ({inside}), so a"
            " compiled package would carry that file; put a copy in the spec's folder, or give"
            f" its absolute path or ${{{DATA_ENV}}}/... to read it where it is"
        )


class _Finder:
    """Walks the spec's references; ``find`` lists what they name in its folder."""

    def __init__(self, spec_path: Path, spec_dir: Path) -> None:
        self.spec_path = spec_path
        self.spec_dir = spec_dir
        self.found: dict[PurePosixPath, SpecFile] = {}
        self.data_root_found: dict[PurePosixPath, SpecFile] = {}

    def load(self) -> Any:
        """The spec, loaded again (it was compiled a moment ago: a PackageFileError if
        the file changed since and no longer loads)."""
        from agentspec.spec.load import load_spec, read_source

        source, problem = read_source(self.spec_path)
        loaded, diagnostics = load_spec(source) if source is not None else (None, [])
        if loaded is None:
            first = next((d for d in [problem, *diagnostics] if d is not None), None)
            reason = first.message if first is not None else "it is not a valid spec"
            raise PackageFileError(f"cannot read {self.spec_path} again: {reason}")
        self.loaded = loaded
        return loaded.spec

    def find(self) -> list[SpecFile]:
        from agentspec.spec.imports import python_imports

        spec = self.load()
        loaded = self.loaded
        if spec.data is not None:
            self._data_source(spec.data.source)
            self._config("data.params", spec.data.params)
        for name, function in spec.functions.items():
            self._config(f"functions.{name}.config", function.config)
        if spec.environment is not None:
            self._config("environment.config", spec.environment.config)
        for item in python_imports(loaded):
            if item.kind == "command":
                server = spec.mcp[item.field.split(".")[1]]
                command = server.command or []
                words = shlex.split(command) if isinstance(command, str) else list(command)
                self._command(item.field, words)
            elif item.module is not None:
                self._module(item.field, item.module)
        return sorted(self.found.values(), key=lambda f: f.relative.as_posix())

    # ------------------------------------------------------------ paths

    def _data_source(self, source: str) -> None:
        kind, _, location = source.partition(":")
        if kind in ("jsonl", "parquet"):
            self._path("data.source", location)
        elif kind == "hf" and (DATA_ENV in location or location.startswith((".", "/", "~"))):
            self._path("data.source", location)  # a local dataset folder, not a hub id

    def _config(self, field: str, config: dict[str, object]) -> None:
        """The values the runtime reads as paths in the spec's folder
        (:func:`agentspec.stdlib.user.resolve_config_paths`)."""
        for key, value in config.items():
            if isinstance(value, str) and value.startswith("$"):
                self._data_root_path(f"{field}.{key}", value)
            if not isinstance(value, str) or not value or value.startswith(("$", "/", "~")):
                continue
            if ("/" in value or "." in value) and _exists(self.spec_dir / value):
                self._path(f"{field}.{key}", value)

    def _command(self, field: str, words: list[str]) -> None:
        """An MCP server's command line, run in the spec's folder: the files it names there."""
        for index, word in enumerate(words):
            if index > 0 and words[index - 1] == "-m":
                self._module(field, word)
                continue
            for part in {word, word.partition("=")[2]} - {""}:
                if not part.startswith("-") and _exists(self.spec_dir / part):
                    self._path(field, part)

    def _path(self, field: str, raw: str) -> None:
        """One path as the runtime resolves it (:func:`agentspec.stdlib.data.resolve_path`):
        a machine path is left alone; a relative one must stay in the spec's folder."""
        expanded = resolve_path(raw)
        if raw.startswith("$") or expanded.is_absolute():
            self._data_root_path(field, raw)
            return  # ${AGENTSPEC_DATA}, $VAR, ~ or absolute: read from that place
        place = Path(os.path.normpath(self.spec_dir / expanded))
        relative = os.path.relpath(place, self.spec_dir)
        if relative == ".":
            return  # the spec's folder itself: the package's copy stands for it
        if relative == ".." or relative.startswith(".." + os.sep):
            raise PackageFileError(
                f"{field}: {raw} is outside the spec's folder ({self.spec_dir}), so a compiled "
                "package cannot hold it under the same path. Move it into the spec's folder "
                "(or a folder below it) and refer to it from there, or give its absolute path "
                f"or ${{{DATA_ENV}}}/... to read it from where it is on the machine that runs "
                "the package"
            )
        if not _exists(place):
            return  # the runtime reports a missing file itself, where it reads it
        self._add(field, place, PurePosixPath(Path(relative).as_posix()))

    def _data_root_path(self, field: str, raw: str) -> None:
        """A path under ``${AGENTSPEC_DATA}``, kept apart: a package reads it from the
        machine's data root, a verl run ships it (what is outside the root is not)."""
        for prefix in (f"${{{DATA_ENV}}}/", f"${DATA_ENV}/"):
            if raw.startswith(prefix):
                relative = os.path.normpath(raw[len(prefix) :])
                break
        else:
            return
        if relative in (".", "..") or relative.startswith(("..", "/")) or "$" in relative:
            return
        place = data_root() / relative
        if _exists(place):
            key = PurePosixPath(Path(relative).as_posix())
            self.data_root_found.setdefault(key, SpecFile(field, place, key))

    def _add(self, field: str, source: Path, relative: PurePosixPath) -> None:
        if relative in self.found:
            return
        outside_link(source, self.spec_dir, field)
        self.found[relative] = SpecFile(field, source, relative)
        files = (
            [source]
            if source.is_file()
            else [p for p in _tree(source, set(), root=self.spec_dir) if p.is_file()]
        )
        for file in files:
            if file.suffix == ".py":
                for module in _imported_modules(file):
                    self._module(field, module)

    # ------------------------------------------------------------ modules

    def _module(self, field: str, dotted: str) -> None:
        """The spec-local file or package folder of ``dotted`` (its top-level name), as
        an import with the spec's folder first on ``sys.path`` finds it."""
        top, *rest = dotted.split(".")
        if top in NOT_COPIED_MODULES or not top.isidentifier():
            return
        folder, file = self.spec_dir / top, self.spec_dir / f"{top}.py"
        if _is_dir(folder) and _exists(folder / "__init__.py"):
            self._add(field, folder, PurePosixPath(top))
        elif _exists(file):
            self._add(field, file, PurePosixPath(f"{top}.py"))
        elif _is_dir(folder) and rest:  # a namespace package: only if it holds the module
            inner = folder.joinpath(*rest)
            if _exists(inner.with_suffix(".py")) or _is_dir(inner):
                self._add(field, folder, PurePosixPath(top))


def _imported_modules(path: Path) -> list[str]:
    """The absolute imports of a Python file (its top-level code and functions)."""
    try:
        if path.stat().st_size > MAX_SOURCE_BYTES:  # validate does not read it either
            return []
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError, RecursionError):
        return []
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append(node.module)
    return found


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except (OSError, ValueError):  # a name no file system takes: not a path after all
        return False


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False
