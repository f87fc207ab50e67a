"""Deep checks beyond the invalid corpus: user modules found from the spec's
folder, `validate --import`, user generators, oracle values, registry metadata."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from agentspec.compiler.frontend import FrontendResult, check_file

HEAD = """\
agentspec: 1
name: units
data: {source: jsonl:rows.jsonl, fields: {value: float, unit: str}}
prompt: {user: "Convert {{ sample.value }} {{ sample.unit }}"}
"""

MODULE = """\
def convert(value, unit):
    return value * 2


def make_convert(factor):
    return lambda value, unit: value * factor
"""


def write(folder: Path, body: str, module: str | None = MODULE, name: str = "spec.yaml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "rows.jsonl").write_text('{"value": 1.5, "unit": "km"}\n', encoding="utf-8")
    if module is not None:
        (folder / f"unitlib_{folder.name}.py").write_text(module, encoding="utf-8")
    path = folder / name
    path.write_text(HEAD + textwrap.dedent(body).replace("MOD", f"unitlib_{folder.name}"))
    return path


def codes(result: FrontendResult) -> list[str]:
    return [d.code for d in result.diagnostics]


TOOL = """
tools:
  convert:
    description: Convert.
    parameters: {value: {type: number}, unit: {type: string}}
    returns: conv(args.value, args.unit)
