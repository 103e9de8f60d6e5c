"""`MyLoraResolver` on its own: which names resolve, which are refused, and when it registers.

No engine: `resolve_lora` is awaited directly on adapter directories written by the harness's
`write_tiny_lora`. The server test (`test_lora_server.py`) proves the same resolver inside vLLM.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

pytest.importorskip("vllm")

from vllm.lora.resolver import LoRAResolverRegistry  # noqa: E402
from vllm_scaffold_testing.lora import write_tiny_lora  # noqa: E402

from my_lora.lora import resolver as module  # noqa: E402
from my_lora.lora.resolver import MyLoraResolver  # noqa: E402

BASE = "/models/base"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """An adapter root holding one adapter, `good`, for the base model BASE."""
    root = tmp_path / "adapters"
    adapter = root / "good"
    adapter.mkdir(parents=True)
    (adapter / "adapter_config.json").write_text(
        json.dumps({"peft_type": "LORA", "base_model_name_or_path": BASE}), encoding="utf-8"
    )
    return root


def resolve(resolver: MyLoraResolver, name: str, base: str = BASE):
    return asyncio.run(resolver.resolve_lora(base, name))


def test_a_named_adapter_resolves_to_its_directory(root: Path) -> None:
    request = resolve(MyLoraResolver(root), "good")
    assert request is not None
    assert request.lora_name == "good"
    assert Path(request.lora_path) == (root / "good").resolve()
    assert request.lora_int_id > 0


def test_an_adapter_written_for_the_tiny_model_resolves(tiny_llama: Path, tmp_path: Path) -> None:
    write_tiny_lora(tiny_llama, tmp_path / "root" / "tiny")
    request = resolve(MyLoraResolver(tmp_path / "root"), "tiny", base=str(tiny_llama))
    assert request is not None and Path(request.lora_path).name == "tiny"


@pytest.mark.parametrize("name", ["missing", "", ".", ".hidden"])
def test_names_without_an_adapter_are_not_resolved(root: Path, name: str) -> None:
    assert resolve(MyLoraResolver(root), name) is None


@pytest.mark.parametrize("name", ["../outside", "good/../good", "good/", "/etc", "a/b", "..", "good\\..\\x"])
def test_names_that_could_leave_the_root_are_refused(root: Path, name: str) -> None:
    outside = root.parent / "outside"
    outside.mkdir()
    (outside / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA"}), encoding="utf-8")
    assert resolve(MyLoraResolver(root), name) is None


def test_a_symbolic_link_out_of_the_root_is_refused(root: Path) -> None:
    outside = root.parent / "outside"
    outside.mkdir()
    (outside / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA"}), encoding="utf-8")
    (root / "link").symlink_to(outside, target_is_directory=True)
    assert resolve(MyLoraResolver(root), "link") is None


def test_base_model_and_adapter_type_are_checked(root: Path) -> None:
    assert resolve(MyLoraResolver(root), "good", base="/models/other") is None
    lenient = MyLoraResolver(root, check_base_model=False)
    assert resolve(lenient, "good", base="/models/other") is not None
    (root / "good" / "adapter_config.json").write_text(json.dumps({"peft_type": "IA3"}), encoding="utf-8")
    assert resolve(MyLoraResolver(root), "good") is None


def test_register_needs_the_directory_variable(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(LoRAResolverRegistry, "resolvers", {})
    monkeypatch.delenv(module.DIR_ENV, raising=False)
    module.register()
    assert module.RESOLVER_NAME not in LoRAResolverRegistry.get_supported_resolvers()

    monkeypatch.setenv(module.DIR_ENV, str(root))
    module.register()
    registered = LoRAResolverRegistry.get_resolver(module.RESOLVER_NAME)
    assert isinstance(registered, MyLoraResolver) and registered.root == root.resolve()

    monkeypatch.setenv(module.DIR_ENV, str(root / "good" / "adapter_config.json"))
    with pytest.raises(ValueError, match=module.DIR_ENV):
        module.register()
