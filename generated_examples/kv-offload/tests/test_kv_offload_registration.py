"""How vLLM finds the spec: the general plugin's registration, the module-path route, name clashes."""

from __future__ import annotations

import logging

import pytest

pytest.importorskip("vllm")

from vllm.v1.kv_offload.factory import OffloadingSpecFactory  # noqa: E402

from my_offload.kv_offload import registration  # noqa: E402
from my_offload.kv_offload.spec import MyOffloadOffloadingSpec  # noqa: E402


def test_general_plugin_registers_the_name(plugin_site) -> None:
    from vllm.plugins import load_general_plugins

    load_general_plugins()  # what vLLM runs in the front end, the engine core and each worker
    assert (
        OffloadingSpecFactory.get_spec_cls({"spec_name": registration.SPEC_NAME}) is MyOffloadOffloadingSpec
    )
    assert registration.register(), "a second call in the same process must be a no-op"


def test_module_path_route_needs_no_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(OffloadingSpecFactory, "_registry", {})
    extra_config = {"spec_name": registration.SPEC_NAME, "spec_module_path": registration.MODULE_PATH}
    assert OffloadingSpecFactory.get_spec_cls(extra_config) is MyOffloadOffloadingSpec


def test_a_taken_name_is_logged_with_the_fix_and_does_not_raise(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def someone_else():
        raise AssertionError("the other plugin's spec must stay registered, not be imported here")

    monkeypatch.setattr(OffloadingSpecFactory, "_registry", {registration.SPEC_NAME: someone_else})
    monkeypatch.setattr(registration, "_registered", False)
    with caplog.at_level(logging.ERROR, logger=registration.__name__):
        assert registration.register() is False
    assert OffloadingSpecFactory._registry[registration.SPEC_NAME] is someone_else
    assert "already registered" in caplog.text and registration.MODULE_PATH in caplog.text
