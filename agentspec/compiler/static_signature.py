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
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
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


def _signature(args: ast.arguments, skip_self: bool) -> inspect.Signature:
    kind = inspect.Parameter
    positional: list[tuple[ast.arg, inspect._ParameterKind]]
    positional = [(a, kind.POSITIONAL_ONLY) for a in args.posonlyargs]
    positional += [(a, kind.POSITIONAL_OR_KEYWORD) for a in args.args]
    if skip_self and positional:
        positional = positional[1:]
    first_default = len(positional) - len(args.defaults)
    parameters = [
        kind(a.arg, k, default=None if i >= first_default else kind.empty)
        for i, (a, k) in enumerate(positional)
    ]
    if args.vararg is not None:
        parameters.append(kind(args.vararg.arg, kind.VAR_POSITIONAL))
    for a, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        parameters.append(
            kind(a.arg, kind.KEYWORD_ONLY, default=kind.empty if default is None else None)
        )
    if args.kwarg is not None:
        parameters.append(kind(args.kwarg.arg, kind.VAR_KEYWORD))
    return inspect.Signature(parameters)
