"""What generated code stands on (scopes, the spec environments, the contract) and the spec commands run, test."""
