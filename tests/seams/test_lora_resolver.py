"""The lora-resolver template: its questions, and `add` next to another component."""

from __future__ import annotations

from pathlib import Path

from seam_helpers import add_into, added, assert_registered


def test_add_next_to_a_general_plugin_with_answers(host: Path) -> None:
    add_into(host, "lora-resolver", "adapters", "dir_env=HOST_LORAS", "check_base_model=false")
    source = (host / "src/host/adapters/resolver.py").read_text()
    assert 'DIR_ENV = "HOST_LORAS"' in source and "CHECK_BASE_MODEL = False" in source
    assert_registered(host, "host.adapters.resolver:register")
    manifest = added(host, "lora-resolver")
    assert manifest[1]["object"] == "host.adapters.resolver:AdaptersResolver"
    assert "HOST_LORAS=DIR" in manifest[1]["enable"][0]
