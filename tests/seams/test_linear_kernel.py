"""The linear-kernel template: its `kind` question, the in-tree kernel names it writes into
VLLM_DISABLED_KERNELS against vLLM 0.32, and `add` next to another component (whose package then still passes
its tests in the CPU engine). The golden package covers the default kind (int8) in the CPU engine; the host
package here covers `kind=mp`."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
import yaml
from seam_helpers import added, assert_lint_clean, assert_registered, run_package_tests

from tests.helpers import run_cli


@pytest.mark.parametrize("kind", ["int8", "mp"])
@pytest.mark.parametrize("platform", ["cpu", "cuda"])
def test_disabled_kernels_are_the_in_tree_kernels(kind: str, platform: str, tmp_path: Path) -> None:
    pytest.importorskip("vllm")
    from vllm.model_executor.kernels.linear import _POSSIBLE_INT8_KERNELS, _POSSIBLE_KERNELS
    from vllm.platforms import PlatformEnum

    lists = _POSSIBLE_INT8_KERNELS if kind == "int8" else _POSSIBLE_KERNELS
    in_tree = lists[PlatformEnum.CPU if platform == "cpu" else PlatformEnum.CUDA]
    expected = ",".join(kernel.__name__ for kernel in in_tree if kernel.__module__.startswith("vllm."))
    done = run_cli("new", "linear-kernel", "mm", "--data", f"kind={kind}", "--dest", "out", cwd=tmp_path)
    assert done.exit_code == 0, done.stderr
    answers = yaml.safe_load((tmp_path / "out/.vllm-scaffold/linear-kernel-mm.yml").read_text())["answers"]
    assert answers[f"{platform}_disabled"] == expected
    enable = tomllib.loads((tmp_path / "out/pyproject.toml").read_text())["tool"]["vllm-scaffold"]["components"]
    assert f"VLLM_DISABLED_KERNELS={expected}" in enable[0]["enable"][0]


def test_add_mp_next_to_a_general_plugin(host: Path) -> None:
    done = run_cli("add", "linear-kernel", "mm", "--data", "kind=mp", cwd=host)
    assert done.exit_code == 0, done.stderr
    source = (host / "src/host/mm/linear_kernel.py").read_text()
    assert "class MmW8A16LinearKernel(MPLinearKernel):" in source
    assert 'register_linear_kernel(MmW8A16LinearKernel, platform, "mp")' in source
    assert "def unpack_uint8b128(" in (host / "src/host/mm/kernel.py").read_text()
    assert_registered(host, "host.mm.linear_kernel:register")
    manifest = added(host, "linear-kernel")
    assert manifest[1]["object"] == "host.mm.linear_kernel:MmW8A16LinearKernel"
    assert "pack-quantized W8A16" in manifest[1]["enable"][0] and "--linear-backend" in manifest[1]["enable"][1]
    assert_lint_clean(host, "src/host/mm", "tests/test_mm_kernel.py", "tests/test_mm_selection.py",
                      "tests/test_mm_engine.py")  # fmt: skip


@pytest.mark.engine
def test_host_with_both_components_passes_its_tests(host: Path, tmp_path: Path) -> None:
    assert run_cli("add", "linear-kernel", "mm", "--data", "kind=mp", cwd=host).exit_code == 0
    run_package_tests(host, tmp_path / "cache", "tests/test_vllm_plugin.py", "tests/test_mm_kernel.py",
                      "tests/test_mm_selection.py", "tests/test_mm_engine.py")  # fmt: skip
