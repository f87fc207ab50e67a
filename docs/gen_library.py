"""Regenerate docs/library.md: tool-call formats, stdlib functions, data
generators, and the files and folders a spec reads, from the code.

Every worked example of a tool-call format is parsed by the runtime's own
parser while the page is generated (a broken example stops the generator),
and the shown call and observation are that parser's and renderer's output.
Function and generator tables come from the registries and the factories'
signatures. A test checks that the committed page is current.

    python docs/gen_library.py
"""

from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentspec.runtime.formats import get_format  # noqa: E402
from agentspec.runtime.tools import ToolResult  # noqa: E402
from agentspec.stdlib.data import _GENERATORS, GENERATOR_FIELDS, available_generators  # noqa: E402
from agentspec.stdlib.library import SIGNATURES, load_library  # noqa: E402

OUTPUT = ROOT / "docs" / "library.md"


class _Tool:
    """What the parsers read of a tool: its parameter schema."""

    def __init__(self, **properties: dict[str, Any]):
        self.parameters = {"type": "object", "properties": properties}

    @property
    def parameter_names(self) -> list[str]:
        return list(self.parameters["properties"])


TOOLS = {
    "search": _Tool(query={"type": "string"}),
    "lookup": _Tool(title={"type": "string"}, section={"type": "integer"}),
}

# One worked example per format: (what it is for, the model's response, the result text).
EXAMPLES: dict[str, tuple[str, str, str]] = {
    "hermes": (
        "Qwen/Hermes style; any number of calls per turn, free text around them.",
        'I will look it up.\n<tool_call>{"name": "lookup", "arguments": {"title": "Louvre", "section": 2}}</tool_call>',
        "The Louvre is in Paris.",
    ),
    "json": (
        "The whole response is one JSON call (or a list of calls); a response fenced as a `json` code block is accepted too. Anything else is a final answer.",
        '{"name": "lookup", "arguments": {"title": "Louvre", "section": 2}}',
        "The Louvre is in Paris.",
    ),
    "react": (
        "ReAct: `Action:` and `Action Input:` lines (one call per turn), or `Final Answer:`. A tool with one parameter also takes a bare value as its input.",
        'Thought: I need the museum.\nAction: lookup\nAction Input: {"title": "Louvre", "section": 2}',
        "The Louvre is in Paris.",
    ),
    "bracket": (
        "WebShop style `name[argument]` alone on the last line (optionally after `Action:`), one call per turn. "
        "The argument fills the tool's only parameter: the bracket format serves tools with exactly one "
        "parameter (`agentspec validate` reports a tool with more or fewer as E912).",
        "Thinking: the search page is open.\nsearch[red running shoes]",
        "[Results] 3 products",
    ),
}


def format_section(name: str) -> list[str]:
    purpose, response, result_text = EXAMPLES[name]
    fmt = get_format(name)
    parsed = fmt.parse(response, TOOLS)  # type: ignore[arg-type]
    if parsed.errors or not parsed.calls:
        raise SystemExit(f"the {name} example does not parse: {parsed.errors}")
    calls = [{"name": c.name, "arguments": c.arguments} for c in parsed.calls]
    observation = fmt.render_results([ToolResult(c.name, result_text, True) for c in parsed.calls])
    error = fmt.render_result(ToolResult(calls[0]["name"], "no such page", False))
    return [
        f"### `{name}`",
        "",
        purpose,
        "",
        f"What the model is told: {fmt.usage()}",
        "",
        "A response:",
        "",
        "```text",
        response,
        "```",
        "",
        "is parsed as the call(s):",
        "",
        "```json",
        json.dumps(calls, ensure_ascii=False),
        "```",
        "",
        "and the model then sees the result:",
        "",
        "```text",
        observation,
        "```",
        "",
        "or, when the tool fails:",
        "",
        "```text",
        error,
        "```",
        "",
    ]


def _annotation(parameter: inspect.Parameter) -> str:
    annotation = parameter.annotation
    return "any" if annotation is inspect.Parameter.empty else str(annotation)


def _default(parameter: inspect.Parameter) -> str:
    if parameter.default is inspect.Parameter.empty:
        return "required"
    return f"`{json.dumps(parameter.default) if not isinstance(parameter.default, tuple) else json.dumps(list(parameter.default))}`"


def _first_line(obj: Any) -> str:
    doc = inspect.getdoc(obj) or ""
    return " ".join(doc.split("\n\n", 1)[0].split())


def function_rows() -> list[str]:
    lines: list[str] = []
    for name, factory in sorted(load_library().items()):
        signature = SIGNATURES[name]
        lines += [
            f"### `stdlib:{name}`",
            "",
            f"Call signature: `{signature.spelled(name)}`. {_first_line(factory)}".rstrip(),
            "",
        ]
        parameters = inspect.signature(factory).parameters
        if not parameters:
            lines += ["No `config` keys.", ""]
            continue
        lines += ["| `config` key | type | default |", "|---|---|---|"]
        for key, parameter in parameters.items():
            lines.append(
                f"| `{key}` | {_annotation(parameter)} | {_default(parameter).replace('|', '/')} |"
            )
        lines.append("")
    return lines


def generator_rows() -> list[str]:
    lines = ["| generator | fields of each sample | `params` (type = default) | what it makes |"]
    lines.append("|---|---|---|---|")
    for name in available_generators():
        parameters = inspect.signature(_GENERATORS[name]).parameters
        params = ", ".join(
            f"`{k}` ({_annotation(p)} = {_default(p).strip('`')})"
            for k, p in parameters.items()
            if k != "split"
        )
        fields = ", ".join(f"`{f}`" for f in GENERATOR_FIELDS.get(name, ()))
        lines.append(
            f"| `generator:{name}` | {fields} | {params} | {_first_line(_GENERATORS[name])} |"
        )
    return lines


