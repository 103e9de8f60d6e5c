"""`pytest --cuda-arch`: Triton launches of a plugin's tests compiled for real GPUs, on a machine without one."""

from __future__ import annotations

import os
import shutil
import subprocess
import types
from pathlib import Path

import pytest

from tests.helpers import run_pytest
from vllm_scaffold_testing.cuda_compile import ARCHS, CompileResult, LaunchRecorder, declared_launches, parse_archs

FIXTURE = Path(__file__).parent / "fixtures" / "cuda_kernels" / "copy_kernels.py"


def run_kernel_tests(tmp_path: Path, test_source: str, *options: str) -> subprocess.CompletedProcess[str]:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    shutil.copy(FIXTURE, project / "copy_kernels.py")
    (project / "test_kernels.py").write_text(test_source)
    env = {**os.environ, "VLLMSCAFFOLD_CACHE": str(tmp_path / "cache")}
    env.pop("TRITON_INTERPRET", None)
    return run_pytest(project, "-W", "default", *options, env=env)


COPY_TEST = """
import torch
from copy_kernels import copy

def test_copy():
    src = torch.arange(100, dtype=torch.float32)
    assert torch.equal(copy(src), src)
"""


def test_launches_compile_and_a_second_run_reads_the_cache(tmp_path: Path) -> None:
    first = run_kernel_tests(tmp_path, COPY_TEST, "--cuda-arch", "80,90")
    assert first.returncode == 0, first.stdout + first.stderr
    # The test's launch and the module's two declared configurations, for two architectures.
    assert "3 Triton launches checked for sm_80, sm_90: 6 compiled, 0 from the cache" in first.stdout
    assert "CudaSpillWarning" in first.stdout and "wide_row_kernel [one 8192-wide row on one warp]" in first.stdout
    second = run_kernel_tests(tmp_path, COPY_TEST, "--cuda-arch", "80,90")
    assert second.returncode == 0, second.stdout + second.stderr
    assert "0 compiled, 6 from the cache" in second.stdout


def test_shared_memory_over_the_architecture_limit_fails_the_test(tmp_path: Path) -> None:
    source = """
import torch
from copy_kernels import square_matmul_kernel

def test_matmul():
    a = torch.randn(2, 128, 128)
    out = torch.empty(128, 128)
    square_matmul_kernel[(1,)](a, out, BLOCK=128, STEPS=2)
    torch.testing.assert_close(out, a[0] @ a[0] + a[1] @ a[1], rtol=1e-4, atol=1e-3)
"""
    completed = run_kernel_tests(tmp_path, source, "--cuda-arch", "86,90")
    assert completed.returncode == 1, completed.stdout
    assert "copy_kernels.square_matmul_kernel (BLOCK=128 STEPS=2) needs" in completed.stdout
    assert "sm_86 allows 101376 per block" in completed.stdout
    assert "sm_90 allows" not in completed.stdout


def test_a_kernel_only_the_interpreter_accepts_fails_with_the_compiler_message(tmp_path: Path) -> None:
    source = """
import torch
from copy_kernels import interpreter_only_kernel

def test_interpreted():
    src = torch.arange(16, dtype=torch.float32)
    dst = torch.empty_like(src)
    interpreter_only_kernel[(1,)](src, dst, BLOCK=16)
    assert torch.equal(dst, src)
"""
    completed = run_kernel_tests(tmp_path, source, "--cuda-arch", "90")
    assert completed.returncode == 1, completed.stdout
    assert "copy_kernels.interpreter_only_kernel (BLOCK=16) does not compile for sm_90" in completed.stdout
    assert "unsupported AST node type: Try" in completed.stdout


def test_without_the_option_nothing_is_compiled(tmp_path: Path) -> None:
    completed = run_kernel_tests(tmp_path, COPY_TEST)
    assert completed.returncode == 0, completed.stdout
    assert "CUDA compile checks" not in completed.stdout
    assert not (tmp_path / "cache").exists()


def test_unknown_architecture_is_a_usage_error(tmp_path: Path) -> None:
    completed = run_kernel_tests(tmp_path, COPY_TEST, "--cuda-arch", "90,75")
    assert completed.returncode == 4
    assert "--cuda-arch: unknown CUDA architecture '75'" in completed.stderr
    with pytest.raises(ValueError, match="use a comma-separated list of 80,86,89,90,100,120"):
        parse_archs("sm_91")
    assert parse_archs("sm_90, 80,90") == (90, 80)


def test_occupancy_estimate_follows_the_architecture_limits() -> None:
    # 128 registers x 8 warps: 2 blocks by registers; 64 KiB shared + 1 KiB reserved: 3 blocks on sm_90.
    result = CompileResult(arch=90, registers=128, shared=64 * 1024, num_warps=8)
    assert result.occupancy() == pytest.approx(2 * 256 / 2048)
    # sm_89 has 100 KiB per SM: one such block.
    assert CompileResult(arch=89, registers=128, shared=64 * 1024, num_warps=8).occupancy() == pytest.approx(256 / 1536)
    assert (
        CompileResult(arch=86, shared=ARCHS[86].shared_per_block + 1, num_warps=4)
        .problem()
        .startswith("needs 101377 bytes")
    )


def test_a_declared_configuration_that_launches_nothing_is_an_error() -> None:
    import torch

    module = types.ModuleType("configs_without_launches")
    module.cuda_launch_configs = lambda: iter([("nothing", torch.float16, lambda: None)])  # type: ignore[attr-defined]
    with pytest.raises(RuntimeError, match=r"'nothing' \(torch.float16\) launched no Triton kernel"):
        declared_launches(module, LaunchRecorder())
