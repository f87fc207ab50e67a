"""Generated worst-case specs of up to 1 MB, too large to keep in the repository.

`worst_cases()` maps a file name to (expected diagnostic code, or "valid"; text).
Used by tests/compiler/test_hostile_corpus.py and benchmarks/validate_worst_case.py.
"""

from __future__ import annotations

MEGABYTE = 1_000_000

HEAD = """agentspec: 1
name: worst
data:
  source: jsonl:data.jsonl
  fields: {question: str}
rewards:
  correct: {on: final, value: "1.0"}
"""


def _fill(prefix: str, line: str, suffix: str = "", size: int = MEGABYTE) -> str:
    """`prefix` + numbered copies of `line` (formatted with i) up to `size` bytes."""
    parts = [prefix]
    total = len(prefix) + len(suffix)
    i = 0
    while True:
        piece = line.format(i=i)
        if total + len(piece) > size:
            break
        parts.append(piece)
        total += len(piece)
        i += 1
    return "".join(parts) + suffix


def _prompt(template: str) -> str:
    return HEAD + "prompt:\n  user: |\n" + template


def worst_cases() -> dict[str, tuple[str, str]]:
    keys_under_limit = 4_900  # 9,800 values: just under the E107 limit
    return {
        "keys_1mb.yaml": ("E107", _fill(HEAD, "k{i}: 1\n")),
        "long_keys_1mb.yaml": ("E201", _fill(HEAD, "k{i}_" + "x" * 240 + ": 1\n")),
        "keys_under_limit.yaml": (
            "E201",
            HEAD
            + 'prompt:\n  user: "{{ sample.question }}"\n'
            + "".join(f"k{i}: 1\n" for i in range(keys_under_limit)),
        ),
        "deep_flow_1mb.yaml": ("E106", HEAD + "x: " + "[" * (MEGABYTE // 2 - 200) + "\n"),
        "deep_block.yaml": (
            "E201",
            HEAD
            + 'prompt:\n  user: "{{ sample.question }}"\n'
            + "x:\n"
            + "".join("  " * (d + 1) + f"k{d}:\n" for d in range(60))
            + "  " * 61
            + "end\n",
        ),
        "aliases_1mb.yaml": (
            "E107",
            _fill(HEAD + "x:\n  - &a " + "a" * 1000 + "\n", "  - *a\n"),
        ),
        "string_1mb.yaml": ("E110", HEAD + "x: " + "a" * (MEGABYTE - 200) + "\n"),
        "template_1mb.yaml": ("E110", _fill(_prompt(""), "    {{{{ sample.question }}}} {i}\n")),
        "template_under_limit.yaml": (
            "valid",
            _prompt("".join(f"    {{{{ sample.question }}}} {i}\n" for i in range(5_000))),
        ),
        "template_many_errors.yaml": (
            "E602",
            _prompt("".join(f"    {{{{ q{i} }}}}\n" for i in range(5_000))),
        ),
        "expression_long.yaml": (
            "E310",
            HEAD.replace('value: "1.0"', 'value: "' + " + ".join(["1.0"] * 30_000) + '"')
            + 'prompt:\n  user: "{{ sample.question }}"\n',
        ),
        "file_2mb.yaml": ("E105", _fill(HEAD, "# {i}\n", size=2 * MEGABYTE)),
        # each under the 10,000 characters of one expression; 1 MB of them took 22 s to parse
        "expressions_1mb.yaml": (
            "E310",
            _fill(
                HEAD.replace("rewards:\n", 'prompt:\n  user: "{{ sample.question }}"\nrewards:\n'),
                "  r{i}: {{on: final, value: \"len([" + ",".join(["1"] * 4_990) + "])\"}}\n",
            ),
        ),
    }
