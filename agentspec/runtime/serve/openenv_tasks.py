"""OpenEnv's Task API (`/{name}/splits`, `tasks`, `num_tasks`, `task`, `task_range`),
added to an app whose installed OpenEnv lacks it (openenv-core 0.3; 0.10 has it)."""

from __future__ import annotations

import threading
from typing import Any

from pydantic import BaseModel

__all__ = ["add_task_routes"]


class _SplitRequest(BaseModel):
    split: str


class _TaskRequest(BaseModel):
    split: str
    index: int


class _RangeRequest(BaseModel):
    split: str
    start: int | None = None
    stop: int | None = None


def add_task_routes(app: Any, env_class: type, env_name: str, http_error: type) -> None:
    """OpenEnv 0.10's Task API routes, for OpenEnv versions that do not serve them."""
    probe = env_class()  # the Task API reads only the spec's data: one instance serves all
    lock = threading.Lock()

    def call(method: str, *args: Any) -> Any:
        try:
            with lock:
                return getattr(probe, method)(*args)
        except IndexError as exc:
            raise http_error(status_code=400, detail=str(exc)) from None

    def check(name: str) -> None:
        if name.lower() != env_name.lower():
            raise http_error(status_code=404, detail=f"unknown environment {name!r}")

    @app.get("/list_environments", tags=["Task API"])
    async def list_environments() -> list[str]:
        return [env_name]

    @app.get("/{env_name}/splits", tags=["Task API"])
    async def splits(env_name: str) -> list[dict[str, Any]]:
        check(env_name)
        return [
            {"name": s, "type": s if s in ("train", "validation", "test") else "validation"}
            for s in call("list_splits")
        ]

    @app.post("/{env_name}/tasks", tags=["Task API"])
    async def tasks(env_name: str, request: _SplitRequest) -> dict[str, Any]:
        check(env_name)
        return {"tasks": call("list_tasks", request.split), "env_name": env_name}

    @app.post("/{env_name}/num_tasks", tags=["Task API"])
    async def num_tasks(env_name: str, request: _SplitRequest) -> dict[str, Any]:
        check(env_name)
        return {"num_tasks": call("num_tasks", request.split)}

    @app.post("/{env_name}/task", tags=["Task API"])
    async def task(env_name: str, request: _TaskRequest) -> dict[str, Any]:
        check(env_name)
        return {"task": call("get_task", request.split, request.index)}

    @app.post("/{env_name}/task_range", tags=["Task API"])
    async def task_range(env_name: str, request: _RangeRequest) -> dict[str, Any]:
        check(env_name)
        return {"tasks": call("get_task_range", request.split, request.start, request.stop)}
