"""The JSON Schema of the spec language, generated from the pydantic models."""

from __future__ import annotations

import json
from typing import Any

from agentspec.spec.model import TaskSpec

SCHEMA_ID = "https://agentspec.dev/schema/agentspec-1.schema.json"


def language_schema() -> dict[str, Any]:
    """JSON Schema draft 2020-12 of a spec file, with `$id`."""
    body = TaskSpec.model_json_schema(mode="validation")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        **body,
        "title": "agentspec task spec, version 1",
    }


def schema_json() -> str:
    return json.dumps(language_schema(), indent=2, ensure_ascii=False, sort_keys=False) + "\n"
