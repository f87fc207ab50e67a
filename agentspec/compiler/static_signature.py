"""The signature of a user's function, read from its source without running it.

Plain `agentspec validate` never imports the user's modules (their import-time
code could do anything), yet a `functions:` entry whose `impl` does not fit
its declaration — a `config` given to a function that is not a factory —
should fail there, not at the first call of a training run. So the module's
file is found as Python would find it (the spec's folder first, then
`sys.path`, for the top-level name only, which runs no code) and parsed with
`ast`: a plain `def NAME` or a `class NAME` (its `__init__`) at the module's
top level gives an `inspect.Signature`. Anything else — a decorated function,
an assignment, an attribute of an attribute, a compiled module — gives None,
and is checked only by `validate --import`.

`spec_local_module`, `parse_source` and `top_level_names` tell, the same way,
whether a module beside the spec parses and which names its top level binds,
so that validate reports a syntax error or a missing attribute there.
"""

from __future__ import annotations

import ast
import importlib.machinery
import importlib.util
import inspect
import sys
from dataclasses import dataclass
from pathlib import Path

MAX_SOURCE_BYTES = 1_000_000  # a user module larger than this is not read


def module_file(spec_dir: Path, module_name: str) -> Path | None:
    """The source file of `module_name` (`pkg.mod` too), as an import would find it."""
    top, *rest = module_name.split(".")
    roots = [spec_dir / f"{top}.py", spec_dir / top]
    try:
        found = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        found = None
    if found is not None and found.origin and found.origin.endswith(".py"):
        origin = Path(found.origin)
        roots.append(origin.parent if origin.name == "__init__.py" else origin)
    for root in roots:
        candidate = root.joinpath(*rest) if rest else root
        for path in (candidate.with_suffix(".py"), candidate / "__init__.py", candidate):
            try:
                if path.suffix == ".py" and path.is_file():
                    return path
            except (OSError, ValueError):
                return None
    return None