"""


def test_user_module_beside_the_spec_is_found_without_importing_it(tmp_path: Path) -> None:
    path = write(
        tmp_path / "a", "functions:\n  conv: {impl: 'MOD:convert', params: [float, str]}\n" + TOOL
    )
    assert codes(check_file(path)) == []
    assert "unitlib_a" not in sys.modules  # found, not run


def test_import_flag_checks_the_signature(tmp_path: Path) -> None:
    body = "functions:\n  conv: {impl: 'MOD:convert', params: [float, str, str]}\n" + TOOL.replace(
        "conv(args.value, args.unit)", "conv(args.value, args.unit, args.unit)"
    )
    path = write(tmp_path / "b", body)
    # Plain validate reads a plain `def` from its source, without importing it (issue 26).
    assert codes(check_file(path)) == ["E903"]
    assert "unitlib_b" not in sys.modules
    result = check_file(path, import_user_code=True)
    assert codes(result) == ["E903"]
    assert result.diagnostics[0].span is not None and result.diagnostics[0].span.line == 6


def test_config_makes_a_factory_and_plain_validate_checks_its_shape(tmp_path: Path) -> None:
    # Issue 26: `config` on a function that is not a factory passed plain
    # validate and failed at the first call. The source says it cannot work.
    wrong = "functions:\n  conv: {impl: 'MOD:convert', params: [float, str], config: {scale: 2}}\n"
    result = check_file(write(tmp_path / "g", wrong + TOOL))
    assert codes(result) == ["E902"]
    (d,) = result.diagnostics
    assert "is a factory, called once as `impl(**config)`" in d.message
    assert d.hint is not None and "convert(value, unit)" in d.hint and "drop `config`" in d.hint
    assert d.span is not None and d.span.line == 6
    assert "unitlib_g" not in sys.modules  # read, never run
    right = wrong.replace("MOD:convert", "MOD:make_convert").replace("scale", "factor")
    assert codes(check_file(write(tmp_path / "h", right + TOOL))) == []


@pytest.mark.parametrize(
    "module",
    [
        "import functools\n@functools.cache\ndef convert(value, unit):\n    return value\n",
        "convert = lambda value, unit: value\n",
        "class Base:\n    pass\nclass convert(Base):\n    def __init__(self):\n        pass\n",
    ],
)
def test_shapes_the_source_does_not_show_are_left_to_import(tmp_path: Path, module: str) -> None:
    body = "functions:\n  conv: {impl: 'MOD:convert', params: [float, str], config: {scale: 2}}\n"
    assert codes(check_file(write(tmp_path / "i", body + TOOL, module=module))) == []


CONVERT = "functions:\n  conv: {impl: 'MOD:ATTR', params: [float, str]}\n" + TOOL


def test_a_name_the_module_does_not_define_is_an_error_at_the_impl(tmp_path: Path) -> None:
    path = write(tmp_path / "n", CONVERT.replace("ATTR", "nope"))
    result = check_file(path)
    assert codes(result) == ["E904"]
    found = result.diagnostics[0]
    assert "unitlib_n.py" in found.message and "'nope'" in found.message
    assert found.span is not None and (found.span.line, found.span.column) == (6, 16)
    assert found.hint is not None and "convert" in found.hint
    assert "unitlib_n" not in sys.modules  # read, not imported
    near = write(tmp_path / "m", CONVERT.replace("ATTR", "convrt"))
    assert check_file(near).diagnostics[0].hint == "did you mean 'unitlib_m:convert'?"


def test_a_module_that_does_not_parse_is_an_error_with_its_line(tmp_path: Path) -> None:
    module = "def convert(value, unit):\n    return value\n\ndef broken(x)\n    return x\n"
    result = check_file(write(tmp_path / "s", CONVERT.replace("ATTR", "convert"), module=module))
    assert codes(result) == ["E904"]
    found = result.diagnostics[0]
    assert "does not parse" in found.message and "unitlib_s.py:4:" in found.message
    assert found.span is not None and found.span.line == 6
    assert found.hint == "fix line 4 of unitlib_s.py"


@pytest.mark.parametrize(
    "module",
    [
        "def convert(value, unit):\n    return value\n",
        "from math import floor as convert\n",
        "import json\nconvert, other = json.dumps, 1\n",
        "try:\n    from fast import convert\nexcept ImportError:\n    def convert(v, u):\n        return v\n",
        "if True:\n    class convert:\n        pass\n",
        "for convert in [len]:\n    pass\n",
        "with open(__file__) as convert:\n    pass\n",
        "def setup():\n    global convert\n    convert = len\nsetup()\n",
        "(convert := len)\n",
        "convert: object = len\n",
        # names the source does not spell: the module may still define it
        "from math import *\n",
        "globals()['convert'] = len\n",
        "for name in ['convert']:\n    vars()[name] = len\n",
        "def __getattr__(name):\n    return len\n",
        "exec('def convert(v, u): return v')\n",
        "import sys\nsetattr(sys.modules[__name__], 'convert', len)\n",
    ],
)
def test_names_a_module_may_define_are_not_reported(tmp_path: Path, module: str) -> None:
    path = write(tmp_path / "k", CONVERT.replace("ATTR", "convert"), module=module)
    assert codes(check_file(path)) == []


def test_every_module_attr_of_the_spec_is_read(tmp_path: Path) -> None:
    """generator:, environment.adapter, oracle.hook and context.custom, as functions.impl."""
    folder = tmp_path / "every"
    folder.mkdir()
    (folder / "mine.py").write_text("def present(*args, **kwargs):\n    return []\n")
    (folder / "rows.jsonl").write_text('{"value": 1.5, "unit": "km"}\n')
    spec = folder / "spec.yaml"
    spec.write_text(
        textwrap.dedent(
            """\
            agentspec: 1
            name: every
            data: {source: "generator:mine:rows", fields: {value: float}}
            prompt: {user: "hi"}
            environment: {adapter: "mine:Adapter"}
            oracle: {hook: "mine:expert"}
            context: {policy: custom, custom: "mine:window", max_prompt_tokens: 100}
            rewards:
              r: {on: final, value: 1.0}
            """
        )
    )
    result = check_file(spec)
    found = {(d.code, d.span.line) for d in result.diagnostics if d.span is not None}
    assert found == {("E904", 3), ("E904", 5), ("E904", 6), ("E904", 7)}, result.diagnostics
    assert all("mine.py" in d.message for d in result.diagnostics)
    (folder / "mine.py").write_text("def present(\n")
    result = check_file(spec)
    assert [d.code for d in result.diagnostics] == ["E904"] * 4
    assert all("mine.py:1:" in d.message for d in result.diagnostics)


def test_packages_and_submodules_beside_the_spec(tmp_path: Path) -> None:
    # a name no test imports: a module Python already holds is left to `--import`
    folder = tmp_path / "pkgs"
    (folder / "deepunits").mkdir(parents=True)
    (folder / "deepunits" / "__init__.py").write_text("from .core import convert\n")
    (folder / "deepunits" / "core.py").write_text("def convert(value, unit):\n    return value\n")
    (folder / "deepunits" / "extra.py").write_text("")
    (folder / "rows.jsonl").write_text('{"value": 1.5, "unit": "km"}\n')
    spec = folder / "spec.yaml"

    def check(impl: str) -> list[str]:
        spec.write_text(HEAD + CONVERT.replace("MOD:ATTR", impl))
        return codes(check_file(spec))

    assert check("deepunits:convert") == []
    assert check("deepunits.core:convert") == []
    assert check("deepunits:extra") == []  # a submodule is an attribute once imported
    assert check("deepunits.core:nope") == ["E904"]
    assert check("deepunits.missing:convert") == ["E904"]
    (folder / "deepunits" / "__init__.py").write_text("x = (\n")
    assert check("deepunits.core:convert") == ["E904"]  # importing deepunits.core runs its __init__


def test_modules_not_beside_the_spec_are_left_to_import(tmp_path: Path) -> None:
    folder = tmp_path / "installed"
    folder.mkdir()
    (folder / "rows.jsonl").write_text('{"value": 1.5, "unit": "km"}\n')
    # `json` is the standard library's, even with a json.py beside the spec
    (folder / "json.py").write_text("x = (\n")
    spec = folder / "spec.yaml"
    spec.write_text(HEAD + CONVERT.replace("MOD:ATTR", "json:nope"))
    assert codes(check_file(spec)) == []
    spec.write_text(HEAD + CONVERT.replace("MOD:ATTR", "pytest:nope"))  # installed
    assert codes(check_file(spec)) == []


def test_import_flag_checks_factory_config_and_attributes(tmp_path: Path) -> None:
    body = (
        "functions:\n"
        "  conv: {impl: 'MOD:make_convert', params: [float, str], config: {scale: 2}}\n"
        "  other: {impl: 'MOD:convrt', params: [float, str]}\n"
        + TOOL.replace(
            "conv(args.value, args.unit)", "conv(args.value, args.unit) + other(1.0, 'x')"
        )
    )
    result = check_file(write(tmp_path / "c", body), import_user_code=True)
    assert codes(result) == ["E902", "E904"]
    assert result.diagnostics[1].hint is not None and "convert" in result.diagnostics[1].hint


def test_module_that_raises_on_import_is_a_located_error(tmp_path: Path) -> None:
    body = "functions:\n  conv: {impl: 'MOD:convert', params: [float, str]}\n" + TOOL
    path = write(tmp_path / "d", body, module="raise RuntimeError('no licence')\n")
    result = check_file(path, import_user_code=True)
    assert codes(result) == ["E904"]
    assert "no licence" in result.diagnostics[0].message


def test_user_generator_in_the_spec_folder(tmp_path: Path) -> None:
    folder = tmp_path / "e"
    module = "def rows(*, split='train'):\n    yield {'value': 1.0, 'unit': 'm'}\n"
    path = write(folder, "rewards:\n  r: {on: final, value: 1.0}\n", module=module)
    text = path.read_text().replace("jsonl:rows.jsonl", "generator:unitlib_e:rows")
    path.write_text(text)
    assert codes(check_file(path)) == []
    path.write_text(text.replace("generator:unitlib_e:rows", "generator:nowhere_mod:rows"))
    assert codes(check_file(path)) == ["E904"]


def test_oracle_argument_values_are_checked_against_the_first_row(tmp_path: Path) -> None:
    body = """
    tools:
      pick:
        description: Pick a unit.
        parameters: {unit: {type: string, enum: [m, cm]}}
    episode: {tool_format: bracket}
    rewards:
      r: {on: final, value: 1.0}
    oracle:
      - "pick[{{ sample.unit }}]"
    """
    result = check_file(write(tmp_path / "f", body, module=None))
    assert codes(result) == ["E910"] and "'km' is not one of" in result.diagnostics[0].message


@pytest.mark.parametrize(
    ("argument", "found"),
    [
        ('"{{ sample.value }}"', ["E910"]),  # quoted: a string for every sample
        ("{{ sample.value }}", []),
        ("{{ sample.unit | tojson }}", ["E910"]),  # a str field: a string for every sample
        ("{{ sample.unit | length }}", []),
    ],
)
def test_oracle_argument_types_are_checked_without_a_readable_first_row(
    tmp_path: Path, argument: str, found: list[str]
) -> None:
    # the data is not on this machine: placeholders render, and their JSON types are the
    # ones every sample gives (a quoted number failed every oracle episode at run time)
    body = """
    tools:
      scale:
        description: Scale.
        parameters: {factor: {type: number}}
    episode: {tool_format: hermes}
    rewards:
      r: {on: final, value: 1.0}
    oracle:
      - '<tool_call>{"name": "scale", "arguments": {"factor": ARG}}</tool_call>'
    """.replace("ARG", argument)
    spec = write(tmp_path / "f", body, module=None)
    spec.write_text(spec.read_text().replace("jsonl:rows.jsonl", "jsonl:elsewhere/rows.jsonl"))
    result = check_file(spec)
    errors = [d for d in result.diagnostics if d.code.startswith("E")]
    assert [d.code for d in errors] == found, [d.message for d in errors]
    if found:
        assert "is a string for every sample, and the tool takes number" in errors[0].message


PICK = """
tools:
  pick:
    description: Pick a unit.
    parameters: {unit: {type: string}}
