"""What every floor shares: diagnostics and source positions, registries, the sandbox, presets and the context-policy table."""
