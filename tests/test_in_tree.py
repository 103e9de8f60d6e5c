"""The validator data of in-tree names is what the installed vLLM registers, and the questions use it."""

from __future__ import annotations

import pytest

from vllm_scaffold.in_tree import DATA_FILE, SOURCES, installed_data
from vllm_scaffold.rendering import questions, templates_root


def test_in_tree_names_match_the_installed_vllm() -> None:
    pytest.importorskip("vllm")
    stored = (templates_root() / "_shared" / DATA_FILE).read_text(encoding="utf-8")
    assert stored == installed_data(), "the installed vLLM differs: run python -m vllm_scaffold.in_tree"


@pytest.mark.parametrize(
    ("template", "question", "variable"),
    [
        ("model", "architecture", "IN_TREE_ARCHITECTURES"),
        ("quantization", "method_name", "IN_TREE_QUANTIZATION_METHODS"),
        ("kv-connector", "connector_name", "IN_TREE_KV_CONNECTORS"),
        ("attention-backend", "backend_name", "IN_TREE_ATTENTION_BACKENDS"),
    ],
)
def test_questions_refuse_names_from_the_shared_data(template: str, question: str, variable: str) -> None:
    assert variable in SOURCES
    validator = questions(template)[question]["validator"]
    assert f'import {variable} %}}' in validator and f"{question} in {variable}" in validator
