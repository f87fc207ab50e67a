#!/usr/bin/env bash
# The GPU check: what a first GPU run depends on, step by step (docs/verl.md, "The GPU check").
# Imports (agentspec's dependencies, jsonschema, ruff, verl, vllm, flash_attn, ray), a few
# StepPO iterations on the local backend, the verl dry run, one StepPO iteration with the
# critic on verl (FSDP, vLLM), the default model's refusal on vLLM, and the same on 2 GPUs.
# Nothing is downloaded: the models are agentspec's built-in ones.
#
#   scripts/gpu_check.sh                        # the check (CUDA)
#   scripts/gpu_check.sh --steps imports,local  # the local backend only (no verl, Ray or vLLM)
#   scripts/gpu_check.sh --small --device cpu   # the CPU-sized form (what the tests run)
#
# PYTHON selects the interpreter (default: python3).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"
export TOKENIZERS_PARALLELISM=false
exec "${PYTHON:-python3}" "$root/scripts/gpu_check.py" "$@"
