"""Specs that used to validate and then generate broken or wrong Python
(issue 13), now generated correctly: each module imports, resets, steps, and
computes what the spec says."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

from .helpers import build, call, import_source, play
from .test_generated_properties import ruff_problems


def test_non_finite_literals_run(tmp_path: Path) -> None:
    module = build(
        """
state:
  best: {type: float, initial: -.inf}
  odd: {type: "float?", initial: .nan}
  scores: {type: "list[float]", initial: [.inf, 1.0e+999, -.inf]}
tools:
  t:
    description: x
    parameters: {a: {type: string}}
    returns: "1e999"
    effect:
      - state.best = result if result > state.best else state.best
      - state.scores = state.scores + [-1e999]
      - state.odd = None
rewards:
  r: {on: final, value: "1.0 if state.best == 1e999 and state.odd == None else 0.0"}
""",
        tmp_path,
    )
    fresh = module.State()
    assert fresh.best == -math.inf and math.isnan(fresh.odd)
    traj, env = play(module, [call("t", a="x"), "done"])
    assert env.state.best == math.inf
    assert env.state.scores == [math.inf, math.inf, -math.inf, -math.inf]
    assert traj.steps[-1].rewards == {"r": 1.0}
    assert not traj.steps[0].info.get("expression_errors")


def test_plain_date_is_a_string_and_pairs_become_characters(tmp_path: Path) -> None:
    module = build(
        """
state:
  since: {type: str, initial: 2024-01-01}
tools:
  t:
    description: "emoji \\ud83d\\ude00"
    parameters: {a: {type: string}}
    returns: state.since
    effect: ["state.since = args.a"]
rewards:
  r: {on: final, value: "1.0 if state.since == '\\U0001F600' else 0.0"}
""",
        tmp_path,
    )
    assert module.State().since == "2024-01-01"
    assert module.ENV_CLASS.tool_classes[0].description == "emoji \U0001f600"
    traj, _ = play(module, [call("t", a="\U0001f600"), "done"])
    assert traj.steps[0].observation is not None and "2024-01-01" in traj.steps[0].observation
    assert traj.steps[-1].rewards == {"r": 1.0}


def test_a_tool_named_spec_does_not_become_every_tools_base(tmp_path: Path) -> None:
    module = build(
        """
state:
  hits: {type: int}
tools:
  spec:
    description: guarded
    parameters: {a: {type: string}}
    when: state.hits > 100
    effect: ["state.hits += 100"]
  other:
    description: plain
    parameters: {a: {type: string}}
    effect: ["state.hits += 1"]
rewards:
  r: {on: final, value: "float(state.hits)"}
""",
        tmp_path,
        head=_head("spec_tool"),
    )
    from agentspec.runtime.compiled.env import SpecTool, SpecToolEnv

    spec_cls, other_cls = module.ENV_CLASS.tool_classes
    assert spec_cls.__name__ != "SpecTool" and spec_cls.__bases__ == (SpecTool,)
    assert other_cls.__bases__ == (SpecTool,)
    assert module.ENV_CLASS.__bases__ == (SpecToolEnv,)  # the spec is named spec_tool
    traj, env = play(module, [call("other", a="x"), call("other", a="y"), "done"])
    assert env.state.hits == 2  # no guard or effect inherited from `spec`
    assert traj.steps[-1].rewards == {"r": 2.0}


def test_keyword_and_underscore_names_keep_separate_fields(tmp_path: Path) -> None:
    module = build(
        """
state:
  class: {type: int, initial: 1}
  class_: {type: int, initial: 2}
  class__: {type: int, initial: 3}
  list: {type: "list[str]"}
  _dflt_list_: {type: str, initial: x}
  _HAS_DEFAULT_FACTORY: {type: int}
functions:
  def: {impl: "json:dumps", params: [any], returns: str}
  _quote: {impl: "json:dumps", params: [any], returns: str}
