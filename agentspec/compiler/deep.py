"""Deep checks: what a spec points to outside its own text.

The checker proves a spec consistent with itself; these checks look at what
it names: stdlib functions (names, `config` keys and their types, the
declared `params`/`returns` against the function's signature), user modules
(found in the spec's folder or on `sys.path`; one beside the spec is read with
`ast`, never run: it must parse and define the attribute at its top level;
imported, and their signatures checked, only with `validate --import`), data
sources (generator names and params, files after `${AGENTSPEC_DATA}`,
declared fields and their types in the first row), and regular expressions
written as literals. The oracle's turns are checked by `oracle_check`, the
first prompt against the first row by `prompt_check`.
Nothing here imports torch or runs user code unless asked; reading data
stops at the first row of a file.
"""

from __future__ import annotations

import ast as ast_module
import difflib
import importlib
import importlib.util
import inspect
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path as FsPath
from typing import Any

from agentspec.compiler.data_check import (
    ANNOTATION_KINDS,
    DataChecks,
    close_name,
    first_jsonl_row,
    is_file,
    is_kind,
    looks_like_data_path,
)
from agentspec.compiler.ir import CheckResult
from agentspec.compiler.regex_check import RegexChecks
from agentspec.compiler.static_signature import (
    has_submodule,
    module_file,
    parse_source,
    spec_local_module,
    static_signature,
    top_level_names,
)
from agentspec.compiler.types import TypeSyntaxError, assignable, parse_type, python_value_type
from agentspec.core.diagnostics import Diagnostic
from agentspec.spec.yaml_loader import Path


