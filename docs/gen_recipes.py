"""Regenerate docs/recipes/: one page per spec in specs/, from the spec itself.

Each page is the spec's own header comment, an overview of what it declares
(data, tools or environment, state, episode, context, rewards, oracle,
training), the commands that run it, and the whole file. A test checks that
the committed pages are current; rerun after changing a spec.

    python docs/gen_recipes.py          # write docs/recipes/*.md
    python docs/gen_recipes.py --check  # exit 1 if any page is stale
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
SPECS = ROOT / "specs"
OUTPUT = ROOT / "docs" / "recipes"


def header_comment(text: str) -> str:
    """The comment lines before the first key, as a paragraph."""
    lines = []
    for line in text.splitlines():
        if line.startswith("#"):
            lines.append(line.lstrip("#").strip())
        elif line.strip():
            break
    return " ".join(x for x in lines if x)


def code(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return "`" + text.replace("|", "\\|").replace("`", "'") + "`"


def cell(text: str) -> str:
    """Prose for a table cell or a line: one line, HTML special characters escaped."""
    text = " ".join(str(text).split())
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|")


def kv_list(mapping: dict[str, Any]) -> list[str]:
    return [f"- `{k}`: {code(v)}" for k, v in mapping.items()]


def guard_text(when: Any) -> str:
    """A tool's `when`: its condition, or its guards' conditions (they have messages)."""
    guards = when if isinstance(when, list) else [when]
    if all(isinstance(g, dict) for g in guards):
        return " and ".join(code(g.get("if", "")) for g in guards) + " (refusals with messages)"
    return code(when)


def oracle_step(step: Any) -> str:
    if isinstance(step, dict):
        return f"for each item of {code(step.get('each', ''))}: {code(step.get('action', ''))}"
    return code(step)


def needs_data(spec_text: str) -> bool:
    return "${AGENTSPEC_DATA}" in spec_text


def algorithm_of(spec: dict[str, Any]) -> str:
    return str((spec.get("training") or {}).get("algorithm", "steppo"))


MEASURED = OUTPUT / "measured.json"


def measured(name: str, file: str) -> list[str]:
    """The oracle's and the random-action policy's success, and what `agentspec explore`
    reports, from docs/recipes/measured.json."""
    facts = json.loads(MEASURED.read_text(encoding="utf-8")).get(name)
    if facts is None:
        return []
    n = facts["episodes"]
    lines = [
        "## Baselines and loopholes",
        "",
        "| policy | success |",
        "|---|---|",
        f"| oracle | {facts['oracle']:.2f} |",
        f"| random actions (schema-valid calls and answers) | {facts['random']:.2f} |",
        "",
        f"Measured with `agentspec run specs/{file} --policy oracle -n {n}` and "
        f"`--policy random -n {n}`. `agentspec explore specs/{file}` "
        + ("reports nothing." if not facts["explore"] else "reports:"),
        "",
    ]
    lines += [f"- {item}" for item in facts["explore"]]
    lines = [*lines, ""] if facts["explore"] else lines
    return lines + trained(facts.get("trained"))


def trained(facts: dict[str, Any] | None) -> list[str]:
    """A measured training run: its command and the agent's success before and after."""
    if not facts:
        return []
    return [
        "## Trained",
        "",
        f"{facts['what']}",
        "",
        "```bash",
        *facts["commands"],
        "```",
        "",
        "| | success |",
        "|---|---|",
        *[f"| {label} | {value} |" for label, value in facts["results"]],
        "",
        *([facts["note"], ""] if facts.get("note") else []),
    ]


