"""Whether a template reads a name it `{% set %}`s before the set has run.

Jinja's own analysis (`find_undeclared_variables`) counts a name set in only
some branches of an `{% if %}` as read from the context, even where every
read of it sits after the set in the same branch; the checker asks this
module whether any read can really run first. Control flow follows Jinja's
scoping: a branch's sets hold after the `if` only when every branch (an
`else` included) makes them; a `for` body's sets stay in the loop; macro,
call-block and `with` parameters are set inside their bodies.
"""

from __future__ import annotations

from collections.abc import Sequence

from jinja2 import nodes

Read = nodes.Name | None


def read_before_set(tree: nodes.Template, name: str) -> nodes.Name | None:
    """The first read of `name` that some path through the template reaches
    while `name` is unset, if any."""
    read_first, _ = _Flow(name).statements(tree.body, False)
    return read_first


class _Flow:
    """Follows one name through the statements: each visit takes whether the
    name is set on entry and returns (the first read while unset, or None;
    whether it is set on exit)."""

    def __init__(self, name: str):
        self.name = name

    def statements(self, body: Sequence[nodes.Node], is_set: bool) -> tuple[Read, bool]:
        for node in body:
            read_first, is_set = self.visit(node, is_set)
            if read_first is not None:
                return read_first, is_set
        return None, is_set

    def visit(self, node: nodes.Node, is_set: bool) -> tuple[Read, bool]:
        visit = getattr(self, f"visit_{type(node).__name__}", None)
        if visit is not None:
            result: tuple[Read, bool] = visit(node, is_set)
            return result
        if isinstance(node, nodes.Expr):
            return self.reads(node, is_set), is_set
        # Any other statement (output, filter block, scope): its parts in order.
        return self.statements(list(node.iter_child_nodes()), is_set)

    def reads(self, node: nodes.Node | None, is_set: bool) -> Read:
        """The first read of the name in an expression, unless it is set."""
        if node is None or is_set:
            return None
        found = [node] if isinstance(node, nodes.Name) else node.find_all(nodes.Name)
        return next((n for n in found if n.name == self.name and n.ctx == "load"), None)

    def stores(self, target: nodes.Node) -> bool:
        return any(
            isinstance(n, nodes.Name) and n.name == self.name and n.ctx in ("store", "param")
            for n in (target, *target.find_all(nodes.Name))
        )

    def visit_Assign(self, node: nodes.Assign, is_set: bool) -> tuple[Read, bool]:
        return self.reads(node.node, is_set), is_set or self.stores(node.target)

    def visit_AssignBlock(self, node: nodes.AssignBlock, is_set: bool) -> tuple[Read, bool]:
        read_first, _ = self.statements(node.body, is_set)
        read_first = read_first or self.reads(node.filter, is_set)
        return read_first, is_set or self.stores(node.target)

    def visit_If(self, node: nodes.If, is_set: bool) -> tuple[Read, bool]:
        branches = [(node.test, node.body)] + [(e.test, e.body) for e in node.elif_]
        every_branch_sets = bool(node.else_)
        for test, body in branches:
            read_first = self.reads(test, is_set)
            if read_first is None:
                read_first, branch_sets = self.statements(body, is_set)
                every_branch_sets = every_branch_sets and branch_sets
            if read_first is not None:
                return read_first, is_set
        read_first, else_sets = self.statements(node.else_, is_set)
        return read_first, is_set or (every_branch_sets and else_sets)

    def visit_For(self, node: nodes.For, is_set: bool) -> tuple[Read, bool]:
        inside = is_set or self.stores(node.target)
        read_first = (
            self.reads(node.iter, is_set)
            or self.reads(node.test, inside)
            or self.statements(node.body, inside)[0]  # a loop's sets stay in it
            or self.statements(node.else_, is_set)[0]
        )
        return read_first, is_set

    def visit_Macro(self, node: nodes.Macro | nodes.CallBlock, is_set: bool) -> tuple[Read, bool]:
        call = node.call if isinstance(node, nodes.CallBlock) else None
        inside = is_set or any(self.stores(a) for a in node.args)
        read_first = (
            next(filter(None, (self.reads(d, is_set) for d in node.defaults)), None)
            or self.reads(call, is_set)
            or self.statements(node.body, inside)[0]
        )
        return read_first, is_set

    visit_CallBlock = visit_Macro

    def visit_With(self, node: nodes.With, is_set: bool) -> tuple[Read, bool]:
        inside = is_set or any(self.stores(t) for t in node.targets)
        read_first = (
            next(filter(None, (self.reads(v, is_set) for v in node.values)), None)
            or self.statements(node.body, inside)[0]
        )
        return read_first, is_set
