"""The build driver: a spec file → generated module + manifest (`compile_spec`),
written to disk, cached by spec and compiler, and imported (`import_spec`).

Generation itself is `lower.py` (checked spec → `ModuleModel`) and `emit.py`
(model → source).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import threading
from collections.abc import Collection
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType

from agentspec import __version__
from agentspec.compiler.emit import render_manifest, render_module
from agentspec.compiler.frontend import load_checked
from agentspec.compiler.lower import lower
from agentspec.core.diagnostics import SpecError
from agentspec.spec.imports import PythonImport, python_imports
from agentspec.spec.load import read_source


@dataclass(frozen=True)
class CompiledSpec:
    name: str
    sha256: str
    module_name: str
    source: str
    manifest: str
    spec_code: tuple[PythonImport, ...] = ()
    """What of the spec's own runs when it is played (`validate --list-imports`)."""


def spec_sha256(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def compile_spec(path: str | Path, waive: Collection[str] = ()) -> CompiledSpec:
    """Check and compile one spec. Raises `SpecError` for an invalid spec (errors whose
    code is in `waive` aside: they do not change the generated module)."""
    checked = load_checked(path, waive)
    digest = spec_sha256(path)
    model = lower(checked, spec_file=Path(path).name, spec_sha256=digest, version=__version__)
    module_name = f"{checked.spec.name.replace('-', '_')}_spec"
    source = render_module(model)
    return CompiledSpec(
        checked.spec.name,
        digest,
        module_name,
        source,
        render_manifest(model, f"{module_name}.py"),
        tuple(python_imports(checked.loaded)),
    )


def write_compiled(compiled: CompiledSpec, out_dir: str | Path) -> list[Path]:
    """Write the module and `manifest.json` into `out_dir`; returns the paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    module_path = out / f"{compiled.module_name}.py"
    manifest_path = out / "manifest.json"
    for path, text in ((module_path, compiled.source), (manifest_path, compiled.manifest)):
        # a temporary name of this writer's own: processes compiling the same spec into
        # the shared cache at once (test workers, concurrent runs) each replace the file
        # whole, instead of one renaming the other's half-written `.tmp` away
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    return [module_path, manifest_path]


def cache_dir() -> Path:
    return Path(os.environ.get("AGENTSPEC_CACHE", Path.home() / ".cache" / "agentspec"))


def fingerprint_sources() -> list[Path]:
    """The files whose bytes decide a generated module: the whole package's code,
    templates and grammar. Not only the compiler's: the spec model's defaults
    (written into ``TRAINING``), the registries that name algorithms, formats and
    context policies, and the runtime the module imports all shape it."""
    package = Path(__file__).resolve().parent.parent
    return sorted(
        path
        for pattern in ("*.py", "*.j2", "*.lark")
        for path in package.rglob(pattern)
        if "__pycache__" not in path.parts
    )


@cache
def compiler_fingerprint() -> str:
    """A hash of :func:`fingerprint_sources`: a module cached by another version
    of agentspec (a release, or an edited checkout) is never reused."""
    package = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256(__version__.encode())
    for path in fingerprint_sources():
        digest.update(path.relative_to(package).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def cache_key(path: str | Path) -> str:
    """The cache key of a spec: its bytes and the generator that compiles them."""
    return hashlib.sha256((spec_sha256(path) + compiler_fingerprint()).encode()).hexdigest()


def import_spec(path: str | Path, waive: Collection[str] = ()) -> ModuleType:
    """Compile into the cache (keyed by the spec and the generator) and import the
    module, bound to the spec's folder (data paths and user modules resolve there).
    Errors whose code is in `waive` do not stop it (`train` waives the training
    settings its overrides replace: `diagnostics.waived_by`); such a build is cached
    apart, so that a plain import of the same spec still reports them."""
    from agentspec.stdlib.user import bind_spec_dir

    if not Path(path).is_file():  # hashing a FIFO blocks; /dev/zero never ends
        _, problem = read_source(path)
        raise SpecError([problem] if problem is not None else [], {})
    digest = cache_key(path)
    if waive:
        digest = hashlib.sha256(f"{digest} waive {sorted(waive)}".encode()).hexdigest()
    target = cache_dir() / digest[:16]
    modules = list(target.glob("*_spec.py")) if target.is_dir() else []
    if not modules:
        modules = [write_compiled(compile_spec(path, waive), target)[0]]
    folder = Path(path).resolve().parent
    # Equal specs in two folders share the cached file, not the module object.
    place = hashlib.sha256(str(folder).encode()).hexdigest()[:8]
    module = import_file(modules[0], f"agentspec_generated_{digest[:16]}_{place}")
    bind_spec_dir(module, folder)
    return module


def import_file(module_path: Path, name: str) -> ModuleType:
    """Import a generated module from its file under `name` (once per process)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, module_path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    # Run from source rather than through the loader, which would cache bytecode in a
    # __pycache__ beside the file: in the user's output directory, next to what a compile wrote.
    exec(compile(module_path.read_bytes(), str(module_path), "exec"), module.__dict__)
    return module
