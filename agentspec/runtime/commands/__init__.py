"""What `agentspec run`, `agentspec test` and `agentspec explore` do with a compiled spec."""
