"""The stat-logger template: its questions, and `add` next to a general plugin (both components' tests pass)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from seam_helpers import assert_lint_clean, run_package_tests

from tests.helpers import run_cli


def add_usage(host: Path) -> None:
    answers = ["--data", "path_env=HOST_USAGE_LOG", "--data", "default_path=/tmp/host-usage.jsonl"]
    done = run_cli("add", "stat-logger", "usage", *answers, cwd=host)
    assert done.exit_code == 0, done.stderr


def test_add_with_answers_next_to_a_general_plugin(host: Path) -> None:
    add_usage(host)
    pyproject = tomllib.loads((host / "pyproject.toml").read_text())
    assert pyproject["project"]["entry-points"]["vllm.stat_logger_plugins"] == {
        "usage": "host.usage.logger:UsageStatLogger"
    }
    manifest = pyproject["tool"]["vllm-scaffold"]["components"]
    assert [c["seam"] for c in manifest] == ["general-plugin", "stat-logger"]
    assert "$HOST_USAGE_LOG" in manifest[1]["enable"][0] and "'usage'" in manifest[1]["enable"][0]
    logger = (host / "src/host/usage/logger.py").read_text()
    assert 'PATH_ENV = "HOST_USAGE_LOG"' in logger and 'DEFAULT_PATH = "/tmp/host-usage.jsonl"' in logger
    assert_lint_clean(host, "src/host/usage", "tests/test_usage_logger.py")


@pytest.mark.engine
def test_host_with_both_components_passes_its_tests(host: Path, tmp_path: Path) -> None:
    add_usage(host)
    run_package_tests(
        host, tmp_path / "cache", "tests/test_vllm_plugin.py",
         "tests/test_usage_logger.py"
    )  # fmt: skip
