"""The linear-kernel template: the in-tree kernel names it writes into VLLM_DISABLED_KERNELS against vLLM 0.32,
and `add` next to another component (whose package then still passes its tests in the CPU engine)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from seam_helpers import assert_lint_clean, general_plugin_host, run_package_tests, scaffold

from vllm_scaffold.rendering import questions


@pytest.fixture
def host(tmp_path: Path) -> Path:
    return general_plugin_host(tmp_path)


@pytest.mark.parametrize("platform", ["cpu", "cuda"])
def test_disabled_kernels_are_the_in_tree_int8_kernels(platform: str) -> None:
    pytest.importorskip("vllm")
    from vllm.model_executor.kernels.linear import _POSSIBLE_INT8_KERNELS
    from vllm.platforms import PlatformEnum

    in_tree = _POSSIBLE_INT8_KERNELS[PlatformEnum.CPU if platform == "cpu" else PlatformEnum.CUDA]
    expected = ",".join(kernel.__name__ for kernel in in_tree if kernel.__module__.startswith("vllm."))
    assert questions("linear-kernel")[f"{platform}_disabled"]["default"] == expected


def test_an_unknown_answer_is_refused(host: Path) -> None:
    done = scaffold("add", "linear-kernel", "mm", "--data", "kind=fp8", cwd=host)
    assert done.returncode == 2 and "'kind' is not a question of this template" in done.stderr + done.stdout
    assert not (host / "src/host/mm").exists()


def test_add_next_to_a_general_plugin(host: Path) -> None:
    done = scaffold("add", "linear-kernel", "mm", cwd=host)
    assert done.returncode == 0, done.stderr
    assert "class MmInt8ScaledMMLinearKernel(Int8ScaledMMLinearKernel):" in (
        host / "src/host/mm/linear_kernel.py"
    ).read_text()
    plugin = (host / "src/host/vllm_plugin.py").read_text()
    assert '"host.hooks.registration:register"' in plugin and '"host.mm.linear_kernel:register"' in plugin
    manifest = tomllib.loads((host / "pyproject.toml").read_text())["tool"]["vllm-scaffold"]["components"]
    assert [c["seam"] for c in manifest] == ["general-plugin", "linear-kernel"]
    assert manifest[1]["object"] == "host.mm.linear_kernel:MmInt8ScaledMMLinearKernel"
    cpu_value = "VLLM_DISABLED_KERNELS=ZentorchInt8ScaledMMLinearKernel,CPUInt8ScaledMMLinearKernel"
    assert cpu_value in manifest[1]["enable"][0]
    assert "--linear-backend" in manifest[1]["enable"][1]
    assert_lint_clean(host, "src/host/mm", "tests/test_mm_kernel.py", "tests/test_mm_selection.py",
                      "tests/test_mm_engine.py")  # fmt: skip


@pytest.mark.engine
def test_host_with_both_components_passes_its_tests(host: Path, tmp_path: Path) -> None:
    assert scaffold("add", "linear-kernel", "mm", cwd=host).returncode == 0
    run_package_tests(host, tmp_path / "cache", "tests/test_vllm_plugin.py", "tests/test_mm_kernel.py",
                      "tests/test_mm_selection.py", "tests/test_mm_engine.py")  # fmt: skip
