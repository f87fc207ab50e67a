"""`python -m agentspec.cli …` runs the command line."""

from agentspec.cli import main

main()