rewards:
  r: {on: final, value: 1.0}
"""


@pytest.mark.parametrize(
    "user",
    [
        "{{ sample.unit[5] }}",  # 'km' has no element 5
        "{{ sample.value | join(',') }}",  # a float cannot be joined
        "{{ sample.unit }} {{ tools[3].function.name }}",  # one tool only
    ],
)
def test_a_prompt_that_fails_for_the_first_row_is_an_error_at_the_prompt(
    tmp_path: Path, user: str
) -> None:
    path = write(tmp_path / "p", PICK, module=None)
    text = path.read_text()
    path.write_text(text.replace('"Convert {{ sample.value }} {{ sample.unit }}"', repr(user)))
    result = check_file(path)
    assert codes(result) == ["E913"]
    found = result.diagnostics[0]
    assert found.message.startswith("prompt.user fails to render for the first sample")
    assert found.span is not None and found.span.line == 4  # the `prompt:` line


def test_a_prompt_renders_with_the_variables_an_episode_gives_it(tmp_path: Path) -> None:
    path = write(tmp_path / "q", PICK + "constants: {units: [m, km]}\n", module=None)
    text = path.read_text()
    user = "{{ sample.unit }} of {{ constants.units | join('/') }} via {{ tools[0].function.name }}"
    path.write_text(text.replace('"Convert {{ sample.value }} {{ sample.unit }}"', repr(user)))
    assert codes(check_file(path)) == []


def test_prompts_are_not_rendered_without_a_real_first_row(tmp_path: Path) -> None:
    path = write(tmp_path / "r", PICK, module=None)
    text = path.read_text().replace("{{ sample.unit }}", "{{ sample.unit[5] }}")
    path.write_text(text.replace("jsonl:rows.jsonl", "jsonl:missing.jsonl"))
    assert "E913" not in codes(check_file(path))  # W901: the data is not here


def test_generator_fields_metadata_matches_the_rows() -> None:
    from agentspec.stdlib.data import _GENERATORS, GENERATOR_FIELDS, available_generators

    available_generators()
    assert set(GENERATOR_FIELDS) == set(_GENERATORS)
    for name in ("arithmetic", "keys_and_doors"):
        row = next(iter(_GENERATORS[name](split="train")))
        assert sorted(row) == sorted(GENERATOR_FIELDS[name])


def test_data_generator_fields_match_real_rows() -> None:
    from agentspec.stdlib.data import _GENERATORS, GENERATOR_FIELDS, available_generators, data_root

    available_generators()  # registers the generators (alone, this test ran before any did)
    if not (data_root() / "webshop").is_dir():
        pytest.skip("no shared data")
    rows = {
        "webshop_goals": next(iter(_GENERATORS["webshop_goals"](split="train"))),
        "csfcube": next(iter(_GENERATORS["csfcube"](split="all"))),
    }
    for name, row in rows.items():
        assert sorted(row) == sorted(GENERATOR_FIELDS[name])


def test_every_stdlib_function_has_a_signature() -> None:
    from agentspec.stdlib.library import SIGNATURES, load_library

    library = load_library()
    assert set(SIGNATURES) == set(library)


def test_bracket_oracle_calling_an_unknown_tool(tmp_path: Path) -> None:
    body = """
    tools:
      pick:
        description: Pick a unit.
        parameters: {unit: {type: string}}
    episode: {tool_format: bracket}
    rewards:
      r: {on: final, value: 1.0}
    oracle:
      - "pik[{{ sample.unit }}]"
    """
    result = check_file(write(tmp_path / "g", body, module=None))
    assert codes(result) == ["E909"]
    assert result.diagnostics[0].hint == "did you mean 'pick'?"
    span = result.diagnostics[0].span
    assert span is not None and (span.line, span.end_column - span.column) == (14, 3)


def test_oracle_findings_name_the_entry_and_its_turn(tmp_path: Path) -> None:
    # Issue 26: the third entry, after an `each` of three items, is turn 5;
    # it used to be called "oracle turn 3".
    body = """
    tools:
      pick:
        description: Pick a unit.
        parameters: {unit: {type: string}}
    episode: {tool_format: bracket, final_answer: continue}
    rewards:
      r: {on: final, value: 1.0}
    oracle:
      - "pik[km]"
      - {each: "['a', 'b', 'c']", action: "pikc[{{ item }}]"}
      - "pick[m]"
      - "pick[{{ sample.unit }}]"
      - "pikk[m]"
    """
    result = check_file(write(tmp_path / "e", body, module=None))
    found = [(d.code, d.message.split(" calls")[0], d.span.line) for d in result.diagnostics]  # type: ignore[union-attr]
    assert found == [
        ("E909", "oracle entry 1 (turn 1)", 14),
        ("E909", "oracle entry 2 (one turn per item, from turn 2)", 15),
        ("E909", "oracle entry 5 (turn 4 plus one per item of the `each` entries before it)", 18),
    ]
    each = result.diagnostics[1].span
    assert each is not None and each.column == 40  # `pikc` inside the `action` template


def test_a_conditional_oracle_turn_is_not_judged_on_a_placeholder_sample(tmp_path: Path) -> None:
    # with `derived` fields the first row is not read: the placeholder rendered the
    # `{% if %}` empty, and validate called the documented pattern a final answer (E911)
    body = """
    tools:
      ping: {description: p, returns: "'pong'"}
    rewards:
      r: {on: final, value: 1.0}
    oracle:
      - "{% if sample.unit == 'km' %}<tool_call>{\\"name\\": \\"ping\\", \\"arguments\\": {}}</tool_call>{% endif %}"
      - "done"
    """
    spec = write(tmp_path / "f", body, module=None)
    spec.write_text(
        spec.read_text().replace(
            "fields: {value: float, unit: str}}",
            "fields: {value: float, unit: str}, derived: {double: sample.value * 2}}",
        )
    )
    assert [d.code for d in check_file(spec).diagnostics if d.code.startswith("E")] == []


@pytest.mark.parametrize(("final_answer", "expected"), [("end", ["E911"]), ("continue", [])])
def test_an_oracle_turn_written_in_another_format_ends_the_episode_early(
    tmp_path: Path, final_answer: str, expected: list[str]
) -> None:
    # hermes calls under tool_format: harmony are plain text, i.e. a final answer:
    # with final_answer: end the episode stops there and the last turn never runs.
    body = """
    tools:
      pick:
        description: Pick a unit.
        parameters: {unit: {type: string}}
    episode: {tool_format: harmony, final_answer: FINAL}
    rewards:
      r: {on: final, value: 1.0}
    oracle:
      - '<tool_call>{"name": "pick", "arguments": {"unit": "km"}}</tool_call>'
      - '<|start|>assistant<|channel|>final<|message|>done<|return|>'
    """.replace("FINAL", final_answer)
    result = check_file(write(tmp_path / "h", body, module=None))
    assert codes(result) == expected
    if expected:
        assert "final answer under tool_format harmony" in result.diagnostics[0].message
        assert result.diagnostics[0].span is not None
        assert result.diagnostics[0].span.line == 14  # the first oracle turn


def test_missing_corpus_of_a_stdlib_function_is_a_warning(tmp_path: Path) -> None:
    body = (
        "functions:\n"
        "  search: {impl: 'stdlib:bm25', params: [str], returns: str, config: {corpus: wiki/corpus.jsonl}}\n"
        "tools:\n  look:\n    description: Look.\n    parameters: {q: {type: string}}\n"
        "    returns: search(args.q)\n"
    )
    result = check_file(write(tmp_path / "h", body, module=None))
    assert codes(result) == ["W901"]
    assert "wiki/corpus.jsonl" in result.diagnostics[0].message
    (tmp_path / "h" / "wiki").mkdir()
    (tmp_path / "h" / "wiki" / "corpus.jsonl").write_text('{"title": "a", "text": "b"}\n')
    assert codes(check_file(tmp_path / "h" / "spec.yaml")) == []


def test_oracle_templates_that_could_explode_are_not_rendered(tmp_path: Path) -> None:
    # Nested loops over the sandbox's largest range, and a string repeated 10**9
    # times: validate must neither hang nor exhaust memory.
    body = """
    tools:
      pick:
        description: Pick a unit.
        parameters: {unit: {type: string}}
    episode: {tool_format: bracket}
    rewards:
      r: {on: final, value: 1.0}
    oracle:
      - "{% for a in range(100000) %}{% for b in range(100000) %}x{% endfor %}{% endfor %}"
      - "{{ 'x' * 1000000000 }}"
      - "{% macro f(n) %}{{ f(n) }}{{ f(n) }}{% endmacro %}{{ f(1) }}"
      - "pick[{{ sample.unit }}]"
    """
    result = check_file(write(tmp_path / "i", body, module=None))
    # the template checks refuse them statically (E605 resource limit, E604
    # recursive macro); the oracle check must not render them on top
    assert set(codes(result)) == {"E604", "E605"}


def test_first_row_reading_is_bounded(tmp_path: Path) -> None:
    from agentspec.compiler.data_check import FIRST_ROW_BYTES, first_jsonl_row

    path = tmp_path / "big.jsonl"
    path.write_text('{"q": "' + "x" * (2 * FIRST_ROW_BYTES) + '"}\n{"q": "y"}\n')
    assert first_jsonl_row(path) is None
    path.write_text('\n\n{"q": "y", "n": 1}\n' + "z" * (2 * FIRST_ROW_BYTES))
    assert first_jsonl_row(path) == {"q": "y", "n": 1}
    path.write_text("[1, 2]\n")
    assert first_jsonl_row(path) is None


def test_first_row_values_have_their_declared_types(tmp_path: Path) -> None:
    body = "rewards:\n  r: {on: final, value: 1.0}\n"
    path = write(tmp_path / "types", body, module=None)
    rows = path.parent / "rows.jsonl"
    rows.write_text('{"value": 2, "unit": "km"}\n{"value": "x", "unit": 3}\n')
    assert codes(check_file(path)) == []  # an int is a float; validate reads the first row only
    rows.write_text('{"value": true, "unit": "km"}\n')
    result = check_file(path)
    assert codes(result) == ["E907"]
    assert result.diagnostics[0].message == (
        "row 1 of rows.jsonl: field 'value' is the boolean true, but data.fields declares it float"
    )
    assert result.diagnostics[0].span is not None and result.diagnostics[0].span.line == 3


@pytest.mark.parametrize("split", ["a**b", "[", "../rows", "tr*"])
def test_a_split_name_is_text_not_a_file_pattern(tmp_path: Path, split: str) -> None:
    """The first row of a data folder is read from the file named after the split;
    the split's characters never act as a glob (`**` inside a name made pathlib raise)."""
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "train.jsonl").write_text('{"value": "text", "unit": "km"}\n', encoding="utf-8")
    path = write(tmp_path, "rewards: {r: {on: final, value: 1.0}}\n")
    text = path.read_text().replace("jsonl:rows.jsonl", "hf:./data")
    path.write_text(text.replace("fields:", f"split: {split!r}, fields:"))
    result = check_file(path)
    # no file is named after the split: the folder's first file is read, and its row's
    # `value` (text where the spec says float) is reported
    assert codes(result) == ["E907"], [str(d) for d in result.diagnostics]


