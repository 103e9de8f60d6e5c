"""Tests of the package's general plugin: the entry point vLLM loads in every process."""

from __future__ import annotations

import importlib.metadata
import logging
import tomllib
from pathlib import Path
from types import SimpleNamespace

import pytest

vllm = pytest.importorskip("vllm")

from my_patch import vllm_plugin  # noqa: E402


def test_register_calls_each_component_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    monkeypatch.setattr(vllm_plugin, "_registered", False)
    monkeypatch.setattr(vllm_plugin, "COMPONENT_REGISTRATIONS", ["first.mod:register", "second.mod:register"])
    monkeypatch.setattr(
        vllm_plugin, "import_module", lambda name: SimpleNamespace(register=lambda: calls.append(name))
    )
    vllm_plugin.register()
    vllm_plugin.register()
    assert calls == ["first.mod", "second.mod"]


def test_registration_targets_resolve() -> None:
    # One test over the list, which a package whose components need no registration leaves empty.
    for target in vllm_plugin.COMPONENT_REGISTRATIONS:
        module_name, _, function_name = target.partition(":")
        assert callable(getattr(importlib.import_module(module_name), function_name, None)), target


def test_version_check_accepts_installed_vllm_and_warns_on_unverified_releases(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    assert vllm_plugin.check_vllm_version()
    monkeypatch.setattr(vllm, "__version__", "0.1.0")
    with caplog.at_level(logging.WARNING, logger=vllm_plugin.__name__):
        assert not vllm_plugin.check_vllm_version()
    assert "0.1.0" in caplog.text and vllm_plugin.SUPPORTED_VLLM in caplog.text


def test_verified_releases_are_inside_the_declared_range() -> None:
    from packaging.specifiers import SpecifierSet

    verified = vllm_plugin.ENGINE_TESTED_VLLM + vllm_plugin.API_CHECKED_VLLM
    assert verified and all(SpecifierSet(vllm_plugin.SUPPORTED_VLLM).contains(v) for v in verified)
    for version in vllm_plugin.ENGINE_TESTED_VLLM:
        assert vllm_plugin.vllm_support(version) == "engine-tested"
    for version in vllm_plugin.API_CHECKED_VLLM:
        assert vllm_plugin.vllm_support(version) == "api-checked"
        assert vllm_plugin.vllm_support(f"{version}+cpu") == "api-checked"
    assert vllm_plugin.vllm_support("0.1.0") == "unknown"


@pytest.mark.parametrize("version", vllm_plugin.ENGINE_TESTED_VLLM + vllm_plugin.API_CHECKED_VLLM)
def test_verified_releases_get_no_warning(
    version: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(vllm, "__version__", version)
    with caplog.at_level(logging.WARNING, logger=vllm_plugin.__name__):
        assert vllm_plugin.check_vllm_version()
    assert not caplog.records


def test_general_plugin_entry_point_is_visible(plugin_site: Path | None) -> None:
    entry_points = importlib.metadata.entry_points(group="vllm.general_plugins")
    assert {ep.name: ep.value for ep in entry_points}.get("my_patch") == "my_patch.vllm_plugin:register"


def test_no_hard_dependency_on_vllm(plugin_project: Path) -> None:
    pyproject = tomllib.loads((plugin_project / "pyproject.toml").read_text(encoding="utf-8"))
    names = [dep.split(";")[0].strip().split("[")[0] for dep in pyproject["project"].get("dependencies", [])]
    assert "vllm" not in {name.lower() for name in names}
