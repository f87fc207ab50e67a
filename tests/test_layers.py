"""The package's layers, and the rooms of `runtime/`, stand on each other in one
direction (DESIGN.md §6).

The import graph is read from the source (an import inside a function counts). For
cycles, one under ``if TYPE_CHECKING:`` does not count, since it never runs; for the
direction of the layers and rooms it does: a type-only import that climbs is still a
lower floor typed against a higher one. A name taken from a package's lazy ``_LAZY``
table counts as an import of the module it names.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "agentspec"

# Lowest first. A module may import from its own layer and the layers below it.
LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"core"}),
    frozenset({"formats"}),
    frozenset({"spec"}),
    frozenset({"stdlib"}),
    frozenset({"compiler"}),
    frozenset({"runtime"}),
    frozenset({"viewer", "init_templates"}),
    frozenset({"cli"}),
)

# The rooms of `runtime/`, lowest first; each imports only rooms below it (and itself).
RUNTIME_ROOMS: tuple[str, ...] = (
    "text",  # tokenizers, chat templates, model framing
    "algorithms",  # estimators and losses, plain torch on step tensors
    "episode",  # tools, environments, the loop, context policies, trajectories
    "policies",  # who acts: scripted, random, local models, chat APIs
    "compiled",  # what a generated module stands on: scope, contract, oracle, samples
    "mcp",  # tools served by MCP servers and OpenEnv environments
    "backends",  # local and verl training
    "commands",  # what `run`, `test` and `explore` do
    "serve",  # the episode session, its servers, the trainer-facing environments
    "targets",  # every compile target
)


def module_files() -> dict[str, Path]:
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


MODULES = module_files()


def _runs(tree: ast.AST, typing: bool = False) -> Iterator[ast.AST]:
    """Every node that can run: the bodies of `if TYPE_CHECKING:` are left out, unless
    ``typing`` asks for them too."""
    for node in ast.iter_child_nodes(tree):
        if not typing and isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from (n for child in node.orelse for n in [child, *_runs(child)])
            continue
        yield node
        yield from _runs(node, typing)


@functools.cache
def _lazy_table(module: str) -> dict[str, str]:
    """A package's PEP 562 table of name → module: a literal ``_LAZY`` (name → module)
    or ``_MODULES`` (module → names)."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    tables: dict[str, ast.expr] = {}
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and isinstance(value, ast.Dict):
            tables[target.id] = value
    if "_LAZY" in tables:
        return dict(ast.literal_eval(tables["_LAZY"]))
    if "_MODULES" in tables:
        by_module = ast.literal_eval(tables["_MODULES"])
        return {name: mod for mod, names in by_module.items() for name in names}
    return {}


def _owner(name: str) -> str | None:
    """The module of the package that ``name`` (a dotted import target) lives in."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(module: str, typing: bool = False) -> set[str]:
    """The package's modules ``module`` imports (``typing``: type-only imports too)."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in _runs(tree, typing):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                dotted = f"{node.module}.{alias.name}"
                if dotted in MODULES:  # a submodule
                    targets.append(dotted)
                elif node.module in MODULES and alias.name in _lazy_table(node.module):
                    targets.append(_lazy_table(node.module)[alias.name])
                else:
                    targets.append(node.module)
        for target in targets:
            owner = _owner(target) if target.startswith("agentspec") else None
            if owner and owner != module:
                found.add(owner)
    return found


@functools.cache
def import_graph(typing: bool = False) -> dict[str, set[str]]:
    """module -> the package's modules it imports; built when a test first asks (not at
    collection, where every pytest worker would parse the whole package)."""
    return {module: imports_of(module, typing) for module in MODULES}


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative; components with more than one node are cycles."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(sorted(component))
    return components


def top(module: str) -> str:
    """The top-level package (or module) of ``agentspec`` that ``module`` is in."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_no_module_imports_itself_back() -> None:
    assert strongly_connected(import_graph()) == []


def test_no_cycle_between_top_level_packages() -> None:
    packages: dict[str, set[str]] = {}
    for module, targets in import_graph().items():
        for target in targets:
            if top(module) != top(target) and top(target):
                packages.setdefault(top(module), set()).add(top(target))
            packages.setdefault(top(target), set())
    assert strongly_connected(packages) == []


def test_every_import_goes_down_the_layers() -> None:
    layer_of = {name: i for i, layer in enumerate(LAYERS) for name in layer}
    unplaced = {top(m) for m in MODULES if top(m)} - set(layer_of)
    assert not unplaced, f"place these in LAYERS: {sorted(unplaced)}"
    upward = [
        f"{module} -> {target}"
        for module, targets in sorted(import_graph(typing=True).items())
        for target in sorted(targets)
        if top(module) and top(target) and layer_of[top(target)] > layer_of[top(module)]
    ]
    assert upward == []


def room(module: str) -> str | None:
    """The room of `runtime/` that ``module`` is in (None outside the rooms)."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "runtime" else None


def test_every_runtime_room_is_placed() -> None:
    rooms = {p.name for p in (PACKAGE / "runtime").iterdir() if (p / "__init__.py").is_file()}
    assert rooms == set(RUNTIME_ROOMS)


def test_every_import_goes_down_the_runtime_rooms() -> None:
    floor = {name: i for i, name in enumerate(RUNTIME_ROOMS)}
    upward = [
        f"{module} -> {target}"
        for module, targets in sorted(import_graph(typing=True).items())
        for target in sorted(targets)
        if room(module) and room(target) and floor[room(target)] > floor[room(module)]
    ]
    assert upward == []


def test_no_cycle_between_runtime_rooms() -> None:
    rooms: dict[str, set[str]] = {}
    for module, targets in import_graph(typing=True).items():
        for target in targets:
            if room(module) and room(target) and room(module) != room(target):
                rooms.setdefault(room(module), set()).add(room(target))  # type: ignore[arg-type]
    assert strongly_connected(rooms) == []


def test_the_checker_catches_a_cycle() -> None:
    """The test above can fail: a two-module loop and a three-module loop are found."""
    graph = {"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"e"}, "e": {"c"}, "f": {"a"}}
    assert sorted(strongly_connected(graph)) == [["a", "b"], ["c", "d", "e"]]


def test_lazy_names_count_as_imports_of_their_module() -> None:
    assert "agentspec.runtime.episode.loop" in imports_of("agentspec.compiler.names") or (
        "agentspec.runtime" not in imports_of("agentspec.compiler.names")
    )
    assert _lazy_table("agentspec.runtime")["AgentEnvLoop"] == "agentspec.runtime.episode.loop"


def test_the_checkers_modules_use_only_each_others_public_names() -> None:
    """The `check_*` modules work on the `Checker` through its public methods and
    attributes; none reaches into another object's private ones."""
    reaches = []
    for path in sorted((PACKAGE / "compiler").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and ast.unparse(node.value) not in ("self", "cls", "inspect")
            ):
                reaches.append(f"{path.name}:{node.lineno} {ast.unparse(node)}")
    assert reaches == []


def test_the_checkers_jobs_stand_below_its_driver() -> None:
    """The checker's jobs work on a `CheckState` (compiler/check_state.py); the driver
    (`checker.Checker`) subclasses it and calls them. None of them imports the driver,
    not even for type annotations."""
    importers = []
    for path in sorted((PACKAGE / "compiler").glob("*.py")):
        if path.name in ("checker.py", "frontend.py"):
            continue  # the driver itself and what runs it
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "agentspec.compiler.checker":
                importers.append(f"{path.name}:{node.lineno}")
    assert importers == []
