"""The in-tree names the questions refuse come from the release indexes, and the indexes read them right."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from scripts.in_tree_names import DATA_FILE, PARSERS, REGISTRIES, shipped_data
from vllm_scaffold import vllm_facts
from vllm_scaffold.doctor.reading import installed
from vllm_scaffold.generate.rendering import questions, templates_root
from vllm_scaffold.vllm_facts import linear_kernels, parsers


def test_in_tree_names_are_those_of_the_shipped_releases() -> None:
    stored = (templates_root() / "_shared" / DATA_FILE).read_text(encoding="utf-8")
    assert stored == shipped_data(), "a release index changed: run python scripts/in_tree_names.py"


def _architectures() -> list[str]:
    from vllm.model_executor.models.registry import _VLLM_MODELS

    return list(_VLLM_MODELS)


def _quantization_methods() -> list[str]:
    from typing import get_args

    from vllm.model_executor.layers.quantization import QuantizationMethods

    return list(get_args(QuantizationMethods))


def _kv_connectors() -> list[str]:
    from vllm.distributed.kv_transfer.kv_connector.factory import KVConnectorFactory

    return list(KVConnectorFactory._registry)


def _offloading_specs() -> list[str]:
    from vllm.v1.kv_offload.factory import OffloadingSpecFactory

    return list(OffloadingSpecFactory._registry)


def _attention_backends() -> list[str]:
    from vllm.v1.attention.backends.registry import AttentionBackendEnum

    return [member.name for member in AttentionBackendEnum if member.name != "CUSTOM"]


# What the installed vLLM reports at run time, beside the registry its index read from the source.
RUNTIME: dict[str, Callable[[], list[str]]] = {
    "architectures": _architectures,
    "quantization_methods": _quantization_methods,
    "kv_connectors": _kv_connectors,
    "offloading_specs": _offloading_specs,
    "attention_backends": _attention_backends,
}


@pytest.mark.parametrize("registry", sorted(RUNTIME))
def test_the_index_reads_what_the_installed_vllm_registers(registry: str) -> None:
    pytest.importorskip("vllm")
    assert sorted(installed.facts().registry(registry)) == sorted(RUNTIME[registry]())


def test_the_index_finds_custom_ops_by_class_hierarchy() -> None:
    pytest.importorskip("vllm")
    import vllm.model_executor.layers.layernorm  # noqa: F401  (registers the ops it defines)
    import vllm.model_executor.layers.rotary_embedding  # noqa: F401

    registered = {name: op.__name__ for name, op in _registry_classes().items()}
    ops = installed.facts().custom_ops
    for registry_name, class_name in registered.items():
        assert ops.get(class_name) == registry_name, class_name
    # subclasses without a registry name of their own are ops too (the hierarchy, not a word search)
    assert "LinearScalingRotaryEmbedding" in ops and "RMSNorm" in ops


def _registry_classes() -> dict[str, type]:
    from vllm.model_executor.custom_op import op_registry

    return dict(op_registry)


@pytest.mark.parametrize("kind", sorted(linear_kernels.AHEAD))
def test_linear_kernels_ahead_are_the_installed_selector_lists(kind: str) -> None:
    pytest.importorskip("vllm")
    from vllm.model_executor.kernels import linear
    from vllm.platforms import PlatformEnum

    lists = getattr(linear, linear_kernels.table(kind))
    for platform, names in linear_kernels.AHEAD[kind].items():
        in_tree = tuple(k.__name__ for k in lists[PlatformEnum[platform.upper()]] if k.__module__.startswith("vllm."))
        assert names == in_tree, (kind, platform)
    import vllm

    accepted = linear_kernels.kinds(vllm.__version__)
    assert set(accepted) >= set(linear_kernels.AHEAD)
    assert all(hasattr(linear, linear_kernels.table(kind)) for kind in accepted)


def test_shipped_indexes_are_the_declared_releases() -> None:
    versions = vllm_facts.checked_versions()
    assert set(vllm_facts.ENGINE_TESTED) <= set(versions)
    for version in versions:
        index = vllm_facts.shipped(version)
        assert index.version == version
        assert "vllm.general_plugins" in index.entry_point_groups
        assert all(index.registry(registry) for registry in REGISTRIES.values())
        assert all(listed(index) for listed in PARSERS.values()), f"{version}'s index names no in-tree parser"


@pytest.mark.parametrize(
    ("template", "question", "variable"),
    [
        ("model", "architecture", "IN_TREE_ARCHITECTURES"),
        ("quantization", "method_name", "IN_TREE_QUANTIZATION_METHODS"),
        ("kv-connector", "connector_name", "IN_TREE_KV_CONNECTORS"),
        ("kv-offload", "spec_name", "IN_TREE_OFFLOADING_SPECS"),
        ("attention-backend", "backend_name", "IN_TREE_ATTENTION_BACKENDS"),
    ],
)
def test_questions_refuse_names_from_the_shared_data(template: str, question: str, variable: str) -> None:
    assert variable in REGISTRIES
    validator = questions(template)[question]["validator"]
    assert f"import {variable} %}}" in validator and f"{question} in {variable}" in validator


def test_catalog_groups_are_what_every_verified_release_reads() -> None:
    from vllm_scaffold.catalog import load_catalog

    groups = {seam.group for seam in load_catalog().values() if seam.group}
    for version in vllm_facts.checked_versions():
        read = set(vllm_facts.shipped(version).entry_point_groups)
        assert groups == read, f"vLLM {version} reads {sorted(read)}, the catalog names {sorted(groups)}"


def test_an_installed_release_the_tool_ships_uses_the_shipped_index() -> None:
    """No index is rebuilt (minutes) where the installed sources are those of a shipped release."""
    vllm = installed.installed_vllm()
    if (
        vllm.version not in vllm_facts.checked_versions()
        or vllm.distribution != vllm_facts.shipped(vllm.version).distribution
    ):
        pytest.skip(f"the installed vLLM ({vllm.distribution} {vllm.version}) has no shipped index")
    assert installed.facts() is vllm_facts.shipped(vllm.version)


def test_parser_names_are_those_the_installed_vllm_registers() -> None:
    """The index of the installed release lists the in-tree parser names its managers hold after import, and
    the ones the reader finds in its source tree."""
    pytest.importorskip("vllm")
    import vllm
    from vllm.reasoning import ReasoningParserManager
    from vllm.tool_parsers import ToolParserManager

    index = installed.facts()
    root = Path(vllm.__file__).parent
    assert set(ToolParserManager.list_registered()) == index.tool_parsers
    assert set(ReasoningParserManager.list_registered()) == index.reasoning_parsers
    assert parsers.read_in_tree(root, parsers.TOOL_PARSER_TABLE) == index.tool_parsers
    assert parsers.read_in_tree(root, parsers.REASONING_PARSER_TABLE) == index.reasoning_parsers


def test_parser_names_are_read_from_the_tables_and_left_out_where_there_is_none() -> None:
    """A release whose sources have no parser table gets no entry for it (None: unknown), not an empty list."""
    import ast

    tool = ast.parse('_TOOL_PARSERS_TO_REGISTER = {"a": ("a_parser", "A"), "b": ("b_parser", "B")}\n')
    read = parsers.read_parsers({"vllm.tool_parsers": tool, "vllm.reasoning": ast.parse("OTHER = {}\n")})
    assert read == {"parsers": {"tool": ["a", "b"]}}
    index = vllm_facts.ReleaseIndex({"vllm": "0", "modules": {}, **read})
    assert index.tool_parsers == {"a", "b"} and index.reasoning_parsers is None


def test_an_index_cached_in_an_older_format_is_built_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An index cached before the parser names were read would name none: its format tells it apart."""
    from vllm_scaffold.vllm_facts import build, store

    monkeypatch.setenv(store.CACHE_ENV, str(tmp_path / "cache"))
    tree = tmp_path / "src" / "vllm"
    (tree / "tool_parsers").mkdir(parents=True)
    (tree / "__init__.py").write_text("", encoding="utf-8")
    (tree / "_version.py").write_text('__version__ = "9.0.0"\n', encoding="utf-8")
    (tree / "tool_parsers" / "__init__.py").write_text(
        '_TOOL_PARSERS_TO_REGISTER = {"mine": ("mine_parser", "MineParser")}\n', encoding="utf-8"
    )
    installed = vllm_facts.which_release(vllm_facts.Installed(tree.parent))
    assert installed.origin is vllm_facts.Origin.SOURCE and installed.version == "9.0.0"
    assert installed.index.tool_parsers == {"mine"} and installed.index.reasoning_parsers is None
    (cached,) = (tmp_path / "cache" / "indexes").iterdir()
    assert cached.name.endswith(f"-{build.FORMAT}{store.SUFFIX}")
    stale = {**store.decode(cached), "format": build.FORMAT - 1}
    del stale["parsers"]
    cached.write_bytes(store.encode(stale))
    assert store.index_of_source(tree.parent).tool_parsers == {"mine"}
    assert store.decode(cached)["format"] == build.FORMAT