def user_section(user: dict[str, Any] | None) -> list[str]:
    """The simulated user: its kind, and a rule-based user's rules in order."""
    if not user:
        return []
    lines = ["### User", ""]
    if user.get("model"):
        return [*lines, f"A model user, {code(user['model'])} (docs/users.md).", ""]
    lines += [
        "A rule-based user (docs/users.md): the first rule whose `when` holds replies.",
        "",
        "| rule | when | says | ends |",
        "|---|---|---|---|",
    ]
    for rname, r in (user.get("replies") or {}).items():
        when = code(r["when"]) if "when" in r else "always"
        ends = "yes" if r.get("end") or "###STOP###" in str(r.get("say", "")) else ""
        lines.append(f"| `{rname}` | {when} | {code(r['say'])} | {ends} |")
    if "otherwise" in user:
        lines.append(f"| otherwise | | {code(user['otherwise'])} | |")
    return [*lines, ""]


def page(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    spec = yaml.safe_load(text)
    name = spec["name"]
    lines = [f"# {name}", "", f"**{cell(spec.get('description', ''))}**", ""]
    intro = header_comment(text)
    if intro:
        lines += [intro, ""]
    lines += [
        f"<!-- Generated by `python docs/gen_recipes.py` from `specs/{path.name}`. -->",
        "",
        "## Run it",
        "",
        "```bash",
    ]
    if needs_data(text):
        lines.append("export AGENTSPEC_DATA=/path/to/shared/data   # the spec reads its files here")
    lines += [
        f"agentspec validate specs/{path.name}",
        f"agentspec run specs/{path.name} --policy oracle -n 5",
        f"agentspec train specs/{path.name} --set iterations=20",
        f"agentspec view runs/{name}-{algorithm_of(spec)}",
        "```",
        "",
        *measured(name, path.name),
        "## What it declares",
        "",
    ]
    data = spec.get("data")
    if data:
        lines += ["### Data", "", f"Source {code(data['source'])}."]
        splits = [f"train split {code(data['split'])}" if "split" in data else ""]
        splits.append(
            f"evaluation split {code(data['eval_split'])}" if "eval_split" in data else ""
        )
        if any(splits):
            lines[-1] += " " + ", ".join(s for s in splits if s).capitalize() + "."
        lines.append("")
        if data.get("fields"):
            lines += [
                "Each sample has "
                + ", ".join(f"`{k}` ({v})" for k, v in data["fields"].items())
                + ".",
                "",
            ]
        if data.get("derived"):
            lines += ["Derived fields:", "", *kv_list(data["derived"]), ""]
    functions = spec.get("functions") or {}
    if functions:
        lines += ["### Functions", "", "| name | implementation | description |", "|---|---|---|"]
        for fname, f in functions.items():
            lines.append(f"| `{fname}` | {code(f['impl'])} | {cell(f.get('description', ''))} |")
        lines.append("")
    state = spec.get("state") or {}
    if state:
        lines += ["### State", "", "| variable | type | initial | meaning |", "|---|---|---|---|"]
        for var, v in state.items():
            initial = code(v["initial"]) if "initial" in v else "(type's empty value)"
            lines.append(
                f"| `{var}` | `{v['type']}` | {initial} | {cell(v.get('description', ''))} |"
            )
        lines.append("")
    tools = spec.get("tools") or {}
    if tools:
        lines += [
            "### Tools",
            "",
            "| tool | arguments | available when | ends the episode | description |",
            "|---|---|---|---|---|",
        ]
        for tname, t in tools.items():
            args = ", ".join(f"`{a}`" for a in (t.get("parameters") or {})) or "none"
            when = guard_text(t["when"]) if "when" in t else "always"
            terminal = "yes" if t.get("terminal") else ""
            desc = cell(t.get("description", ""))
            lines.append(f"| `{tname}` | {args} | {when} | {terminal} | {desc} |")
        lines.append("")
    lines += user_section(spec.get("user"))
    env = spec.get("environment")
    if env:
        lines += ["### Environment", "", f"Adapter {code(env['adapter'])}."]
        if env.get("config"):
            lines[-1] += f" Configuration {code(env['config'])}."
        lines.append("")
    episode = spec.get("episode") or {}
    lines += ["### Episode", ""]
    lines += kv_list(episode) if episode else ["All defaults (see the language reference)."]
    lines.append("")
    context = spec.get("context") or {}
    lines += ["### Context", ""]
    lines += kv_list(context) if context else ["`full_history` (the default)."]
    lines.append("")
    rewards = spec.get("rewards") or {}
    if rewards:
        lines += [
            "### Rewards",
            "",
            "Each component is logged on its own as `reward/NAME`.",
            "",
            "| component | on | value | weight | when |",
            "|---|---|---|---|---|",
        ]
        for rname, r in rewards.items():
            when = code(r["when"]) if "when" in r else ""
            weight = r.get("weight", 1.0)
            lines.append(
                f"| `{rname}` | `{r.get('on', r.get(True))}` | {code(r['value'])} | {weight} | {when} |"
            )
        lines.append("")
    oracle = spec.get("oracle")
    lines += ["### Oracle", ""]
    if isinstance(oracle, list):
        lines.append(
            f"{len(oracle)} action template{'s' if len(oracle) != 1 else ''}, rendered one per step:"
        )
        lines += ["", *[f"1. {oracle_step(a)}" for a in oracle]]
    elif isinstance(oracle, dict) and oracle.get("walkthrough"):
        lines.append("The environment's walkthrough (`oracle: {walkthrough: true}`).")
    elif isinstance(oracle, dict):
        lines.append(f"A Python hook, {code(oracle.get('hook'))}.")
    else:
        lines.append("None.")
    lines.append("")
    training = spec.get("training") or {}
    lines += ["### Training", ""]
    lines += kv_list(training) if training else ["All defaults (see the language reference)."]
    lines += [
        "",
        "## The spec",
        "",
        f"`specs/{path.name}`:",
        "",
        "```yaml",
        text.rstrip(),
        "```",
        "",
    ]
    return "\n".join(lines)


def index(specs: list[Path]) -> str:
    lines = [
        "# Recipes",
        "",
        "Each recipe is one spec in `specs/`, ready to validate, roll out with its oracle, "
        "train and view. These pages are generated from the specs by "
        "`python docs/gen_recipes.py`.",
        "",
        "| recipe | task | tools / environment | algorithm |",
        "|---|---|---|---|",
    ]
    for path in specs:
        spec = yaml.safe_load(path.read_text(encoding="utf-8"))
        tools = ", ".join(f"`{t}`" for t in (spec.get("tools") or {}))
        if spec.get("environment"):
            tools = (tools + ", " if tools else "") + f"adapter `{spec['environment']['adapter']}`"
        lines.append(
            f"| [{spec['name']}]({path.stem}.md) | {cell(spec.get('description', ''))} | "
            f"{tools} | `{algorithm_of(spec)}` |"
        )
    lines.append("")
    return "\n".join(lines)


def render() -> dict[str, str]:
    specs = sorted(SPECS.glob("*.yaml"))
    pages = {f"{p.stem}.md": page(p) for p in specs}
    pages["index.md"] = index(specs)
    return pages


def main() -> int:
    pages = render()
    if "--check" in sys.argv:
        stale = [
            name
            for name, text in pages.items()
            if not (OUTPUT / name).exists() or (OUTPUT / name).read_text(encoding="utf-8") != text
        ]
        extra = [p.name for p in OUTPUT.glob("*.md") if p.name not in pages]
        if stale or extra:
            print(
                f"docs/recipes is stale ({', '.join(stale + extra)}): run `python docs/gen_recipes.py`"
            )
            return 1
        return 0
    OUTPUT.mkdir(parents=True, exist_ok=True)
    for old in OUTPUT.glob("*.md"):
        if old.name not in pages:
            old.unlink()
    for name, text in pages.items():
        (OUTPUT / name).write_text(text, encoding="utf-8")
    print(f"wrote {len(pages)} pages in docs/recipes/")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
