"""Counts of the house's soft spots, measured from the source (issue 53's closing note):

- ``getattr(x, "name", default)``: an implicit contract where a typed one belongs;
- deferred imports: imports inside functions (each should be an optional dependency
  or a cost `validate` must not pay, with its reason);
- modules over 500 lines, and functions over 60 lines.

    python scripts/house_counts.py [--list]
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "agentspec"
MODULE_LINES = 500
FUNCTION_LINES = 60


def counts(package: Path = PACKAGE) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {
        "getattr with a default": [],
        "deferred imports": [],
        f"modules over {MODULE_LINES} lines": [],
        f"functions over {FUNCTION_LINES} lines": [],
    }
    for path in sorted(package.rglob("*.py")):
        where = path.relative_to(package.parent).as_posix()
        text = path.read_text(encoding="utf-8")
        lines = len(text.splitlines())
        if lines > MODULE_LINES:
            found[f"modules over {MODULE_LINES} lines"].append(f"{where} ({lines})")
        tree = ast.parse(text)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "getattr"
                and len(node.args) == 3
            ):
                found["getattr with a default"].append(f"{where}:{node.lineno}")
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > FUNCTION_LINES:
                    found[f"functions over {FUNCTION_LINES} lines"].append(
                        f"{where}:{node.lineno} {node.name} ({length})"
                    )
                for inner in ast.walk(node):
                    if isinstance(inner, ast.Import | ast.ImportFrom) and inner is not node:
                        found["deferred imports"].append(f"{where}:{inner.lineno}")
    # an import inside a nested function is counted once, not once per enclosing function
    found["deferred imports"] = sorted(set(found["deferred imports"]))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="list every place, not only counts")
    options = parser.parse_args()
    for name, places in counts().items():
        print(f"{name}: {len(places)}")
        if options.list:
            for place in places:
                print(f"  {place}")


if __name__ == "__main__":
    main()
