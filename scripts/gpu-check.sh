#!/usr/bin/env bash
# The kernel tests and kernel benchmarks of every golden package on this machine's GPU, in at most 8 minutes:
# writes gpu-check/gpu-check.json and gpu-check/gpu-check.md. Needs torch, triton and pytest, not vLLM.
# Without CUDA it rehearses and exits 1, naming what needs a GPU (see docs/gpu.md).
set -euo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-python3}"
if [[ -z "${PYTHON:-}" && -x .venv/bin/python ]]; then
    python=.venv/bin/python
fi
exec "$python" scripts/gpu_check.py "$@"
