"""What `agentspec run`, `agentspec test` and `agentspec explore` do with a compiled spec."""

from agentspec.runtime.commands import user_models  # noqa: F401  (model users load here)
