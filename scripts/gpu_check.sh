#!/usr/bin/env bash
# GPU check of the local backend: a few StepPO iterations of specs/calculator.yaml with the
# built-in ~285M-parameter model on one NVIDIA GPU; prints rollout and update tokens/s and the
# peak GPU memory. Needs torch (CUDA), transformers and agentspec's own Python dependencies;
# no verl, Ray or vLLM, nothing downloaded. Takes a few minutes on one recent GPU.
#
#   scripts/gpu_check.sh                      # the check (CUDA)
#   scripts/gpu_check.sh --small --device cpu # a tiny CPU run (what the test runs)
#
# PYTHON selects the interpreter (default: python3).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"
export TOKENIZERS_PARALLELISM=false
exec "${PYTHON:-python3}" "$root/scripts/gpu_check.py" "$@"