def static_signature(path: Path, attribute: str) -> inspect.Signature | None:
    """The signature of top-level `attribute` in the module at `path`, if it
    is a plain function or class definition."""
    try:
        if path.stat().st_size > MAX_SOURCE_BYTES:
            return None
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError, RecursionError):
        return None
    found: ast.AST | None = None
    for node in tree.body:  # the last definition wins, as at import
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found = node if node.name == attribute else found
    if isinstance(found, ast.ClassDef):
        init = [n for n in found.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"]
        if found.decorator_list or found.bases or len(init) != 1 or init[0].decorator_list:
            return None  # a base class or a decorator may supply or change __init__
        return _signature(init[0].args, skip_self=True)
    if isinstance(found, (ast.FunctionDef, ast.AsyncFunctionDef)) and not found.decorator_list:
        return _signature(found.args, skip_self=False)
    return None


class SourceDefault:
    """A parameter's default as its source spells it (never evaluated): a signature in
    a hint reads `make(*, style='short')`, as the user wrote it."""

    def __init__(self, node: ast.expr) -> None:
        try:
            text = ast.unparse(node)
        except (ValueError, RecursionError):
            text = "…"
        self.text = text if len(text) <= 60 else text[:59] + "…"

    def __repr__(self) -> str:
        return self.text


def _signature(args: ast.arguments, skip_self: bool) -> inspect.Signature:
    kind = inspect.Parameter
    positional: list[tuple[ast.arg, inspect._ParameterKind]]
    positional = [(a, kind.POSITIONAL_ONLY) for a in args.posonlyargs]
    positional += [(a, kind.POSITIONAL_OR_KEYWORD) for a in args.args]
    if skip_self and positional:
        positional = positional[1:]
    first_default = len(positional) - len(args.defaults)
    parameters = [
        kind(
            a.arg,
            k,
            default=SourceDefault(args.defaults[i - first_default])
            if i >= first_default
            else kind.empty,
        )
        for i, (a, k) in enumerate(positional)
    ]
    if args.vararg is not None:
        parameters.append(kind(args.vararg.arg, kind.VAR_POSITIONAL))
    for a, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        parameters.append(
            kind(
                a.arg,
                kind.KEYWORD_ONLY,
                default=kind.empty if default is None else SourceDefault(default),
            )
        )
    if args.kwarg is not None:
        parameters.append(kind(args.kwarg.arg, kind.VAR_KEYWORD))
    return inspect.Signature(parameters)


# ------------------------------------------------------- spec-local modules

# Names whose use lets a module bind names its source does not spell:
# `globals()[name] = …`, `exec(…)`, `vars()`, `sys.modules[__name__]`, ….
_DYNAMIC_NAMES = frozenset({"globals", "vars", "locals", "exec", "eval", "__import__"})
_DYNAMIC_ATTRIBUTES = frozenset({"modules", "__dict__", "import_module"})


@dataclass(frozen=True)
class LocalModule:
    """A module that an import would load from the spec's folder, as its source shows it.

    `files` are the sources the import runs, outermost first (each enclosing
    package's `__init__.py`, then the module's own file); `source` is the
    module's own file (None for a namespace package), `package_dir` its folder
    when it is a package; `missing` names a submodule that is not there.
    """

    name: str
    files: tuple[Path, ...]
    source: Path | None
    package_dir: Path | None = None
    missing: str | None = None


def spec_local_module(spec_dir: Path, module_name: str) -> LocalModule | None:
    """The module `module_name` as an import from the spec's folder would find
    it, without running anything; None when it is not beside the spec or when
    its source cannot tell (a compiled module, a name Python has already
    imported, a package that changes its `__path__`)."""
    parts = module_name.split(".")
    top = parts[0]
    if top in sys.stdlib_module_names or top in sys.builtin_module_names or top in sys.modules:
        return None  # an import finds the standard library's (or the loaded) module first
    files: list[Path] = []
    folder, parent = spec_dir, ""
    for depth, part in enumerate(parts):
        found = _locate(folder, part)
        if found is None:
            if depth == 0 or parent == "namespace":
                return None  # installed (left to --import), or in another portion of a namespace
            return LocalModule(
                module_name, tuple(files), None, missing=".".join(parts[: depth + 1])
            )
        kind, where = found
        if kind == "other" or (depth == 0 and kind == "namespace" and _installed(top)):
            return None  # compiled code; or a regular package elsewhere, which an import prefers
        source = where / "__init__.py" if kind == "package" else where
        if kind != "namespace":
            files.append(source)
        if depth == len(parts) - 1:
            return LocalModule(
                module_name,
                tuple(files),
                None if kind == "namespace" else source,
                None if kind == "module" else where,
            )
        if kind == "module":  # a plain module has no submodules
            return LocalModule(
                module_name, tuple(files), None, missing=".".join(parts[: depth + 2])
            )
        if kind == "package" and _mentions(source, "__path__"):
            return None  # the package changes where its submodules are found
        folder, parent = where, kind
    return None  # pragma: no cover - the loop returns


def _installed(top: str) -> bool:
    """Whether `sys.path` has a module or regular package `top` (finding a
    top-level name runs no code)."""
    try:
        found = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return True
    return found is not None and found.origin is not None


def _locate(folder: Path, name: str) -> tuple[str, Path] | None:
    """What `import name` finds in `folder`, in the order of Python's path finder:
    a package (`name/__init__.*`), a module (`name.so`, `name.py`, `name.pyc`),
    then a namespace package (a folder without `__init__`). The kind is
    "package", "module", "namespace" or "other" (compiled code: not readable)."""
    suffixes = [
        *importlib.machinery.EXTENSION_SUFFIXES,
        *importlib.machinery.SOURCE_SUFFIXES,
        *importlib.machinery.BYTECODE_SUFFIXES,
    ]
    try:
        base = folder / name
        namespace = base.is_dir()
        if namespace:
            for suffix in suffixes:
                if (base / f"__init__{suffix}").is_file():
                    return ("package" if suffix == ".py" else "other", base)
        for suffix in suffixes:
            candidate = folder / f"{name}{suffix}"
            if candidate.is_file():
                return ("module" if suffix == ".py" else "other", candidate)
    except (OSError, ValueError):
        return "other", folder
    return ("namespace", base) if namespace else None


def has_submodule(package_dir: Path | None, name: str) -> bool:
    """Whether a package folder holds a submodule `name` (its attribute once imported)."""
    return package_dir is not None and _locate(package_dir, name) is not None


def _mentions(path: Path, word: str) -> bool:
    """Whether the source at `path` may mention `word` (True when it is not read: too
    large, as a sparse file of gigabytes would be, or unreadable)."""
    try:
        if path.stat().st_size > MAX_SOURCE_BYTES:
            return True
        return word in path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return True


def parse_source(path: Path) -> ast.Module | SyntaxError | None:
    """The parsed module at `path`, the `SyntaxError` an import would raise, or
    None when it is not read (too large, unreadable)."""
    try:
        if path.stat().st_size > MAX_SOURCE_BYTES:
            return None
        source = path.read_bytes()  # bytes: a `# coding:` line is honoured as at import
    except OSError:
        return None
    try:
        return ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        return exc
    except (ValueError, RecursionError, MemoryError):
        return None


def top_level_names(tree: ast.Module, module_name: str) -> set[str] | None:
    """The names the module's source binds at its top level (definitions,
    assignments, imports, loop and `with` targets, … in any branch), or None
    when the module may bind others its source does not spell: `from x
    import *`, a module `__getattr__`, `globals()`, `exec`, `sys.modules`, …"""
    names: set[str] = set()
    pending: list[ast.AST] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)  # its body binds its own names, not the module's
            continue
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*":
                    return None
                names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.add(node.rest)
        pending.extend(ast.iter_child_nodes(node))
    for node in ast.walk(tree):  # anywhere, nested functions included
        if isinstance(node, ast.Global):
            names.update(node.names)  # `global X` in a function binds X when it runs
        elif isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Name) and node.id in _DYNAMIC_NAMES:
            return None
        elif isinstance(node, ast.Attribute) and node.attr in _DYNAMIC_ATTRIBUTES:
            return None
        elif isinstance(node, ast.Import) and any(
            a.name == module_name or a.name.startswith(module_name + ".") for a in node.names
        ):
            return None  # the module imports itself, and may set attributes on itself
    if "__getattr__" in names:
        return None  # PEP 562: any attribute may exist
    return names
