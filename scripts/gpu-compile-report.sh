#!/usr/bin/env bash
# Regenerates docs/gpu-compile-report.md: every Triton kernel of the golden copies, at every configuration its
# CUDA path declares, compiled for sm_80/89/90/100 without a GPU (results cached in $VLLMSCAFFOLD_CACHE).
set -euo pipefail
cd "$(dirname "$0")/.."
export VLLMSCAFFOLD_CACHE="${VLLMSCAFFOLD_CACHE:-$PWD/.venv/vllm-scaffold-cache}"
packages=()
for package in generated_examples/*/; do
    if grep -rqs "def cuda_launch_configs(" "$package/src"; then
        packages+=("${package%/}")
    fi
done
exec .venv/bin/python -m vllm_scaffold_testing.cuda_report "${packages[@]}" --arch 80,89,90,100 \
    --output docs/gpu-compile-report.md
