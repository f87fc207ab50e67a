"""What a compiled spec's generated module stands on: its environment base, expression scope, contract, oracle scripts and custom context."""
