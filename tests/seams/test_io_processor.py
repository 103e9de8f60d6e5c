"""The io-processor template: its question, the entry point it adds, and `add` next to another component."""

from __future__ import annotations

import tomllib
from pathlib import Path

from seam_helpers import add_into


def test_add_next_to_a_general_plugin_declares_the_entry_point(host: Path) -> None:
    add_into(host, "io-processor", "embed_io", "max_texts=3")
    pyproject = tomllib.loads((host / "pyproject.toml").read_text())
    group = pyproject["project"]["entry-points"]["vllm.io_processor_plugins"]
    assert group == {"embed_io": "host.embed_io.entry:processor_class"}
    assert "vllm.general_plugins" in pyproject["project"]["entry-points"]
    entry = (host / "src/host/embed_io/entry.py").read_text()
    assert 'PROCESSOR_CLASS = "host.embed_io.processor.EmbedIoProcessor"' in entry
    assert "MAX_TEXTS = 3\n" in (host / "src/host/embed_io/processor.py").read_text()
    components = pyproject["tool"]["vllm-scaffold"]["components"]
    assert components[1]["object"] == "host.embed_io.processor:EmbedIoProcessor"
    assert "--io-processor-plugin embed_io" in components[1]["enable"][0]