class DeepChecker(DataChecks, RegexChecks):
    """Runs every deep check of one checked spec. Use `deep_check`."""

    def __init__(self, checked: CheckResult, spec_dir: FsPath, import_user_code: bool):
        self.checked = checked
        self.spec = checked.spec
        self.map = checked.loaded.source_map
        self.spec_dir = spec_dir
        self.import_user_code = import_user_code
        self.diagnostics: list[Diagnostic] = []
        self._parsed: dict[FsPath, ast_module.Module | SyntaxError | None] = {}

    def error(self, code: str, message: str, path: Path, hint: str | None = None) -> None:
        self.diagnostics.append(Diagnostic(code, message, self.map.value_span(path), hint))

    def run(self) -> list[Diagnostic]:
        self._functions()
        self._other_user_objects()
        self._data()
        self._regexes()
        return self.diagnostics

    # -------------------------------------------------------------- functions

    def _functions(self) -> None:
        for name, function in self.spec.functions.items():
            path: Path = ("functions", name)
            if function.impl.startswith("stdlib:"):
                self._stdlib_function(name, function.impl.removeprefix("stdlib:"), path)
                continue
            target = self._user_object(function.impl, (*path, "impl"))
            signature = self._signature_of(function.impl, target)
            if signature is None:
                continue
            if function.config:
                self._bind(signature, (), function.config, path, f"'{function.impl}'")
            elif function.params is not None:
                args = (None,) * len(function.params)
                self._bind(signature, args, {}, (*path, "params"), f"'{function.impl}'")

    def _signature_of(self, impl: str, target: Any) -> inspect.Signature | None:
        """The signature of an imported user object, or else (plain `validate`,
        which imports nothing) the one its source spells, when it is plain."""
        if target is not None:
            try:
                return inspect.signature(target)
            except (TypeError, ValueError):  # a builtin without a signature: nothing to check
                return None
        if self.import_user_code:
            return None  # it could not be imported: reported already
        module_name, _, attribute = impl.partition(":")
        local = spec_local_module(self.spec_dir, module_name)
        path = local.source if local is not None else module_file(self.spec_dir, module_name)
        return static_signature(path, attribute) if path is not None else None

    def _stdlib_function(self, name: str, stdlib_name: str, path: Path) -> None:
        from agentspec.stdlib.library import SIGNATURES, load_library

        library = load_library()
        factory = library.get(stdlib_name)
        if factory is None:
            close = difflib.get_close_matches(stdlib_name, list(library), n=1, cutoff=0.6)
            self.error(
                "E901",
                f"unknown stdlib function '{stdlib_name}'",
                (*path, "impl"),
                f"did you mean 'stdlib:{close[0]}'?"
                if close
                else "known: " + ", ".join(sorted(library)),
            )
            return
        declared = self.spec.functions[name]
        self._config(factory, declared.config, path, f"stdlib:{stdlib_name}")
        signature = SIGNATURES.get(stdlib_name)
        if signature is not None:
            self._declared_signature(name, signature, path)

    def _config(
        self, factory: Callable[..., Any], config: Mapping[str, Any], path: Path, what: str
    ) -> None:
        """`config` keys and value types against the factory's keyword parameters."""
        parameters = inspect.signature(factory).parameters
        accepted = [
            p for p in parameters if parameters[p].kind is not inspect.Parameter.VAR_KEYWORD
        ]
        open_ended = len(accepted) < len(parameters)
        for key, value in config.items():
            parameter = parameters.get(key)
            if parameter is None:
                if open_ended:
                    continue
                close = close_name(key, accepted)
                self.diagnostics.append(
                    Diagnostic(
                        "E902",
                        f"{what} has no config key '{key}'",
                        self.map.key_span((*path, "config", key)),
                        f"did you mean '{close[0]}'?"
                        if close
                        else "config keys: " + (", ".join(accepted) or "none"),
                    )
                )
                continue
            wanted = ANNOTATION_KINDS.get(str(parameter.annotation))
            if wanted is not None and not is_kind(value, wanted):
                self.error(
                    "E902",
                    f"config key '{key}' of {what} must be {parameter.annotation}, not {python_value_type(value)}",
                    (*path, "config", key),
                )
            elif isinstance(value, str) and looks_like_data_path(value):
                self._reachable(value, (*path, "config", key))
        self._render_fields(config, path)
        for key, parameter in parameters.items():
            required = parameter.default is inspect.Parameter.empty and parameter.kind in (
                inspect.Parameter.KEYWORD_ONLY,
                inspect.Parameter.POSITIONAL_OR_KEYWORD,
            )
            if required and key not in config:
                self.error(
                    "E902",
                    f"{what} needs the config key '{key}'",
                    path,
                    f"add `config: {{{key}: …}}`",
                )

    def _render_fields(self, config: Mapping[str, Any], path: Path) -> None:
        """W902 for a `{field}` of a `render` template (`stdlib:bm25`'s) that the first
        row of the config's JSONL `corpus` does not have: each hit would show it empty."""
        from agentspec.stdlib.data import resolve_path

        render, corpus = config.get("render"), config.get("corpus")
        if not isinstance(render, str) or not isinstance(corpus, str):
            return
        resolved = resolve_path(corpus, self.spec_dir)
        row = first_jsonl_row(resolved) if is_file(resolved) else None
        if row is None:
            return
        for field in dict.fromkeys(re.findall(r"\{(\w+)\}", render)):
            if field not in row:
                close = close_name(field, list(row))
                self.error(
                    "W902",
                    f"render field '{field}' is not in the first row of {corpus}: every hit"
                    " would show it empty",
                    (*path, "config", "render"),
                    f"did you mean '{close[0]}'?"
                    if close
                    else "fields there: " + ", ".join(sorted(map(str, row))),
                )

    def _declared_signature(self, name: str, signature: Any, path: Path) -> None:
        declared = self.spec.functions[name]
        shown = signature.spelled(name)
        if declared.params is not None:
            count = len(declared.params)
            if not signature.min_args <= count <= len(signature.params):
                self.error(
                    "E903",
                    f"function '{name}' declares {count} parameter{'s' * (count != 1)}, but the stdlib function takes {_arity(signature)}",
                    (*path, "params"),
                    f"signature: {shown}",
                )
                return
            for i, (spelled, wanted) in enumerate(
                zip(declared.params, signature.params, strict=False)
            ):
                if not _fits(spelled, wanted):
                    self.error(
                        "E903",
                        f"parameter {i + 1} of '{name}' is declared {spelled}, but the function takes {wanted}",
                        (*path, "params", i),
                        f"signature: {shown}",
                    )
        if not _fits(signature.returns, declared.returns):
            self.error(
                "E903",
                f"function '{name}' is declared to return {declared.returns}, but it returns {signature.returns}",
                (*path, "returns"),
                f"signature: {shown}",
            )

    # ----------------------------------------------------------- user modules

    def _other_user_objects(self) -> None:
        """Oracle hooks, adapters and custom context policies named `module:attr`."""
        oracle = self.spec.oracle
        if oracle is not None and not isinstance(oracle, list) and oracle.hook is not None:
            hook = self._user_object(oracle.hook, ("oracle", "hook"))
            signature = self._signature_of(oracle.hook, hook)
            if signature is not None:
                what = f"the oracle hook '{oracle.hook}'"
                self._bind(signature, (None,), {}, ("oracle", "hook"), what)
        environment = self.spec.environment
        if environment is not None and _is_import_path(environment.adapter):
            adapter = self._user_object(environment.adapter, ("environment", "adapter"))
            signature = self._signature_of(environment.adapter, adapter)
            if adapter is not None and signature is not None:
                what = f"the adapter '{environment.adapter}'"
                self._bind(signature, (), environment.config, ("environment",), what)
        custom = self.spec.context.custom
        if custom is not None:
            target = self._user_object(custom, ("context", "custom"))
            if isinstance(target, type):
                return  # a ContextPolicy subclass, built with the spec's settings
            signature = self._signature_of(custom, target)
            if signature is not None:
                what = f"the custom context '{custom}' (a function of the view)"
                self._bind(signature, (None,), {}, ("context", "custom"), what)

    def _user_object(self, impl: str, path: Path) -> Any:
        """Find `module:attr` without running it; import it only when asked.

        Returns the object when it was imported, else None.
        """
        module_name, _, attribute = impl.partition(":")
        where = self._find_module(module_name)
        if where is None:
            top = module_name.split(".")[0]
            self.error(
                "E904",
                f"cannot find the module '{module_name}' of '{impl}'",
                path,
                f"put {top}.py (or a package {top}/) in the spec's folder, or install it",
            )
            return None
        if not self.import_user_code:
            self._read_user_module(impl, path)
            return None
        from agentspec.stdlib.user import add_import_root

        add_import_root(self.spec_dir)
        try:
            target: Any = importlib.import_module(module_name)
        except Exception as exc:  # the user's module raised on import: report it, located
            self.error(
                "E904", f"importing '{module_name}' failed: {type(exc).__name__}: {exc}", path
            )
            return None
        for part in attribute.split("."):
            if not hasattr(target, part):
                names = [n for n in dir(target) if not n.startswith("_")]
                close = difflib.get_close_matches(part, names, n=1, cutoff=0.6)
                self.error(
                    "E904",
                    f"module '{module_name}' has no attribute '{attribute}'",
                    path,
                    f"did you mean '{module_name}:{close[0]}'?" if close else None,
                )
                return None
            target = getattr(target, part)
        if not callable(target):
            self.error("E904", f"'{impl}' is not callable", path)
            return None
        return target

    def _read_user_module(self, impl: str, path: Path) -> None:
        """What the source of a module beside the spec shows without running it:
        a syntax error (importing it would fail), a submodule that is not there,
        or an attribute its top level does not define. Installed modules, and
        modules that may define names at run time, are left to `--import`."""
        module_name, _, attribute = impl.partition(":")
        local = spec_local_module(self.spec_dir, module_name)
        if local is None:
            return
        for file in local.files:
            tree = self._parse(file)
            if isinstance(tree, SyntaxError):
                where = f"{self._shown(file)}:{tree.lineno or 1}"
                if tree.offset:
                    where += f":{tree.offset}"
                self.error(
                    "E904",
                    f"module '{module_name}' of '{impl}' does not parse, so it cannot be"
                    f" imported: {where}: {tree.msg}",
                    path,
                    f"fix line {tree.lineno or 1} of {self._shown(file)}",
                )
                return
        if local.missing is not None:
            folder = local.missing.replace(".", "/")
            self.error(
                "E904",
                f"cannot find the module '{local.missing}' of '{impl}'",
                path,
                f"there is no {folder}.py (nor a package {folder}/) beside the spec",
            )
            return
        if local.source is None:
            return
        tree = self._parse(local.source)
        if not isinstance(tree, ast_module.Module):
            return
        names = top_level_names(tree, module_name)
        first = attribute.split(".")[0]
        if names is None or first in names or has_submodule(local.package_dir, first):
            return
        public = sorted(n for n in names if not n.startswith("_"))
        close = difflib.get_close_matches(first, public, n=1, cutoff=0.6)
        if close:
            hint = f"did you mean '{module_name}:{close[0]}'?"
        elif public:
            shown = ", ".join(public[:12]) + (", …" if len(public) > 12 else "")
            hint = f"{self._shown(local.source)} defines {shown}"
        else:
            hint = f"define `{first}` at the top level of {self._shown(local.source)}"
        self.error(
            "E904",
            f"module '{module_name}' ({self._shown(local.source)}) does not define '{first}'",
            path,
            hint,
        )

    def _parse(self, file: FsPath) -> ast_module.Module | SyntaxError | None:
        """A user module's parsed source, read once however many fields name it."""
        if file not in self._parsed:
            self._parsed[file] = parse_source(file)
        return self._parsed[file]

    def _shown(self, file: FsPath) -> str:
        """A user module's file as the user knows it: relative to the spec's folder."""
        try:
            return str(file.relative_to(self.spec_dir))
        except ValueError:
            return str(file)

    def _find_module(self, module_name: str) -> str | None:
        """Where a module would be imported from: the spec's folder first, then
        `sys.path`. Only the top-level name is looked up, which runs no code."""
        top = module_name.split(".")[0]
        for candidate in (self.spec_dir / f"{top}.py", self.spec_dir / top):
            try:
                if candidate.exists():
                    return str(candidate)
            except (OSError, ValueError):
                return None
        try:
            found = importlib.util.find_spec(top)
        except (ImportError, ValueError):
            return None
        return None if found is None else str(found.origin)

    def _bind(
        self,
        signature: inspect.Signature,
        args: tuple[Any, ...],
        kwargs: Mapping[str, Any],
        path: Path,
        what: str,
    ) -> None:
        """Whether a user object of this signature accepts these arguments."""
        named = re.search(r"'[^':]*:([^']*)'", what)  # the attribute of 'module:attr'
        name = named.group(1) if named else ""
        try:
            signature.bind(*args, **kwargs)
        except TypeError as exc:
            if kwargs and path[0] == "functions":  # a function with `config`: a factory
                self.error(
                    "E902",
                    f"with `config`, {what} is a factory, called once as `impl(**config)`;"
                    f" it does not accept {_described(args, kwargs)}: {exc}",
                    path,
                    f"its signature is {name}{signature}: write a factory that takes the config and"
                    " returns the function the expressions call (`def make(table): return"
                    " lambda text: …`), or drop `config` and pass the values as arguments",
                )
                return
            self.error(
                "E902" if kwargs else "E903",
                f"{what} does not accept {_described(args, kwargs)}: {exc}",
                path,
                f"its signature is {name}{signature}",
            )


