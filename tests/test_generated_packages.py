"""Every template renders fresh and the rendered package's own tests pass inside vLLM's CPU engine.

Each package is tested exactly as its CI would: `python -m pytest --slow` (both tiers) in its directory, in
this environment (vLLM for CPU), with the harness installing the package privately.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from vllm_scaffold.examples import render_example, templated_keys

# Every Triton launch of the generated tests also compiles for these GPUs, as the generated CI does.
CUDA_ARCHS = "80,89,90,100"


@pytest.mark.parametrize("key", templated_keys())
def test_generated_package_passes_its_own_ruff_config(key: str, tmp_path: Path) -> None:
    package = render_example(key, tmp_path / key)
    ruff = [sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "."]
    completed = subprocess.run(ruff, cwd=package, capture_output=True, text=True, check=False)
    assert completed.returncode == 0, f"{key}: ruff check failed:\n{completed.stdout}{completed.stderr}"


@pytest.mark.engine
@pytest.mark.parametrize("key", templated_keys())
def test_generated_package_tests_pass_in_the_cpu_engine(key: str, tmp_path: Path) -> None:
    package = render_example(key, tmp_path / key)
    env = {**os.environ, "VLLM_SCAFFOLD_CACHE": os.environ.get("VLLM_SCAFFOLD_CACHE", str(tmp_path / "cache"))}
    env.pop("PYTHONPATH", None)
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", "--slow", "--cuda-arch", CUDA_ARCHS],
        cwd=package,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    output = completed.stdout + completed.stderr
    summary = output.strip().splitlines()[-1] if output.strip() else ""
    print(f"{key}: {summary}")
    assert completed.returncode == 0, f"{key}: the generated tests failed:\n{output[-12000:]}"
    assert " passed" in summary and "failed" not in summary, summary
