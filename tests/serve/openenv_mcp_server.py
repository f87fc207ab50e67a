"""An MCP-style OpenEnv environment for the tests, built on OpenEnv's own `MCPEnvironment`:
a number-guessing game whose one tool is a FastMCP tool.

`reset(secret=N)` picks the secret (default 7); `guess(number)` answers `higher`,
`lower` or `correct`; the step's reward is 1.0 for the right number (which ends
the episode) and -0.1 for a wrong one. A
number outside 1-10 makes the tool raise (OpenEnv reports it as the call's
`error`). Serve it with `uvicorn openenv_mcp_server:app --port PORT` in this folder.
"""

from __future__ import annotations

from typing import Any

from fastmcp import FastMCP
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.mcp_environment import MCPEnvironment
from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation
from openenv.core.env_server.types import Observation, State

DEFAULT_SECRET = 7


class GuessEnvironment(MCPEnvironment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        server = FastMCP("guess")
        self.reward_due = 0.0
        self.found = False
        self.secret = DEFAULT_SECRET

        @server.tool()
        def guess(number: int) -> str:
            """Guess the secret number (1-10): the answer is higher, lower or correct."""
            if not 1 <= number <= 10:
                raise ValueError(f"{number} is not between 1 and 10")
            self.found = number == self.secret
            self.reward_due = 1.0 if self.found else -0.1
            if self.found:
                return "correct"
            return "higher" if number < self.secret else "lower"

        super().__init__(server)
        self._state = State(episode_id="", step_count=0)

    def reset(
        self, seed: Any = None, episode_id: Any = None, secret: int = DEFAULT_SECRET, **kwargs: Any
    ) -> Observation:
        self._state = State(episode_id=episode_id or "", step_count=0)
        self.found = False
        self.secret = int(secret)
        return Observation(done=False, reward=0.0)

    async def step_async(self, action: Any, timeout_s: Any = None, **kwargs: Any) -> Observation:
        self.reward_due = 0.0
        observation = await super().step_async(action, timeout_s=timeout_s, **kwargs)
        if isinstance(action, CallToolAction):
            self._state.step_count += 1
            observation.reward = self.reward_due
            observation.done = self.found
        return observation

    def _step_impl(self, action: Any, timeout_s: Any = None, **kwargs: Any) -> Observation:
        return Observation(done=False, reward=0.0, metadata={"error": "call the guess tool"})

    @property
    def state(self) -> State:
        return self._state


app = create_app(
    GuessEnvironment, CallToolAction, CallToolObservation, env_name="guess", max_concurrent_envs=16
)
