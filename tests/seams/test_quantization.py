"""The quantization template: its questions against vLLM 0.32's built-in method names, refused answers, and
`add` next to another component (whose package then still passes its tests in the CPU engine)."""

from __future__ import annotations

import tomllib
from pathlib import Path

from seam_helpers import assert_lint_clean, run_package_tests

from tests.helpers import run_cli


def test_add_with_answers_next_to_a_general_plugin(host: Path) -> None:
    done = run_cli(
        "add", "quantization", "wo", "--data", "method_name=int8-wo", "--data", "ignore=lm_head,down_proj", cwd=host
    )
    assert done.exit_code == 0, done.stderr
    fmt = (host / "src/host/wo/format.py").read_text()
    assert 'METHOD_NAME = "int8-wo"' in fmt and 'DEFAULT_IGNORE: tuple[str, ...] = ("lm_head", "down_proj")' in fmt
    assert 'BACKEND_ENV = "HOST_WO_BACKEND"' in (host / "src/host/wo/config.py").read_text()
    plugin = (host / "src/host/vllm_plugin.py").read_text()
    assert '"host.hooks.registration:register"' in plugin and '"host.wo.config:register"' in plugin
    manifest = tomllib.loads((host / "pyproject.toml").read_text())["tool"]["vllm-scaffold"]["components"]
    assert [c["seam"] for c in manifest] == ["general-plugin", "quantization"]
    assert manifest[1]["object"] == "host.wo.config:WoConfig"
    enable = manifest[1]["enable"]
    assert "quantization='int8-wo'" in enable[0] and "python -m host.wo.quantize" in enable[0]
    assert enable[1].startswith("HOST_WO_BACKEND=")
    assert_lint_clean(host, "src/host/wo", "tests/test_wo_kernel.py", "tests/test_wo_config.py",
                      "tests/test_wo_quantize.py", "tests/test_wo_engine.py")  # fmt: skip


def test_host_with_both_components_passes_its_tests(host: Path, tmp_path: Path) -> None:
    assert run_cli("add", "quantization", "wo", cwd=host).exit_code == 0
    # Everything that starts no engine: with default answers the engine tests are the golden package's own.
    run_package_tests(host, tmp_path / "cache", "tests/test_vllm_plugin.py", "tests/test_wo_kernel.py",
                      "tests/test_wo_config.py", "tests/test_wo_quantize.py", "-m", "not engine")  # fmt: skip
