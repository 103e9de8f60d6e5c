"""The kv-connector template: its question, its registration, and `add` next to another component."""

from __future__ import annotations

from pathlib import Path

from seam_helpers import add_into, added, assert_registered

from tests.helpers import run_cli


def test_add_next_to_a_general_plugin_with_answers(host: Path) -> None:
    add_into(host, "kv-connector", "disk_kv", "connector_name=HostDiskConnector")
    connector = (host / "src/host/disk_kv/connector.py").read_text()
    assert "class HostDiskConnector(KVConnectorBase_V1):" in connector
    assert "class HostDiskConnectorMetadata(KVConnectorMetadata):" in connector
    registration = (host / "src/host/disk_kv/registration.py").read_text()
    assert 'CONNECTOR_NAME = "HostDiskConnector"' in registration
    assert 'MODULE_PATH = "host.disk_kv.connector"' in registration
    # The name must be known in every vLLM process: the general plugin runs the registration.
    assert_registered(host, "host.disk_kv.registration:register")
    manifest = added(host, "kv-connector")
    assert manifest[1]["object"] == "host.disk_kv.connector:HostDiskConnector"
    assert '"kv_connector": "HostDiskConnector"' in manifest[1]["enable"][0]
    assert '"kv_connector_module_path": "host.disk_kv.connector"' in manifest[1]["enable"][1]


def test_default_name_follows_the_component(host: Path) -> None:
    assert run_cli("add", "kv-connector", "disk_kv", cwd=host).exit_code == 0
    assert "class DiskKvConnector(KVConnectorBase_V1):" in (host / "src/host/disk_kv/connector.py").read_text()
