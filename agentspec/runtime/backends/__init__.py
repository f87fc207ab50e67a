"""Training backends: `local` (torch on this machine) and `verl` (Ray, FSDP, vLLM)."""
