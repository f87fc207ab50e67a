"""Property: every spec `validate --strict` accepts compiles to a module that
imports and passes `ruff check` with the project's own configuration.

Specs are drawn with hostile names (keywords, soft keywords, dunders, names
that differ only by trailing underscores or case, names of the generated
module's own classes and imports, names dataclasses use internally) and
hostile values (huge and non-finite floats, big integers, unicode), and
expressions in the forms linters object to (`x == None`, `0 < x`,
`not a == b`, `a and b or c`). Seeded and small: it runs in seconds.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import keyword
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from agentspec.compiler.build import compile_spec
from agentspec.compiler.frontend import check_file

from .helpers import import_source

ROOT = Path(__file__).resolve().parents[2]
_files = itertools.count()
DATA_FILE = "samples.jsonl"  # written next to each drawn spec

HOSTILE_NAMES = [
    *keyword.kwlist[3:],  # class, def, lambda, … (False/None/True are not names)
    *keyword.softkwlist,  # match, case, type, _
    "class_",
    "class__",
    "x",
    "x_",
    "X",
    "__init__",
    "__post_init__",
    "__x",
    "_x",
    "State",
    "Env",
    "Flow",
    "SpecTool",
    "spec",
    "spec_tool",
    "spec_tool_env",
    "SpecToolEnv",
    "spec_adapter",
    "dataclasses",
    "list",
    "dict",
    "float",
    "Any",
    "ClassVar",
    "Path",
    "user",
    "fn",
    "s",
    "self",
    "template",
    "load_samples",
    "_dflt_x",
    "_HAS_DEFAULT_FACTORY",
    "MISSING",
    "_type_x",
    "l",
    "I",
    "O",
]
names = st.one_of(st.sampled_from(HOSTILE_NAMES), st.from_regex(r"\A[A-Za-z_][A-Za-z0-9_]{0,6}\Z"))
# What the checker accepts of them: no leading `__` (E410).
accepted_names = names.filter(lambda name: not name.startswith("__"))
floats = st.one_of(
    st.sampled_from([math.inf, -math.inf, math.nan, 1e308, -0.0, 5e-324]),
    st.floats(allow_nan=True, allow_infinity=True),
)
texts = st.text(
    st.characters(exclude_categories=("Cs",)),
    max_size=12,
)
TYPES = ["int", "float", "str", "bool", "list[str]", "dict", "float?"]


INITIAL = {
    "int": st.integers(-(2**70), 2**70),
    "float": floats,
    "str": texts,
    "bool": st.booleans(),
    "list[str]": st.lists(texts, max_size=2),
    "dict": st.dictionaries(texts, st.one_of(floats, texts), max_size=2),
    "float?": st.one_of(st.none(), floats),
}


def condition(draw: st.DrawFn, var: str, type_: str, hostile: bool) -> str:
    """A boolean expression reading `state.var`, in a form linters dislike; with
    `hostile`, also in forms the checker rejects (E501, W803)."""
    v = f"state.{var}"
    forms = {
        "int": [
            f"{v} == 3",
            f"3 < {v}",
            f"not {v} == 1",
            f"{v} + 1.0e999 > 0",
            f"-1 >= {v}",
            f"-(-{v}) >= +(+1)",
            *([f"'%s' % {v} == '1'"] if hostile else []),  # E501: no printf formatting
        ],
        "float": [f"{v} != 0.5", f"1e999 == {v}", f"not {v} != 2.0", f"{v} * 2 <= 1e308"],
        "str": [f"{v} == 'ü'", f"'a' in {v}", f"not 'a' in {v}", f"len({v}) > 0"],
        "bool": [f"{v} == true", f"not not {v}", v, f"false != {v}"],
        "list[str]": [f"'x' in {v}", f"len({v} + ['y']) == 2", f"[] == {v}"],
        "dict": [
            f"'k' in {v}",
            f"not 'k' not in {v}",
            f"{{}} == {v}",
            f"{{'k': 1, 'k': 2}} == {v}",
        ],
        "float?": [
            f"{v} == None",
            f"None != {v}",
            f"not {v} == None",
            f"{v} == None or 3 == None",
            f"None == None and {v} != None",
        ],
    }[type_]
    form = draw(st.sampled_from(forms))
    return draw(
        st.sampled_from(
            [
                form,
                f"(true if {form} else false)",
                f"(false if {form} else true)",
                f"({form}) == false",
                f"true or {form}",
                f"false or {form}",
                f"true and {form}",
                *(
                    [f"({form}) and not ({form})", f"(true if {form} else true)"]  # W803
                    if hostile
                    else []
                ),
            ]
        )
    )


def assignment(draw: st.DrawFn, var: str, type_: str, arg: str) -> str:
    v = f"state.{var}"
    forms = {
        "int": [f"{v} += 1", f"{v} = -5"],
        "float": [f"{v} = 1.0e999", f"{v} = {v} * 0.5", f"{v} = -1e999"],
        "str": [f"{v} = args.{arg}", f"{v} = 'ü\\\"'"],
        "bool": [f"{v} = not {v}", f"{v} = true"],
        "list[str]": [
            f"{v} = {v} + [args.{arg}]",
            f"{v} = ['a'] + {v} + [args.{arg}] + {v}",
            f"{v} = ([] + ['b'] if not {v} == [] else {v})",
        ],
        "dict": [f"{v} = {{'k': 1.0e999}}"],
        "float?": [f"{v} = None", f"{v} = 2.5"],
    }[type_]
    return draw(st.sampled_from(forms))


@st.composite
def specs(draw: st.DrawFn, hostile: bool = True) -> dict[str, Any]:
    """A spec over `DATA_FILE` with hostile names, values and expressions; with
    `hostile`, also with what the checker rejects (reserved names, NaN weights,
    rejected expressions), so that most drawn specs are errors."""
    names_ = names if hostile else accepted_names
    state_names = draw(st.lists(names_, min_size=1, max_size=4, unique=True))
    types = {name: draw(st.sampled_from(TYPES)) for name in state_names}
    state = {n: {"type": t, "initial": draw(INITIAL[t])} for n, t in types.items()}
    tool_names = draw(st.lists(names_, min_size=1, max_size=3, unique=True))
    function, arg, field, derived, reward = draw(
        st.lists(names_, min_size=5, max_size=5, unique=True)
    )
    tools: dict[str, Any] = {}
    for i, name in enumerate(tool_names):
        tool: dict[str, Any] = {
            "description": draw(texts),
            "parameters": {arg: {"type": "string", "description": draw(texts), "maxLength": 2**70}},
            "returns": draw(st.sampled_from([f"{function}(args.{arg})", f"args.{arg}", "1e999"])),
            "effect": [assignment(draw, n, t, arg) for n, t in types.items()],
            "timeout": draw(st.sampled_from([30.0, 0.5, 1e-3, 1e9, 1e300, math.inf])),
        }
        if i == 0 and draw(st.booleans()):
            tool["when"] = " and ".join(condition(draw, n, t, hostile) for n, t in types.items())
        tools[name] = tool
    checks = [condition(draw, n, t, hostile) for n, t in types.items()]
    joined = checks[0]
    for check in checks[1:]:
        joined = f"{joined} {draw(st.sampled_from(['and', 'or']))} {check}"
    spec_name = draw(st.sampled_from(["spec_tool", "spec_adapter", "t", "state", "class"]))
    return {
        "agentspec": 1,
        "name": spec_name,
        "description": draw(st.one_of(texts, st.sampled_from(["nul \0 here", 'say "hi"\x1b']))),
        "data": {
            "source": f"jsonl:{DATA_FILE}",
            "params": {draw(texts): draw(floats), "day": "2024-01-01"},
            "fields": {field: "str"},
            "derived": {derived: f"sample.{field} + {draw(texts)!r}"},
        },
        "prompt": {"user": draw(texts) or "go"},
        "state": state,
        "functions": {function: {"impl": "json:dumps", "params": ["any"], "returns": "str"}},
        "tools": tools,
        "episode": {"success": f"reward.{reward} > 0 and sample.{derived} != ''"},
        "rewards": {
            reward: {
                "on": "final",
                "value": f"1.0 if {joined} else 0.0",
                "weight": draw(
                    st.sampled_from(
                        [1.0, -0.5, 0.0, 1e300, -1e-300, *([math.nan] if hostile else [])]
                    )
                ),
            },
            "fn_used": {"on": "final", "value": f"1.0 if {function}('x') == 'x' else 0.0"},
            "on_tool": {"on": f"tool:{tool_names[0]}", "value": f"float(len(args.{arg}))"},
        },
        "oracle": [draw(texts)],
    }


def ruff_problems(source: str) -> str:
    """`ruff check` of one generated module with the project's configuration."""
    done = subprocess.run(
        [
            *(sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise"),
            *("--config", str(ROOT / "pyproject.toml"), "--stdin-filename", "generated.py", "-"),
        ],
        input=source,
        capture_output=True,
        text=True,
        check=False,
    )
    return "" if done.returncode == 0 else done.stdout + done.stderr


def write_spec(folder: Path, spec: dict[str, Any]) -> Path:
    """The spec as YAML in a fresh folder of its own, beside a one-line data file."""
    folder.mkdir()
    field = next(iter(spec["data"]["fields"]))
    (folder / DATA_FILE).write_text(json.dumps({field: "x"}) + "\n", encoding="utf-8")
    path = folder / "spec.yaml"
    path.write_text(yaml.safe_dump(spec, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(specs(hostile=True))
def test_every_diagnostic_of_a_hostile_spec_has_a_location(
    tmp_path_factory: Any, spec: Any
) -> None:
    path = write_spec(tmp_path_factory.getbasetemp() / f"prop{next(_files)}", spec)
    for diagnostic in check_file(path).diagnostics:
        assert diagnostic.span is not None, f"{diagnostic.code} has no location"


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(specs(hostile=False))
def test_accepted_specs_compile_import_and_pass_ruff(tmp_path_factory: Any, spec: Any) -> None:
    path = write_spec(tmp_path_factory.getbasetemp() / f"prop{next(_files)}", spec)
    result = check_file(path)
    # What `validate --strict` accepts; Hypothesis fails the test when too few are.
    assume(result.ok and not result.warnings)
    source = compile_spec(path).source
    module = import_source(source)
    assert isinstance(module.ENV_CLASS(), module.ENV_CLASS)
    state = module.State()
    declared = {f.metadata["spec_name"] for f in dataclasses.fields(state)}
    assert declared == set(spec["state"])  # one field per variable, none collapsed
    assert ruff_problems(source) == "", ruff_problems(source)


def test_a_constant_none_comparison_folds_inside_and_or(tmp_path: Path) -> None:
    """Found by the property above: `3 == None` is written `False`, so `3 == None
    and x` must fold like `false and x` (ruff's SIM223), inside another `or` too."""
    spec = {
        "agentspec": 1,
        "name": "folding",
        "data": {"source": f"jsonl:{DATA_FILE}", "fields": {"a": "str"}},
        "prompt": {"user": "go"},
        "state": {"x": {"type": "int", "initial": 0}},
        "tools": {"t": {"description": "d", "parameters": {}, "effect": ["state.x += 1"]}},
        "episode": {"success": "reward.r > 0"},
        "rewards": {
            "r": {
                "on": "final",
                "value": "1.0 if state.x == 3 or 3 == None and state.x == 3 else 0.0",
            },
            "s": {"on": "final", "value": "1.0 if 3 != None or state.x == 3 else 0.0"},
            "t": {"on": "final", "value": "2.0 if true or state.x == 3 or state.x == 4 else 0.0"},
        },
        "oracle": ["t"],
    }
    path = write_spec(tmp_path / "spec", spec)
    assert check_file(path).ok
    source = compile_spec(path).source
    assert "return 1.0 if s.state.x == 3 or False else 0.0" in source
    assert "return 1.0 if True else 0.0" in source
    assert "return 2.0 if True else 0.0" in source  # found by the property in a CI-like run
    assert ruff_problems(source) == "", ruff_problems(source)


def test_an_infinite_constant_compared_with_an_upper_case_variable_keeps_its_side(
    tmp_path: Path,
) -> None:
    """Found by the property above: `1e999 == state.I` was written
    `s.state.I_ == float("inf")`, which ruff's SIM300 calls a Yoda condition (to ruff
    an upper-case name is probably a constant and a call is not); `3 == state.I` still
    turns. The side is chosen on the written code, as ruff rates it."""
    spec = {
        "agentspec": 1,
        "name": "yoda",
        "data": {"source": f"jsonl:{DATA_FILE}", "fields": {"a": "str"}},
        "prompt": {"user": "go"},
        "state": {
            "I": {"type": "float", "initial": 0.0},
            "y": {"type": "float", "initial": 0.0},
            "L": {"type": "list[float]", "initial": []},
        },
        "tools": {
            "t": {
                "description": "d",
                "parameters": {},
                "effect": ["state.I = 1e999", "state.y = 1.0", "state.L = [1.0]"],
            }
        },
        "episode": {"success": "reward.r > 0"},
        "rewards": {
            "r": {"on": "final", "value": "1.0 if 1e999 == state.I else 0.0"},
            "s": {"on": "final", "value": "1.0 if -1e999 < state.I or 3 == state.I else 0.0"},
            # found in review: an infinity on the right, in a list, a lower-case variable
            "u": {"on": "final", "value": "1.0 if state.I < 1e999 or [1e999] == state.L else 0.0"},
            "v": {"on": "final", "value": "1.0 if state.I < state.y else 0.0"},
        },
        "oracle": ["t"],
    }
    path = write_spec(tmp_path / "spec", spec)
    assert check_file(path).ok
    source = compile_spec(path).source
    assert 'return 1.0 if float("inf") == s.state.I_ else 0.0' in source
    assert "s.state.I_ == 3" in source
    assert ruff_problems(source) == "", ruff_problems(source)
