"""The model template: the architecture question (never an in-tree name) and `add` next to another component."""

from __future__ import annotations

import tomllib
from pathlib import Path

from seam_helpers import add_into, assert_registered


def test_add_next_to_a_general_plugin_with_an_architecture(host: Path) -> None:
    add_into(host, "model", "tiny_lm", "architecture=TinyLMForCausalLM")
    registration = (host / "src/host/tiny_lm/registration.py").read_text()
    assert 'MODEL_CLASS = "host.tiny_lm.model:TinyLMForCausalLM"' in registration
    assert "class TinyLMForCausalLM(nn.Module):" in (host / "src/host/tiny_lm/model.py").read_text()
    assert_registered(host, "host.tiny_lm.registration:register")
    component = tomllib.loads((host / "pyproject.toml").read_text())["tool"]["vllm-scaffold"]["components"][1]
    assert component["object"] == "host.tiny_lm.model:TinyLMForCausalLM"
