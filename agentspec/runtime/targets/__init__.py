"""Every compile target (python, verl, openenv, trl, verifiers) and the package writer they share."""
