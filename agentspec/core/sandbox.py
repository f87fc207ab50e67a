"""The Jinja2 sandbox spec templates render in, with resource limits.

Shared by the runtime (which renders in it) and the checker (which refuses
constant parts of a template that would pass a limit); it imports nothing
heavy, so `validate` stays fast.

Jinja's `ImmutableSandboxedEnvironment` stops a template from reaching
Python internals or changing the values it is given (so no list can grow
itself in a loop), but not from asking for a billion-item range, a gigabyte
string or a loop that never ends. `LimitedSandbox` adds the limits below; a template
that passes one raises `TemplateLimitError`, which the runtime records on the
step like any other template error. The checker refuses at `validate` what it
can see statically (`agentspec/compiler/templates.py`); these limits hold for what only
shows at run, such as sizes computed from the model's arguments.
"""

from __future__ import annotations

import contextvars
import operator
import re
import string
from collections import ChainMap
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

from jinja2 import StrictUndefined, nodes
from jinja2.compiler import CodeGenerator, Frame, optimizeconst
from jinja2.exceptions import SecurityError
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import Namespace

MAX_RANGE = 10_000  # items in one range()
MAX_ITERATIONS = 100_000  # range() items one render may iterate, all loops together
REMOVED_GLOBALS = ("lipsum",)  # Jinja's lorem ipsum of any length: no use to a spec, gigabytes
MAX_LOOP_ITEMS = 1_000_000  # items all `{% for %}` loops of one render may go through
MAX_SIZE = 1_000_000  # characters or items of one value a template builds
MAX_POWER_BITS = 4_096  # bits of an integer built by **
MAX_OUTPUT = 1_000_000  # characters of a rendered template
MAX_WRITTEN = 10_000_000  # characters all `{{ … }}` of one render write, captured ones too
MAX_FORMAT_WIDTH = 10_000  # width or precision in a format specification


class TemplateLimitError(SecurityError):
    """A spec template went past a resource limit while rendering."""


class _Budget:
    """What one render has used so far (set by `render`)."""

    def __init__(self) -> None:
        self.iterations = 0
        self.loop_items = 0
        self.written = 0


_budget: contextvars.ContextVar[_Budget | None] = contextvars.ContextVar(
    "agentspec_template_budget", default=None
)


def _size(value: Any) -> int:
    return len(value) if isinstance(value, (str, list, tuple, bytes)) else 0


def _check_size(size: int, what: str) -> None:
    if size > MAX_SIZE:
        raise TemplateLimitError(f"{what} would have {size:,} items (the limit is {MAX_SIZE:,})")


def _multiply(left: Any, right: Any) -> Any:
    for sequence, count in ((left, right), (right, left)):
        if _size(sequence) and isinstance(count, int):
            _check_size(_size(sequence) * max(count, 0), "a repeated string or list")
    both_int = isinstance(left, int) and isinstance(right, int)
    if both_int and left.bit_length() + right.bit_length() > MAX_POWER_BITS:
        raise TemplateLimitError(f"a product of more than {MAX_POWER_BITS} bits")
    return operator.mul(left, right)


def _power(left: Any, right: Any) -> Any:
    growing = isinstance(left, int) and isinstance(right, int) and abs(left) > 1 and right > 0
    if growing and right * abs(left).bit_length() > MAX_POWER_BITS:
        # (the operands themselves are not shown: they may be too long to print)
        raise TemplateLimitError(f"a power of more than {MAX_POWER_BITS} bits")
    if isinstance(left, float) or isinstance(right, float):
        try:
            return operator.pow(left, right)
        except OverflowError as exc:
            raise TemplateLimitError("a power too large for a float") from exc
    return operator.pow(left, right)


_SIZED = (str, list, tuple, bytes)


def _add(left: Any, right: Any) -> Any:
    # Called for every `+` a template runs (chat templates join strings in loops):
    # two strings, the common case, are checked without the general type tests.
    if type(left) is str and type(right) is str:
        if left and right and len(left) + len(right) > MAX_SIZE:
            _check_size(len(left) + len(right), "a joined string or list")
        return left + right
    if isinstance(left, _SIZED) and isinstance(right, _SIZED) and left and right:
        _check_size(len(left) + len(right), "a joined string or list")
    return left + right


_PERCENT_WIDTH = re.compile(r"%[-#0 +]*(\d+|\*)?(?:\.(\d+|\*))?")
_FORMAT_SPEC_NUMBER = re.compile(r"\d+")


def _modulo(left: Any, right: Any) -> Any:
    if isinstance(left, str):
        _check_percent_format(left, _percent_arguments(right))
    return operator.mod(left, right)


def _percent_arguments(right: Any) -> list[Any]:
    if isinstance(right, tuple):
        return list(right)
    return list(right.values()) if isinstance(right, dict) else [right]


