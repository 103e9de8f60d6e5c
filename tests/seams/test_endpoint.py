"""The endpoint template: its route-prefix question, and `add` next to a general plugin (both components' tests
pass against the real server)."""

from __future__ import annotations

from pathlib import Path

import pytest
from seam_helpers import add_into, added, assert_lint_clean, entry_points, run_package_tests


def add_admin(host: Path) -> None:
    add_into(host, "endpoint", "admin", "route_prefix=/ops/admin")


def test_add_with_an_answer_next_to_a_general_plugin(host: Path) -> None:
    add_admin(host)
    assert entry_points(host, "vllm.endpoint_plugins") == {"admin": "host.admin.plugin:AdminEndpoint"}
    manifest = added(host, "endpoint")
    assert "'admin'" in manifest[1]["enable"][0] and "'host'" in manifest[1]["enable"][0]
    assert 'PREFIX = "/ops/admin"' in (host / "src/host/admin/plugin.py").read_text()
    # Naming only the endpoint would drop the general plugin: the page and the tests name both.
    assert "VLLM_PLUGINS=host,admin vllm serve" in (host / "docs/admin.md").read_text()
    assert_lint_clean(host, "src/host/admin", "tests/test_admin_server.py")


@pytest.mark.engine
def test_host_with_both_components_passes_its_tests(host: Path, tmp_path: Path) -> None:
    add_admin(host)
    run_package_tests(host, tmp_path / "cache", "tests/test_vllm_plugin.py", "tests/test_admin_server.py")
