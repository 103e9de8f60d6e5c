"""How vLLM finds the connector: the general plugin's registration, the module-path route, name clashes."""

from __future__ import annotations

import logging

import pytest

pytest.importorskip("vllm")

from vllm.config import KVTransferConfig  # noqa: E402
from vllm.distributed.kv_transfer.kv_connector.factory import KVConnectorFactory  # noqa: E402

from my_kv.kv_connector import registration  # noqa: E402
from my_kv.kv_connector.connector import MyKvConnector  # noqa: E402


def test_general_plugin_registers_the_name(plugin_site) -> None:
    from vllm.plugins import load_general_plugins

    load_general_plugins()  # what vLLM runs in the front end, the engine core and each worker
    assert KVConnectorFactory.get_connector_class_by_name(registration.CONNECTOR_NAME) is MyKvConnector
    assert registration.register(), "a second call in the same process must be a no-op"


def test_module_path_route_needs_no_registry() -> None:
    config = KVTransferConfig(
        kv_connector=registration.CONNECTOR_NAME,
        kv_connector_module_path=registration.MODULE_PATH,
        kv_role="kv_both",
    )
    assert KVConnectorFactory.get_connector_class(config) is MyKvConnector


def test_a_taken_name_is_logged_with_the_fix_and_does_not_raise(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def someone_else():
        raise AssertionError("the other plugin's connector must stay registered, not be imported here")

    monkeypatch.setattr(KVConnectorFactory, "_registry", {registration.CONNECTOR_NAME: someone_else})
    monkeypatch.setattr(registration, "_registered", False)
    with caplog.at_level(logging.ERROR, logger=registration.__name__):
        assert registration.register() is False
    assert KVConnectorFactory._registry[registration.CONNECTOR_NAME] is someone_else
    assert "already registered" in caplog.text and registration.MODULE_PATH in caplog.text