def _argument_size(arguments: list[Any]) -> int:
    """The most one field can write of any of ``arguments`` (`!r` / `%r` write the repr)."""
    return max((len(repr(a)) if isinstance(a, str) else len(str(a)) for a in arguments), default=0)


def _check_percent_format(text: str, arguments: list[Any]) -> None:
    """Widths in `%` formats, e.g. '%1000000000s', and the size of the result: every
    field may write the longest argument (`(range(3000)|join('%(a)s')) % {'a': long}`)."""
    fields = widths = 0
    for match in _PERCENT_WIDTH.finditer(text):
        for number in match.groups():
            if number == "*" or (number and int(number) > MAX_FORMAT_WIDTH):
                raise TemplateLimitError(
                    f"the format {match.group(0)!r} asks for a width or precision over"
                    f" {MAX_FORMAT_WIDTH:,} (or one given by an argument)"
                )
        fields += 1
        widths += max(int(n) for n in (*match.groups(), "0") if n)
    _check_size(len(text) + widths + fields * _argument_size(arguments), "a formatted string")


def _check_format_spec(text: str, arguments: list[Any]) -> None:
    """Widths in `str.format` fields, e.g. '{:1000000000}', none given by an argument
    ('{:{}}'), and the size of the result, as for `%`."""
    fields = widths = 0
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError:
        return  # not a format: str.format itself says why
    for _, name, spec, _ in parsed:
        if name is None:
            continue
        numbers = [int(n) for n in _FORMAT_SPEC_NUMBER.findall(spec or "")]
        if "{" in (spec or "") or any(n > MAX_FORMAT_WIDTH for n in numbers):
            raise TemplateLimitError(f"the format field {{{name}:{spec}}} is too wide")
        fields += 1
        widths += max(numbers, default=0)
    _check_size(len(text) + widths + fields * _argument_size(arguments), "a formatted string")


BINOPS: dict[str, Callable[[Any, Any], Any]] = {
    "*": _multiply,
    "**": _power,
    "+": _add,
    "%": _modulo,
}


def _replaced_size(text: str, old: Any = "", new: Any = "", *_: Any) -> int:
    """An upper bound on the length of text.replace(old, new)."""
    growth = max(len(str(new)) - len(str(old)), 0)
    return len(text) + (len(text) + 1) * growth


def _width_argument(text: str, width: Any = 0, *_: Any, **__: Any) -> int:
    return width if isinstance(width, int) else 0


def _tab_size(text: str, tabsize: Any = 8, *_: Any) -> int:
    return len(text) * max(tabsize, 1) if isinstance(tabsize, int) else len(text)


# str methods whose result size comes from an argument: (text, *args) -> size
_SIZED_METHODS: dict[str, Callable[..., int]] = {
    "center": _width_argument,
    "ljust": _width_argument,
    "rjust": _width_argument,
    "zfill": _width_argument,
    "expandtabs": _tab_size,
    "replace": _replaced_size,
}


def bounded_range(*args: int) -> range:
    """range(), refused past MAX_RANGE items."""
    numbers = range(*args)
    if len(numbers) > MAX_RANGE:
        raise TemplateLimitError(f"range() of {len(numbers):,} items (the limit is {MAX_RANGE:,})")
    return numbers


def _limited_range(*args: int) -> Iterator[int]:
    return _budgeted(
        bounded_range(*args),
        "iterations",
        MAX_ITERATIONS,
        f"the template iterated more than {MAX_ITERATIONS:,} times",
    )


def _loop_items(items: Any) -> Iterator[Any]:
    """A `{% for %}` loop's items, counted: loops over loops over a long string or
    list (not a range, which counts on its own) would otherwise never end."""
    return _budgeted(
        items,
        "loop_items",
        MAX_LOOP_ITEMS,
        f"the template's loops went through more than {MAX_LOOP_ITEMS:,} items",
    )


def _budgeted(items: Any, counter: str, limit: int, message: str) -> Iterator[Any]:
    """`items`, each counted on the render's budget `counter`; past `limit`, refused."""
    budget = _budget.get()
    for item in items:
        if budget is not None:
            used = getattr(budget, counter) + 1
            setattr(budget, counter, used)
            if used > limit:
                raise TemplateLimitError(message)
        yield item


def _join_filter(original: Callable[..., Any]) -> Callable[..., Any]:
    """`join`, refused when the joined text would pass the size limit (the separator
    is repeated once per item, so a short list can make a gigabyte)."""

    def join(eval_ctx: Any, value: Any, d: str = "", attribute: Any = None) -> Any:
        items = list(value) if not isinstance(value, (str, list, tuple)) else value
        separator = len(str(d)) * max(len(items) - 1, 0)
        _check_size(separator + sum(_size(item) for item in items), "the joined text")
        return original(eval_ctx, items, d, attribute)

    join.jinja_pass_arg = original.jinja_pass_arg  # type: ignore[attr-defined]
    return join