def test_an_oracle_call_in_a_spec_without_tools_is_an_unknown_tool(tmp_path: Path) -> None:
    body = """
    rewards:
      r: {on: final, value: 1.0}
    oracle:
      - '<tool_call>{"name": "lookup", "arguments": {}}</tool_call>'
    """
    result = check_file(write(tmp_path / "n", body, module=None))
    assert codes(result) == ["E909"]
    assert "declares no tools" in (result.diagnostics[0].hint or "")


def test_a_package_init_of_gigabytes_is_not_read(tmp_path: Path) -> None:
    # validate read a sparse 3 GB `__init__.py` whole (3.2 GB, then MemoryError)
    body = """
    functions:
      g: {impl: "bigpkg.sub:f", params: [int], returns: int}
    rewards:
      r: {on: final, value: "g(1) * 1.0"}
    """
    spec = write(tmp_path / "f", body, module=None)
    package = spec.parent / "bigpkg"
    package.mkdir()
    (package / "sub.py").write_text("def f(x):\n    return x\n")
    with (package / "__init__.py").open("wb") as handle:
        handle.truncate(3 << 30)
    assert [d.code for d in check_file(spec).diagnostics if d.code.startswith("E")] == []


def test_a_missing_data_file_does_not_make_the_oracle_invalid(tmp_path: Path) -> None:
    """Without its data file, validate renders the oracle with placeholder values: a text
    field holding a call's JSON arguments rendered as `x` and was a false E911, failing a
    valid spec on a machine without the data. A missing file is W901 alone; with the
    data, the real first row is judged (and a broken one is still E911)."""
    (tmp_path / "spec.yaml").write_text(
        textwrap.dedent(
            """\
            agentspec: 1
            name: args_from_data
            data:
              source: jsonl:rows.jsonl
              fields: {city: str, arguments: str}
            prompt: {user: "Look up {{ sample.city }}."}
            tools:
              lookup: {description: Look up., parameters: {city: {type: string}}, returns: "'ok'"}
            episode: {max_steps: 3, tool_format: hermes, max_response_tokens: 64}
            rewards:
              correct: {on: final, value: "1.0 if contains(action.text, 'ok') else 0.0"}
            oracle:
              - '<tool_call>{"name": "lookup", "arguments": {{ sample.arguments }}}</tool_call>'
              - "ok"
            """
        )
    )
    assert codes(check_file(tmp_path / "spec.yaml")) == ["W901"]
    (tmp_path / "rows.jsonl").write_text(
        '{"city": "Oslo", "arguments": "{\\"city\\": \\"Oslo\\"}"}\n'
    )
    assert codes(check_file(tmp_path / "spec.yaml")) == []
    (tmp_path / "rows.jsonl").write_text('{"city": "Oslo", "arguments": "city=Oslo"}\n')
    assert codes(check_file(tmp_path / "spec.yaml")) == ["E911"]
