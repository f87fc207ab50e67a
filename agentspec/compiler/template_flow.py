"""Whether a template reads names it `{% set %}`s before the set has run.

Jinja's own analysis (`find_undeclared_variables`) counts a name set in only
some branches of an `{% if %}` as read from the context, even where every
read of it sits after the set in the same branch; the checker asks this
module whether any read can really run first. Control flow follows Jinja's
scoping: a branch's sets hold after the `if` only when every branch (an
`else` included) makes them; a `for` body's sets stay in the loop; macro,
call-block and `with` parameters are set inside their bodies.

One walk answers for every name at once (the names set so far are a set
that flows through the statements), so the cost stays linear in the
template however many names it sets.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from jinja2 import nodes

Set = frozenset[str]


def unset_reads(tree: nodes.Template, names: Iterable[str]) -> dict[str, nodes.Name]:
    """For each of `names` that some path reads while it is unset, the first such read."""
    flow = _Flow(frozenset(names))
    flow.statements(tree.body, frozenset())
    return flow.found


class _Flow:
    """Follows the tracked names through the statements: each visit takes the
    names set on entry and returns those set on exit, recording reads of
    names that are not set."""

    def __init__(self, tracked: Set):
        self.tracked = tracked
        self.found: dict[str, nodes.Name] = {}

    def statements(self, body: Sequence[nodes.Node], is_set: Set) -> Set:
        for node in body:
            is_set = self.visit(node, is_set)
        return is_set

    def visit(self, node: nodes.Node, is_set: Set) -> Set:
        visit = getattr(self, f"visit_{type(node).__name__}", None)
        if visit is not None:
            result: Set = visit(node, is_set)
            return result
        if isinstance(node, nodes.Expr):
            self.reads(node, is_set)
            return is_set
        # Any other statement (output, filter block, scope): its parts in order.
        return self.statements(list(node.iter_child_nodes()), is_set)

    def reads(self, node: nodes.Node | None, is_set: Set) -> None:
        """Record the reads in an expression of tracked names that are not set."""
        if node is None:
            return
        found = [node] if isinstance(node, nodes.Name) else node.find_all(nodes.Name)
        for name in found:
            if name.ctx != "load" or name.name not in self.tracked or name.name in is_set:
                continue
            self.found.setdefault(name.name, name)

    def stored(self, target: nodes.Node) -> Set:
        targets = [target, *target.find_all(nodes.Name)]
        return frozenset(
            n.name for n in targets if isinstance(n, nodes.Name) and n.ctx in ("store", "param")
        )

    def visit_Assign(self, node: nodes.Assign, is_set: Set) -> Set:
        self.reads(node.node, is_set)
        return is_set | self.stored(node.target)

    def visit_AssignBlock(self, node: nodes.AssignBlock, is_set: Set) -> Set:
        self.statements(node.body, is_set)
        self.reads(node.filter, is_set)
        return is_set | self.stored(node.target)

    def visit_If(self, node: nodes.If, is_set: Set) -> Set:
        branches = [(node.test, node.body)] + [(e.test, e.body) for e in node.elif_]
        after: Set | None = None  # set on every branch's way out
        for test, body in branches:
            self.reads(test, is_set)  # each test runs only when the ones before it failed
            out = self.statements(body, is_set)
            after = out if after is None else after & out
        out = self.statements(node.else_, is_set)
        return (after or frozenset()) & out if node.else_ else is_set

    def visit_For(self, node: nodes.For, is_set: Set) -> Set:
        self.reads(node.iter, is_set)
        inside = is_set | self.stored(node.target)
        self.reads(node.test, inside)
        self.statements(node.body, inside)  # a loop's sets stay in it
        self.statements(node.else_, is_set)
        return is_set

    def visit_Macro(self, node: nodes.Macro | nodes.CallBlock, is_set: Set) -> Set:
        for default in node.defaults:
            self.reads(default, is_set)
        if isinstance(node, nodes.CallBlock):
            self.reads(node.call, is_set)
        inside = is_set.union(*(self.stored(a) for a in node.args))
        self.statements(node.body, inside)
        return is_set

    visit_CallBlock = visit_Macro

    def visit_With(self, node: nodes.With, is_set: Set) -> Set:
        for value in node.values:
            self.reads(value, is_set)
        inside = is_set.union(*(self.stored(t) for t in node.targets))
        self.statements(node.body, inside)
        return is_set
