"""Every identifier generated code binds or reads, and how spec names become them.

The generated module binds a fixed set of global names (its imports, `State`,
`SPEC_NAME`, …) plus one class per tool and the environment and flow
classes; spec names reach Python as `State` fields (`s.state.NAME`), as user
functions (`user.NAME`) and inside class names. Each mapping here is
injective and never yields a name the module already binds, so two spec names
cannot share one Python name and no spec name can shadow the module's own.
"""

from __future__ import annotations

import keyword
import re

# name used in the body → the import that provides it
IMPORTS: dict[str, str] = {
    "dataclasses": "import dataclasses",
    "eq": "from operator import eq",
    "ne": "from operator import ne",
    "Path": "from pathlib import Path",
    "Iterator": "from collections.abc import Iterator",
    "Any": "from typing import Any",
    "ClassVar": "from typing import ClassVar",
    "AgentEnvLoop": "from agentspec.runtime import AgentEnvLoop",
    "ChatTemplate": "from agentspec.runtime import ChatTemplate",
    "LoopConfig": "from agentspec.runtime import LoopConfig",
    "Policy": "from agentspec.runtime import Policy",
    "SamplingParams": "from agentspec.runtime import SamplingParams",
    "Tokenizer": "from agentspec.runtime import Tokenizer",
    "make_context_policy": "from agentspec.runtime import make_context_policy",
    "custom_context": "from agentspec.runtime.compiled.custom_context import custom_context",
    "EpisodeRules": "from agentspec.runtime.compiled.contract import EpisodeRules",
    "RewardComponent": "from agentspec.runtime.compiled.contract import RewardComponent",
    "ToolRules": "from agentspec.runtime.compiled.contract import ToolRules",
    "Scope": "from agentspec.runtime.compiled.scope import Scope",
    "OracleStep": "from agentspec.runtime.compiled.oracle import OracleStep",
    "oracle_turns": "from agentspec.runtime.compiled.oracle import oracle_turns",
    "SpecAdapterEnv": "from agentspec.runtime.compiled.env import SpecAdapterEnv",
    "SpecTool": "from agentspec.runtime.compiled.env import SpecTool",
    "SpecToolEnv": "from agentspec.runtime.compiled.env import SpecToolEnv",
    "template": "from agentspec.runtime.compiled.scope import template",
    "UserRule": "from agentspec.runtime.compiled.user import UserRule",
    "UserRules": "from agentspec.runtime.compiled.user import UserRules",
    "UserTurns": "from agentspec.runtime.compiled.user import UserTurns",
    "McpServer": "from agentspec.runtime.mcp.server import McpServer",
    "McpTool": "from agentspec.runtime.mcp.tools import McpTool",
    "make_adapter": "from agentspec.stdlib.adapters import make_adapter",
    "load_source": "from agentspec.stdlib.data import load_samples as load_source",
    "check_sample": "from agentspec.stdlib.data import check_sample",
    "no_data": "from agentspec.stdlib.data import no_data",
    "fn": "from agentspec.stdlib.functions import fn",
    "UserFunctions": "from agentspec.stdlib.user import UserFunctions",
}


# Global names of the module template besides its imports.
TEMPLATE_NAMES = frozenset(
    {
        "SPEC_NAME",
        "SPEC_FILE",
        "SPEC_DIR",
        "SPEC_SHA256",
        "LAYOUT",
        "TRAINING",
        "user",
        "CONSTANTS",
        "State",
        "DATA_FIELDS",
        "load_samples",
        "prepare_sample",
        "derive_fields",
        "DATA_SOURCE",
        "EVAL_SPLIT",
        "PUBLIC_FIELDS",
        "PUBLIC_STATE",
        "ORACLE",
        "oracle_actions",
        "ORACLE_HOOK",
        "ORACLE_HOOK_LOCATION",
        "ORACLE_WALKTHROUGH",
        "ENV_CLASS",
        "USER_RULES",
        "FLOW_CLASS",
    }
)
MODULE_NAMES = TEMPLATE_NAMES | IMPORTS.keys()


# Names a `State` field may not take: keywords, and the names the dataclass
# body itself evaluates (a field named `list` would shadow the builtin for
# every later `default_factory=list`). Ruff's ambiguous names (E741) too.
_STATE_RESERVED = frozenset(
    {*keyword.kwlist, *keyword.softkwlist, "dataclasses", "float", "list", "dict", "l", "I", "O"}
)


def state_attribute(name: str) -> str:
    """The `State` field of spec state variable `name`: injective by construction.

    A name whose stem (the name without trailing underscores) is reserved
    gets one more `_`: `class` → `class_`, and then `class_` → `class__`,
    so two spec names never share a field. Every other name is kept.
    """
    return f"{name}_" if name.rstrip("_") in _STATE_RESERVED else name


def local_name(name: str) -> str:
    """The Python name of a local (`let`, a comprehension variable): injective.

    Locals live inside generated methods and lambdas, where they could hide a
    keyword or a name the module binds (`template`, `State`); a name whose stem
    is one of those gets one more `_`, as for state fields.
    """
    stem = name.rstrip("_")
    reserved = keyword.iskeyword(stem) or keyword.issoftkeyword(stem) or stem in MODULE_NAMES
    return f"{name}_" if reserved else name


def function_access(name: str) -> str:
    """How generated code reaches user function `name` on the `user` object."""
    plain = name.isidentifier() and not keyword.iskeyword(name) and not name.startswith("_")
    return f"user.{name}" if plain else f"user[{name!r}]"


def class_name(name: str, suffix: str) -> str:
    """`web_shop` + `Env` → `WebShopEnv`."""
    words = [w for w in re.split(r"[^A-Za-z0-9]+", name) if w]
    camel = "".join(w[:1].upper() + w[1:] for w in words) or "Spec"
    if camel[0].isdigit():
        camel = f"Spec{camel}"
    return camel + suffix


def unique_names(candidates: list[str], taken: set[str]) -> list[str]:
    """Each candidate, numbered (`WebShopTool2`) if it is already taken; adds them to `taken`."""
    out = []
    for name in candidates:
        chosen, count = name, 1
        while chosen in taken:
            count += 1
            chosen = f"{name}{count}"
        taken.add(chosen)
        out.append(chosen)
    return out