tools:
  t:
    description: x
    parameters: {a: {type: string}}
    returns: def(args.a) + _quote(args.a)
    effect:
      - state.class += 10
      - state.class_ += 20
      - state.class__ += 30
      - state.list = state.list + [state._dflt_list_]
      - state._HAS_DEFAULT_FACTORY += 1
rewards:
  r: {on: final, value: "float(state.class + state.class_ + state.class__ + len(state.list) + state._HAS_DEFAULT_FACTORY)"}
""",
        tmp_path,
    )
    fields = {f.metadata["spec_name"]: f.name for f in dataclasses.fields(module.State)}
    assert len(set(fields.values())) == len(fields) == 6
    fresh = module.State()
    assert (fresh.class_, fresh.class__, fresh.class___) == (1, 2, 3)
    assert fresh.list_ == [] and fresh._dflt_list_ == "x"
    traj, env = play(module, [call("t", a="q"), "done"])
    assert traj.steps[0].observation is not None and '"q""q"' in traj.steps[0].observation
    assert (env.state.class_, env.state.class__, env.state.class___) == (11, 22, 33)
    assert traj.steps[-1].rewards == {"r": 11 + 22 + 33 + 1 + 1}


def test_words_in_strings_import_nothing(tmp_path: Path) -> None:
    path = tmp_path / "words.yaml"
    path.write_text(
        """\
agentspec: 1
name: t
prompt: {user: "hi"}
tools:
  t:
    description: "A Path, Any Policy, a ClassVar and make_adapter: just words"
    parameters: {a: {type: string}}
    returns: "'UserFunctions ' + args.a"
""",
        encoding="utf-8",
    )
    from agentspec.compiler.build import compile_spec

    source = compile_spec(path).source
    imports = [line for line in source.splitlines() if line.startswith(("import ", "from "))]
    assert not any("make_adapter" in line or "UserFunctions" in line for line in imports)
    assert "ClassVar" not in "\n".join(imports) or "ClassVar[" in source
    assert "Policy," in source  # the flow does use Policy
    assert ruff_problems(source) == ""


def _head(name: str) -> str:
    from .helpers import HEAD

    return HEAD.replace("name: t", f"name: {name}")


def test_lint_flagged_forms_are_emitted_clean_and_mean_the_same(tmp_path: Path) -> None:
    path = tmp_path / "forms.yaml"
    path.write_text(
        """\
agentspec: 1
name: forms
prompt: {user: "hi"}
state:
  n: {type: int, initial: 2}
  x: {type: "float?"}
  b: {type: bool, initial: true}
  l: {type: "list[str]", initial: [q]}
tools:
  never:
    description: never available
    when: false
  t:
    description: x
    parameters: {a: {type: string}}
    effect:
      - state.l = ['a'] + state.l + [args.a]
      - state.n = -(-state.n) + 1
      - state.x = None if not state.b == true else 1.5
      - state.b = false if state.n < 0 else true
rewards:
  r:
    on: final
    value: >-
      (1.0 if 0 < state.n and not state.n == 1 and not 'z' in state.l else 0.0)
      + (1.0 if state.x != None and None == None and not 3 == None else 0.0)
      + (1.0 if not not state.b and (true if state.b else false) or false and state.b else 0.0)
      + (1.0 if true or state.b else 0.0)
      + (2.0 if not state.l == [] else 0.0)
""",
        encoding="utf-8",
    )
    from agentspec.compiler.build import compile_spec
    from agentspec.compiler.frontend import check_file

    result = check_file(path)
    assert result.ok and not result.warnings, [d.message for d in result.diagnostics]
    source = compile_spec(path).source
    assert ruff_problems(source) == ""
    for written in (
        "s.state.x is not None",
        "s.state.n > 0",
        '["a", *s.state.l_, ',
        "return False",
    ):
        assert written in source
    module = import_source(source)
    traj, env = play(module, [call("t", a="w"), "done"])
    assert env.state.l_ == ["a", "q", "w"] and env.state.n == 3 and env.state.x == 1.5
    assert traj.steps[-1].rewards == {"r": 6.0}
