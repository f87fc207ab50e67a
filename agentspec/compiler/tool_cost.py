"""Whether a spec tool's code may run on the event loop instead of a worker thread.

A spec tool is `blocking` by default: its expressions run over the model's
arguments, and one of them can take long (a spec regex over a model string,
a comprehension over `range(args.n)`, a user function), so the runtime runs
it in a worker thread it can interrupt (`runtime/episode/blocking.py`). That hop
costs more than the work of most tools. A tool whose generated code is
*bounded* — no loops, no user or MCP functions, only operators and built-in
functions whose cost is at most linear in their inputs (which the JSON
parser and Python's integer-digit limit already bound) — runs inline, as a
hand-written tool would. Templates (observations, guard messages) render in
the sandbox, whose own limits bound them (`agentspec/core/sandbox.py`).

The decision reads the generated Python itself, so it sees exactly what runs.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

# Built-in functions (`fn.NAME`) whose cost is at most linear in their
# arguments' sizes. Not here: the regex functions (a spec pattern can backtrack
# exponentially on model text), `replace`/`split`/`join` (outputs that multiply
# sizes), `sorted`, `sum`/`min`/`max`/`any`/`all` over lists (fine, but rare in
# tools), and anything a spec adds.
BOUNDED_FUNCTIONS = frozenset(
    {
        "abs",
        "bool",
        "calc",  # limits its input's length, exponents and digits
        "clip",
        "contains",
        "endswith",
        "exact_match",
        "float",
        "get",
        "int",  # Python refuses integer strings over 4,300 digits
        "keys",
        "len",
        "lower",
        "normalize_answer",
        "number",
        "round",
        "startswith",
        "str",
        "strip",
        "upper",
        "values",
    }
)

# Methods of the scope `s` generated code calls (`runtime/spec/scope.py`); each is
# linear at most (`own` copies one value).
SCOPE_METHODS = frozenset({"at", "done", "fail", "own", "slot"})

_BOUNDED_OPERATORS = (ast.Add, ast.Sub, ast.Div, ast.FloorDiv, ast.USub, ast.UAdd, ast.Not)
_PLAIN_NODES = (
    ast.Module,
    ast.Expression,
    ast.Expr,
    ast.Assign,
    ast.Name,
    ast.Load,
    ast.Store,
    ast.Attribute,
    ast.Subscript,
    ast.Slice,
    ast.Constant,
    ast.Compare,
    ast.cmpop,
    ast.BoolOp,
    ast.boolop,
    ast.IfExp,
    ast.If,
    ast.List,
    ast.Starred,
    ast.Tuple,
    ast.Dict,
    ast.Pass,
)


def inline_reason(code: Iterable[str]) -> str | None:
    """Why the tool whose generated code is `code` may run inline, or None."""
    pieces = [piece for piece in code if piece]
    for piece in pieces:
        for node in ast.walk(ast.parse(piece)):
            if not _bounded(node):
                return None
    if not pieces:
        return "No expressions: the call runs on the event loop, not in a worker thread."
    return "Bounded expressions (no loops, regexes or user functions): no worker thread."


def _bounded(node: ast.AST) -> bool:
    if isinstance(node, ast.Call):
        return not node.keywords and _bounded_callee(node.func)
    if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.AugAssign)):
        return isinstance(node.op, _BOUNDED_OPERATORS)
    if isinstance(node, _BOUNDED_OPERATORS):
        return True
    return isinstance(node, _PLAIN_NODES)


def _bounded_callee(func: ast.expr) -> bool:
    if not isinstance(func, ast.Attribute) or not isinstance(func.value, ast.Name):
        return False
    owner, name = func.value.id, func.attr
    return (owner == "fn" and name in BOUNDED_FUNCTIONS) or (owner == "s" and name in SCOPE_METHODS)
