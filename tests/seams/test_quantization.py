"""The quantization template: its questions against vLLM 0.32's built-in method names, refused answers, and
`add` next to another component (whose package then still passes its tests in the CPU engine)."""

from __future__ import annotations

from pathlib import Path

from seam_helpers import add_into, added, assert_lint_clean, assert_registered, run_package_tests

from tests.helpers import run_cli


def test_add_with_answers_next_to_a_general_plugin(host: Path) -> None:
    add_into(host, "quantization", "wo", "method_name=int8-wo", "ignore=lm_head,down_proj")
    fmt = (host / "src/host/wo/format.py").read_text()
    assert 'METHOD_NAME = "int8-wo"' in fmt and 'DEFAULT_IGNORE: tuple[str, ...] = ("lm_head", "down_proj")' in fmt
    assert 'BACKEND_ENV = "HOST_WO_BACKEND"' in (host / "src/host/wo/config.py").read_text()
    manifest = added(host, "quantization")
    enable = manifest[1]["enable"]
    assert manifest[1]["object"] == "host.wo.config:WoConfig"
    assert_registered(host, "host.wo.config:register")
    assert "quantization='int8-wo'" in enable[0] and "python -m host.wo.quantize" in enable[0]
    assert enable[1].startswith("HOST_WO_BACKEND=")
    assert_lint_clean(host, "src/host/wo", "tests/test_wo_kernel.py", "tests/test_wo_config.py",
                      "tests/test_wo_quantize.py", "tests/test_wo_engine.py")  # fmt: skip


def test_host_with_both_components_passes_its_tests(host: Path, tmp_path: Path) -> None:
    assert run_cli("add", "quantization", "wo", cwd=host).exit_code == 0
    # Everything that starts no engine: with default answers the engine tests are the golden package's own.
    run_package_tests(host, tmp_path / "cache", "tests/test_vllm_plugin.py", "tests/test_wo_kernel.py",
                      "tests/test_wo_config.py", "tests/test_wo_quantize.py", "-m", "not engine")  # fmt: skip