def _written(value: Any) -> str:
    """Every `{{ … }}` passes here (the environment's `finalize`): count what
    is written, including into macros, loops and `{% set %}` blocks, whose
    text never reaches the output limit directly."""
    text = str(value)
    budget = _budget.get()
    if budget is not None:
        budget.written += len(text)
        if budget.written > MAX_WRITTEN:
            raise TemplateLimitError(f"the template wrote more than {MAX_WRITTEN:,} characters")
    return text


def _concat(parts: tuple[Any, ...]) -> str:
    """The `~` operator, bounded like `+`."""
    texts = [str(part) for part in parts]
    _check_size(sum(map(len, texts)), "a joined string")
    return "".join(texts)


def _is_counted(iterable: nodes.Node) -> bool:
    return (
        isinstance(iterable, nodes.Call)
        and isinstance(iterable.node, nodes.EnvironmentAttribute)
        and iterable.node.name == "loop_limited"
    )


class _LimitedCodeGenerator(CodeGenerator):
    """Jinja's code generator, with `~` going through `_concat` (Jinja calls
    its own join function there, which no environment hook reaches), and `+`
    calling `_add` directly: what the sandbox's `call_binop(context, "+", …)`
    dispatches to, without the dispatch (chat templates join strings with `+`
    in every turn)."""

    @optimizeconst
    def visit_Add(self, node: nodes.BinExpr, frame: Frame) -> None:
        self.write("environment.add_limited(")
        self.visit(node.left, frame)
        self.write(", ")
        self.visit(node.right, frame)
        self.write(")")

    def visit_For(self, node: nodes.For, frame: Frame) -> None:
        # every loop goes through its items via `environment.loop_limited`, which counts
        # them (Jinja allows no node type of one's own, so the wrapper is a call)
        counted = nodes.Call(
            nodes.EnvironmentAttribute("loop_limited"), [node.iter], [], None, None
        )
        if not _is_counted(node.iter):  # a tree compiled twice is wrapped once
            node.iter = counted.set_lineno(node.iter.lineno)
        super().visit_For(node, frame)

    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        self.write("environment.concat_limited((")
        for part in node.nodes:
            self.visit(part, frame)
            self.write(", ")
        self.write("))")

    # `sample.items`, where the data has a field `items`, is the field: Jinja's
    # attribute-first lookup gave the dict's method (and `{{ sample.items | join }}`
    # failed). A name a dict method takes reads the key first unless it is called.

    def visit_Call(self, node: nodes.Call, frame: Frame, forward_caller: bool = False) -> None:
        if isinstance(node.node, nodes.Getattr):
            self.__dict__.setdefault("method_calls", set()).add(id(node.node))
        super().visit_Call(node, frame, forward_caller=forward_caller)

    @optimizeconst
    def visit_Getattr(self, node: nodes.Getattr, frame: Frame) -> None:
        called = id(node) in self.__dict__.get("method_calls", ())
        if called or node.attr not in _DICT_ATTRIBUTES:
            super().visit_Getattr(node, frame)
            return
        self.write("environment.getfield(")
        self.visit(node.node, frame)
        self.write(f", {node.attr!r})")


def _sized_filter(original: Callable[..., Any], size: Callable[..., int]) -> Callable[..., Any]:
    """`original`, refused when `size(value, *arguments)` passes the limit.
    Keeps Jinja's mark of filters that receive the environment or context first."""
    passes_context = getattr(original, "jinja_pass_arg", None)

    def limited(*args: Any, **kwargs: Any) -> Any:
        values = args[1:] if passes_context is not None else args
        _check_size(size(*values, **kwargs), "the filter's result")
        return original(*args, **kwargs)

    limited.__name__ = getattr(original, "__name__", "filter")
    if passes_context is not None:
        limited.jinja_pass_arg = passes_context  # type: ignore[attr-defined]
    return limited


class _LimitedNamespace(Namespace):
    """`namespace()` whose attributes cannot grow past the size limit (a
    `{% set ns.s = ns.s ~ ns.s %}` loop doubles a string each time)."""

    def __setitem__(self, name: str, value: Any) -> None:
        _check_size(_size(value), f"namespace attribute '{name}'")
        super().__setitem__(name, value)