def render() -> str:
    lines = [
        "# Formats, functions and data",
        "",
        "<!-- Generated by `python docs/gen_library.py`; do not edit by hand. -->",
        "",
        "What a spec can name outside the language itself: how the model writes tool calls "
        "(`episode.tool_format`), the functions of agentspec's library (`impl: stdlib:NAME`), "
        "the procedural data sources (`data.source: generator:NAME`), and the files and "
        "folders a spec reads. Everything on this page is generated from the code; every "
        "example was parsed by the runtime's parser when the page was written.",
        "",
        "## Tool-call formats",
        "",
        "The examples use two tools: `search(query: string)` and "
        "`lookup(title: string, section: integer)`. A malformed call is never run: the model "
        "sees what is wrong (the event `parse_error`). A spec's oracle turns are parsed the "
        "same way by `agentspec validate` (E909–E911).",
        "",
    ]
    for name in ("hermes", "json", "react", "bracket"):
        lines += format_section(name)
    lines += [
        "## Library functions (`impl: stdlib:NAME`)",
        "",
        "Declare one under `functions:`; its `config` keys are the factory's keyword "
        "arguments, bound once. `agentspec validate` checks the name, the keys, their types, "
        "and the declared `params` / `returns` against the call signature (E901–E903). A "
        "relative file path in `config` is read from the spec's folder.",
        "",
        "```yaml",
        "functions:",
        "  search:",
        "    impl: stdlib:bm25",
        "    params: [str]",
        "    returns: str",
        "    config: {corpus: data/corpus.jsonl, k: 3}",
        "```",
        "",
        *function_rows(),
        "## Data generators (`source: generator:NAME`)",
        "",
        "A generator makes samples on the machine; `data.params` are its keyword arguments "
        "and `data.split` / `eval_split` its `split`. `agentspec validate` checks the name, "
        "the params and that the declared `fields` are among the sample's fields (E905–E907).",
        "",
        *generator_rows(),
        "",
        "### Your own generator",
        "",
        "Write a function that takes `split` and your params as keyword arguments and "
        "yields samples (dicts), and name it as `generator:module.path:function`. The module "
        "is imported from the spec's folder first (then from `sys.path`), so a file beside "
        "the spec needs no installing and no PYTHONPATH:",
        "",
        "```python",
        "# tasks/units.py, beside tasks/convert.yaml",
        "import random",
        "",
        "",
        'def samples(*, split: str = "train", count: int = 1000):',
        "    rng = random.Random(split)",
        "    for index in range(count):",
        "        value = rng.randint(1, 100)",
        '        yield {"id": f"{split}-{index}", "km": value, "m": value * 1000}',
        "```",
        "",
        "```yaml",
        "data:",
        "  source: generator:units:samples",
        "  params: {count: 500}",
        "  fields: {km: int, m: int}",
        "```",
        "",
        "## Where files and modules are found",
        "",
        "- **Data paths** (`jsonl:`, `parquet:`, a local `hf:` folder) expand "
        "`${AGENTSPEC_DATA}` (default: `../shared/data` beside the checkout) and other "
        "environment variables; a relative path is read from the spec's folder. "
        "`agentspec validate` warns when a file is not on this machine (W901) and checks the "
        "declared `fields` against the first row (E907).",
        "- **Your Python modules** (`impl: module:function`, `generator:module:function`, "
        "`oracle: {hook: module:function}`, `environment.adapter: module:Class`, "
        "`context.custom`) are imported from the spec's folder first, then from `sys.path`. "
        "`agentspec validate` checks that each module can be found without importing it "
        "(E904); `agentspec validate --import` imports them and checks their signatures.",
        "- **Compiled code** does not depend on where you run from: `agentspec compile` "
        "gives the same bytes from any directory and for any spelling of the spec's path, "
        "and the generated module's `SPEC_DIR` (set by `run`, `train` and `test`) is where "
        "its relative data paths resolve.",
        "",
        "## Scripted policies (`--policy scripted:FILE`)",
        "",
        "`agentspec run SPEC --policy scripted:FILE` plays the same responses in every "
        "episode: one response per line of FILE, in order (blank lines are skipped; write "
        "`\\n` for a line break inside a response). When an episode needs more turns than "
        "the file has lines, the responses start over. For example, for the calculator:",
        "",
        "```text",
        '<tool_call>{"name": "calculator", "arguments": {"expression": "6 * 7"}}</tool_call>',
        "<answer>42</answer>",
        "```",
        "",
        "To check what such turns produce, write them as a scripted episode in the spec's "
        "`tests:` section and run `agentspec test` (see the [reference](reference.md#spectest)).",
        "",
        "## Seeing the exact prompt of any step",
        "",
        "`agentspec run SPEC --out DIR` writes `DIR/trajectories.jsonl` and the tokenizer "
        "the rollout used (`DIR/tokenizer/`); `agentspec view DIR` then shows, for every "
        "step, the prompt and the response as the exact text the policy saw and wrote "
        "(decoded from the recorded token ids, special tokens included). A training run's "
        "directory has its `tokenizer/` too. See [Reading a run](viewer.md).",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    OUTPUT.write_text(render(), encoding="utf-8")
    print(f"wrote {OUTPUT.relative_to(ROOT)}")
