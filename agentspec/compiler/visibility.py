"""What of a sample and of the state the agent sees: what its templates read.

A served spec (`agentspec serve --openenv`, the generated packages) answers clients
with tasks (the Task API) and the episode's state (`state`). A field the agent's
templates never read — an answer, an expected database, the resolution a grader
compares with — is the grader's, and serving it hands the score to whoever asks.
So a client gets only what the agent may see: the sample fields and the state
variables read by the templates the agent is shown (the prompt, each tool's
`observe`, the messages of guards, `context.summary`), plus what the spec declares
public (`data.public`, a state variable's `public: true`).

A template that reads `sample` (or `state`) whole — `{{ sample }}`, `{% set s = sample
%}`, `sample.items()` — shows all of it: every field is then public. A field read
only to decide something (`{% if sample.kind == "change" %}`) counts as read: the text
the agent sees depends on it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from jinja2 import TemplateSyntaxError, nodes

from agentspec.compiler import templates
from agentspec.spec.model import GuardSpec, TaskSpec

__all__ = ["AgentView", "agent_templates", "agent_view"]


@dataclass(frozen=True)
class AgentView:
    """The sample fields and state variables a client of a served spec may be given.

    ``None`` means all of them (a template the agent sees reads the whole sample, or the
    whole state); else the names, in the spec's order."""

    fields: tuple[str, ...] | None
    state: tuple[str, ...] | None


def agent_view(spec: TaskSpec) -> AgentView:
    """The fields and state variables the agent's templates read, with those the spec
    declares public."""
    fields: set[str] = set(spec.data.public) if spec.data is not None else set()
    state = {name for name, var in spec.state.items() if var.public}
    whole_sample = whole_state = False
    for text in agent_templates(spec):
        reads = _root_reads(text)
        whole_sample |= reads.whole("sample")
        whole_state |= reads.whole("state")
        fields |= reads.attributes.get("sample", set())
        state |= reads.attributes.get("state", set())
    declared = [*(spec.data.fields if spec.data else ()), *(spec.data.derived if spec.data else ())]
    return AgentView(
        fields=None if whole_sample else tuple(name for name in declared if name in fields),
        state=None if whole_state else tuple(name for name in spec.state if name in state),
    )


def agent_templates(spec: TaskSpec) -> Iterator[str]:
    """Every template whose text the agent is shown: the prompt, each tool's `observe`,
    the refusal messages of guards (a tool's own and the named ones), the state summary."""
    yield spec.prompt.system
    yield spec.prompt.user
    for tool in spec.tools.values():
        if tool.observe is not None:
            yield tool.observe
        yield from _guard_messages(tool.when)
    for guard in spec.guards.values():
        yield from _guard_messages(guard)
    if spec.context.summary is not None:
        yield spec.context.summary


def _guard_messages(guard: object) -> Iterator[str]:
    steps = guard if isinstance(guard, list) else [guard]
    for step in steps:
        if isinstance(step, GuardSpec):
            yield step.message


@dataclass
class _Reads:
    """The attributes a template reads of each root (`sample.question` → question), and
    the roots it reads otherwise (whole)."""

    attributes: dict[str, set[str]]
    whole_roots: set[str]

    def whole(self, root: str) -> bool:
        return root in self.whole_roots


_ROOTS = ("sample", "state")
# Reading one of these of a root is reading all of it (`sample.items()`, `state.get(k)`).
_WHOLE_READING_ATTRIBUTES = frozenset(dir(dict))


def _root_reads(text: str) -> _Reads:
    """What `text` reads of `sample` and `state`. A template that does not parse (the
    checker reports it; lowering never sees one) reads everything, to be safe."""
    reads = _Reads({root: set() for root in _ROOTS}, set())
    try:
        tree = templates.parse(text).tree
    except (TemplateSyntaxError, RecursionError):  # the checker refuses it: assume the worst
        reads.whole_roots.update(_ROOTS)
        return reads
    by_field: set[int] = set()  # the `sample` names read as `sample.FIELD`/`sample["FIELD"]`
    for node in tree.find_all((nodes.Getattr, nodes.Getitem)):
        assert isinstance(node, (nodes.Getattr, nodes.Getitem))
        owner = node.node
        if not (isinstance(owner, nodes.Name) and owner.name in _ROOTS and owner.ctx == "load"):
            continue
        key = node.attr if isinstance(node, nodes.Getattr) else _constant_key(node.arg)
        if key is None or key in _WHOLE_READING_ATTRIBUTES:
            continue  # a computed key or a dict method: the whole root (below)
        reads.attributes[owner.name].add(key)
        by_field.add(id(owner))
    for name in tree.find_all(nodes.Name):
        if name.name in _ROOTS and name.ctx == "load" and id(name) not in by_field:
            reads.whole_roots.add(name.name)
    return reads


def _constant_key(node: nodes.Node) -> str | None:
    return node.value if isinstance(node, nodes.Const) and isinstance(node.value, str) else None
