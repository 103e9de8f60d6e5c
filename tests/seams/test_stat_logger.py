"""The stat-logger template: its questions, and `add` next to a general plugin (both components' tests pass)."""

from __future__ import annotations

from pathlib import Path

import pytest
from seam_helpers import add_into, added, assert_lint_clean, entry_points, run_package_tests


def add_usage(host: Path) -> None:
    add_into(host, "stat-logger", "usage", "path_env=HOST_USAGE_LOG", "default_path=/tmp/host-usage.jsonl")


def test_add_with_answers_next_to_a_general_plugin(host: Path) -> None:
    add_usage(host)
    assert entry_points(host, "vllm.stat_logger_plugins") == {"usage": "host.usage.logger:UsageStatLogger"}
    manifest = added(host, "stat-logger")
    assert "$HOST_USAGE_LOG" in manifest[1]["enable"][0] and "'usage'" in manifest[1]["enable"][0]
    logger = (host / "src/host/usage/logger.py").read_text()
    assert 'PATH_ENV = "HOST_USAGE_LOG"' in logger and 'DEFAULT_PATH = "/tmp/host-usage.jsonl"' in logger
    assert_lint_clean(host, "src/host/usage", "tests/test_usage_logger.py")


@pytest.mark.engine
def test_host_with_both_components_passes_its_tests(host: Path, tmp_path: Path) -> None:
    add_usage(host)
    run_package_tests(host, tmp_path / "cache", "tests/test_vllm_plugin.py", "tests/test_usage_logger.py")