def _fits(value: str, target: str) -> bool:
    try:
        return assignable(parse_type(value), parse_type(target))
    except TypeSyntaxError:
        return True  # the checker reports bad types (E507)


def _arity(signature: Any) -> str:
    low, high = signature.min_args, len(signature.params)
    return f"{high}" if low == high else f"{low} to {high}"


def _described(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> str:
    if kwargs:
        return "config " + ", ".join(kwargs)
    return f"{len(args)} argument{'s' * (len(args) != 1)}"


def _is_import_path(text: str) -> bool:
    return ":" in text


def deep_check(
    checked: CheckResult,
    spec_dir: FsPath,
    *,
    import_user_code: bool = False,
    checker_found: Sequence[Diagnostic] = (),
) -> list[Diagnostic]:
    """Every deep finding of one checked spec (see the module docstring); `checker_found`
    is what the checker reported, so that a template it refused is not rendered again."""
    from agentspec.compiler.oracle_check import check_oracle
    from agentspec.compiler.prompt_check import check_prompts
    from agentspec.compiler.tests_check import check_tests

    found = DeepChecker(checked, spec_dir, import_user_code).run()
    found += check_prompts(checked, spec_dir, [*checker_found, *found])
    found += check_oracle(checked, spec_dir)
    return found + check_tests(checked)