class LimitedSandbox(ImmutableSandboxedEnvironment):
    """An immutable sandbox with bounded ranges, sizes, powers and formats.

    Intercepting an operator also stops Jinja from evaluating it while
    compiling (constant folding), so `{{ 7**100000 }}` fails at render,
    as a template error, not when the generated module is imported.
    """

    intercepted_binops = frozenset(BINOPS)
    code_generator_class = _LimitedCodeGenerator
    concat_limited = staticmethod(_concat)
    add_limited = staticmethod(_add)
    loop_limited = staticmethod(_loop_items)

    def __init__(self, **options: Any) -> None:
        super().__init__(finalize=_written, **options)
        self.globals["range"] = _limited_range
        self.globals["namespace"] = _LimitedNamespace
        for name in REMOVED_GLOBALS:
            del self.globals[name]
        sized: dict[str, Callable[..., int]] = {
            "center": lambda value, width=80: _width(width),
            "indent": lambda value, width=4, *a, **k: _size(value) * (1 + _width(width)),
            "wordwrap": lambda value, width=79, breaks=True, wrapstring=None, *a, **k: (
                _size(value) * (2 + len(str(wrapstring or "")))
            ),
            "batch": lambda value, count, *a: count,
            "slice": lambda value, count, *a: count,
            "replace": lambda value, old, new, *a: _replaced_size(str(value), old, new),
        }
        for name, size in sized.items():
            self.filters[name] = _sized_filter(self.filters[name], size)
        self.filters["format"] = _format_filter(self.filters["format"])
        self.filters["join"] = _join_filter(self.filters["join"])

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        return BINOPS[operator](left, right)

    def getattr(self, obj: Any, attribute: str) -> Any:
        """`obj.attribute` as the sandbox resolves it, a plain dict's key first when
        no dict attribute has that name (what Jinja's lookup finds then too, after
        the failed attribute lookup): chat templates read `message.role` and
        `message.content` of every turn."""
        if type(obj) is dict and attribute not in _DICT_ATTRIBUTES:
            try:
                return obj[attribute]
            except KeyError:
                pass
        return super().getattr(obj, attribute)

    def getfield(self, obj: Any, attribute: str) -> Any:
        """`obj.attribute` read as a value (not called) where a dict method has that
        name: a dict's key of that name first, as for every other name."""
        if isinstance(obj, dict) and attribute in obj:
            return obj[attribute]
        return self.getattr(obj, attribute)

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        method = getattr(__obj, "__name__", "")
        # The sandbox hands out str.format wrapped; the bound method is inside.
        owner = getattr(getattr(__obj, "__wrapped__", __obj), "__self__", None)
        if isinstance(owner, str):
            if method == "format":
                _check_format_spec(owner, [*args, *kwargs.values()])
            elif method == "format_map":
                mapping = args[0] if args else {}
                values = list(mapping.values()) if isinstance(mapping, dict) else []
                _check_format_spec(owner, values)
            elif method in _SIZED_METHODS:
                _check_size(_SIZED_METHODS[method](owner, *args, **kwargs), f"str.{method}()")
        return super().call(__context, __obj, *args, **kwargs)


_DICT_ATTRIBUTES = frozenset(dir({}))
"""What `getattr(a_dict, name)` can find: a dict instance has no attributes of its own."""


def _width(width: Any) -> int:
    return width if isinstance(width, int) else len(str(width))


def _format_filter(original: Callable[..., Any]) -> Callable[..., Any]:
    def limited(value: Any, *args: Any, **kwargs: Any) -> Any:
        # Jinja's `format` filter is `value % (kwargs or args)`
        _check_percent_format(str(value), list(kwargs.values()) or list(args))
        return original(value, *args, **kwargs)

    return limited


@cache
def environment(keep_trailing_newline: bool = True) -> LimitedSandbox:
    """The one environment spec templates compile in (strict undefined names)."""
    return LimitedSandbox(undefined=StrictUndefined, keep_trailing_newline=keep_trailing_newline)


def _with_globals(globals_: Any, variables: dict[str, Any]) -> dict[str, Any]:
    """``{**globals_, **variables}``. A template's globals are a ChainMap (its own
    over the environment's), whose item-by-item reads cost more than the render of
    a short template: its dicts are merged directly instead, the first one last
    (the same items in the same order)."""
    if type(globals_) is not ChainMap:
        return {**globals_, **variables}
    merged: dict[str, Any] = {}
    for mapping in reversed(globals_.maps):
        merged.update(mapping)
    merged.update(variables)
    return merged


def render(template: Any, variables: dict[str, Any]) -> str:
    """Render a compiled template within the iteration and output limits.

    Deep recursion (a recursive macro the checker could not see) ends as a
    `TemplateLimitError` too, not as a RecursionError.
    """
    context = template.new_context(_with_globals(template.globals, variables), shared=True)
    token = _budget.set(_Budget())
    try:
        parts: list[str] = []
        length = 0
        for part in template.root_render_func(context):
            length += len(part)
            if length > MAX_OUTPUT:
                raise TemplateLimitError(f"the template's output passed {MAX_OUTPUT:,} characters")
            parts.append(part)
        return "".join(parts)
    except RecursionError as exc:
        raise TemplateLimitError("the template recursed too deeply") from exc
    finally:
        _budget.reset(token)
