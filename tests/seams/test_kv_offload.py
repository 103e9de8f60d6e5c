"""The kv-offload template: its questions, its registration, and `add` next to another component."""

from __future__ import annotations

from pathlib import Path

from seam_helpers import add_into, added, assert_registered

from tests.helpers import run_cli


def test_add_next_to_a_general_plugin_with_answers(host: Path) -> None:
    add_into(host, "kv-offload", "host_kv", "spec_name=HostTierSpec", "default_store_mib=64")
    spec = (host / "src/host/host_kv/spec.py").read_text()
    assert "class HostTierSpec(OffloadingSpec):" in spec and "DEFAULT_STORE_BYTES = 64 << 20" in spec
    registration = (host / "src/host/host_kv/registration.py").read_text()
    assert 'SPEC_NAME = "HostTierSpec"' in registration
    assert 'MODULE_PATH = "host.host_kv.spec"' in registration
    # The engine core and every worker resolve spec_name: the general plugin runs the registration.
    assert_registered(host, "host.host_kv.registration:register")
    manifest = added(host, "kv-offload")
    assert manifest[1]["object"] == "host.host_kv.spec:HostTierSpec"
    assert '"spec_name": "HostTierSpec"' in manifest[1]["enable"][0]
    assert '"spec_module_path": "host.host_kv.spec"' in manifest[1]["enable"][1]


def test_default_names_follow_the_component(host: Path) -> None:
    assert run_cli("add", "kv-offload", "host_kv", cwd=host).exit_code == 0
    package = host / "src/host/host_kv"
    assert "class HostKvOffloadingSpec(OffloadingSpec):" in (package / "spec.py").read_text()
    assert "class HostKvOffloadingManager(OffloadingManager):" in (package / "manager.py").read_text()
    assert "class HostKvOffloadingWorker(OffloadingWorker):" in (package / "worker.py").read_text()
