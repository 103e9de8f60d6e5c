"""The registry census: every registration point and entry-point group of every shipped release index has a
status in the catalog (templated, explained, internal), the facts of explained and internal entries name symbols
of the releases they were checked on, and the index finds registration points by what their code does."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import build_file_tree
from vllm_scaffold import vllm_facts
from vllm_scaffold.catalog import load_catalog, load_registries
from vllm_scaffold.catalog.registries import STATUSES, registry_from_table
from vllm_scaffold.errors import ScaffoldError
from vllm_scaffold.vllm_facts.build import build


@pytest.mark.parametrize("version", vllm_facts.shipped_versions())
def test_every_registry_of_a_release_has_a_status(version: str) -> None:
    """A registration point or entry-point group nobody classified fails here, named with its release: a new
    release's registries surface when its index is added."""
    index = vllm_facts.shipped(version)
    assert index.registration_points, f"the {version} index has no registration points: rebuild it"
    unclassified = _unclassified(index)
    assert not unclassified, (
        f"vLLM {version} has registries vllm_scaffold/catalog/registries.toml does not classify: "
        + "; ".join(unclassified)
    )


def _unclassified(index: vllm_facts.ReleaseIndex) -> list[str]:
    registries = load_registries().values()
    claimed = {symbol for r in registries for symbol in r.registration}
    groups = {r.group for r in registries if r.group}
    unclassified = [f"registration point {p}" for p in index.registration_points if p not in claimed]
    return unclassified + [f"entry-point group {g}" for g in index.entry_point_groups if g not in groups]


def test_a_registry_new_in_a_release_is_reported() -> None:
    data = vllm_facts.shipped(vllm_facts.shipped_versions()[-1]).data
    newer = vllm_facts.ReleaseIndex(
        {
            **data,
            "registration_points": {**data["registration_points"], "vllm.x.ThingFactory.register_thing": {}},
            "entry_point_groups": {**data["entry_point_groups"], "vllm.thing_plugins": {}},
        }
    )
    assert _unclassified(newer) == [
        "registration point vllm.x.ThingFactory.register_thing",
        "entry-point group vllm.thing_plugins",
    ]


def _is_symbol_of(index: vllm_facts.ReleaseIndex, symbol: str) -> bool:
    return symbol in index.registration_points or index.resolve(symbol).kind in {"function", "member", "class"}


@pytest.mark.parametrize("key", [r.key for r in load_registries().values() if r.status != "templated"])
def test_explained_and_internal_entries_name_symbols_of_their_releases(key: str) -> None:
    registry = load_registries()[key]
    shipped = vllm_facts.shipped_versions()
    assert set(registry.releases) <= set(shipped), (key, registry.releases)
    named = {version: vllm_facts.shipped(version) for version in registry.releases}
    for symbol in registry.registration:
        assert any(_is_symbol_of(index, symbol) for index in named.values()), (
            f"{key}: {symbol} is in none of {', '.join(registry.releases)}"
        )
    for version, index in named.items():
        assert any(_is_symbol_of(index, symbol) for symbol in registry.registration), (
            f"{key}: none of its registration symbols is in {version}"
        )
    # A release that has the registry but is not named has not had the facts checked against it.
    for version in shipped:
        points = vllm_facts.shipped(version).registration_points
        if any(symbol in points for symbol in registry.registration):
            assert version in registry.releases, f"{key}: check its facts against {version} and add it to releases"


def test_every_symbol_and_group_an_entry_names_is_in_a_shipped_release() -> None:
    """The other direction of the census: no entry claims a registry (a typo, a removed one) no release has."""
    indexes = [vllm_facts.shipped(version) for version in vllm_facts.shipped_versions()]
    for registry in load_registries().values():
        for symbol in registry.registration:
            assert any(_is_symbol_of(index, symbol) for index in indexes), (registry.key, symbol)
        if registry.group:
            assert any(registry.group in index.entry_point_groups for index in indexes), registry.key
        module = registry.source.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        assert registry.source.endswith(".py") and any(module in index.modules for index in indexes), (
            registry.key,
            registry.source,
        )


def test_templated_entries_name_a_seam_with_a_template() -> None:
    catalog = load_catalog()
    for registry in load_registries().values():
        if registry.status != "templated":
            continue
        assert registry.seam in catalog and catalog[registry.seam].has_template, registry.key
        if registry.group:  # the seam's own entry-point group, where it has one
            assert catalog[registry.seam].group == registry.group, registry.key


def test_keys_of_entries_without_a_template_are_not_seam_keys() -> None:
    """`explain KEY` looks seams up first: an explained or internal entry must not hide behind a seam."""
    seams = set(load_catalog())
    assert not [r.key for r in load_registries().values() if r.status != "templated" and r.key in seams]


def test_contract_fields_hold_something() -> None:
    for registry in load_registries().values():
        assert registry.summary and registry.keywords and registry.source.startswith("vllm/"), registry.key
        assert all(symbol.startswith("vllm.") for symbol in registry.registration), registry.key


def _table(key: str) -> dict[str, object]:
    registry = load_registries()[key]
    return {k: v for k, v in registry.as_json().items() if k != "key"}


def test_an_undeclared_key_is_refused() -> None:
    with pytest.raises(ScaffoldError, match=r"\[kv-offload-tier\] has an unknown key 'colour'"):
        registry_from_table("kv-offload-tier", {**_table("kv-offload-tier"), "colour": "blue"})


def test_each_status_requires_its_facts() -> None:
    table = _table("kv-offload-tier")
    del table["duplicate_policy"]
    with pytest.raises(ScaffoldError, match=r"\(explained\) lacks duplicate_policy"):
        registry_from_table("kv-offload-tier", table)
    with pytest.raises(ScaffoldError, match="lacks reason"):
        registry_from_table("x", {**_table("kv-offload-tier"), "status": "internal"})
    with pytest.raises(ScaffoldError, match="'seam', which only a templated entry has"):
        registry_from_table("x", {**_table("kv-offload-tier"), "seam": "kv-connector"})
    with pytest.raises(ScaffoldError, match="has status 'maybe'"):
        registry_from_table("x", {**_table("kv-offload-tier"), "status": "maybe"})


# -- what the index counts as a registration point ----------------------------------------------------------

_TREE = {
    "vllm/__init__.py": "",
    "vllm/connectors.py": """
        class ThingFactory:
            _registry: dict = {}

            @classmethod
            def register_thing(cls, name, module_path):
                if name in cls._registry:
                    raise ValueError(name)
                cls._registry[name] = module_path

            @classmethod
            def create(cls, name):
                return cls._registry[name]


        ThingFactory.register_thing("builtin", "vllm.builtin")


        def register_builtin_things():
            ThingFactory.register_thing("other", "vllm.other")
    """,
    "vllm/loaders.py": """
        _LOADERS = {}


        def register_loader(name):
            def wrap(cls):
                _LOADERS[name] = cls
                return cls

            return wrap


        def register_loader_alias(alias, name):
            register_loader(alias)(_LOADERS[name])


        def register_nothing(name):
            seen = {}
            seen[name] = True
    """,
    "vllm/registry.py": """
        class _Registry:
            def __init__(self):
                self.entries = {}

            def register(self, name, cls):
                self.entries[name] = cls


        class PerModelManager:
            def __init__(self):
                self.modules = {}

            def register_module(self, name, module):
                self.modules[name] = module
    """,
    "vllm/shared.py": """
        from vllm.registry import _Registry

        THINGS = _Registry()
    """,
}


def test_registration_points_are_found_by_what_their_code_stores(tmp_path: Path) -> None:
    points = build(build_file_tree(_TREE, tmp_path), "0.0.0", "vllm")["registration_points"]
    assert points["vllm.connectors.ThingFactory.register_thing"] == {
        "kind": "classmethod",
        "fills": ["vllm.connectors.ThingFactory._registry"],
    }
    assert points["vllm.loaders.register_loader"]["fills"] == ["vllm.loaders._LOADERS"]
    # a registry class kept as a module-level instance elsewhere: the point is the instance's method
    assert points["vllm.shared.THINGS.register"] == {
        "kind": "method",
        "fills": ["vllm.registry._Registry.entries"],
        "member": "vllm.registry._Registry.register",
    }
    # a function that passes its own arguments on to a point is a second name for that registry
    assert points["vllm.loaders.register_loader_alias"]["via"] == ["vllm.loaders.register_loader"]
    # not registries: vLLM registering its own entries, a local dict, an object made per model, a getter
    for absent in (
        "vllm.connectors.register_builtin_things",
        "vllm.loaders.register_nothing",
        "vllm.registry.PerModelManager.register_module",
        "vllm.registry._Registry.register",
        "vllm.connectors.ThingFactory.create",
    ):
        assert absent not in points


def test_registries_page_is_current() -> None:
    from scripts.registries_docs import PAGE, markdown

    assert PAGE.read_text(encoding="utf-8") == markdown(), (
        "docs/registries.md is stale: run python scripts/registries_docs.py"
    )


# -- the command line ---------------------------------------------------------------------------------------


def test_list_all_prints_every_registry_under_its_status(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.helpers import run_cli
    from vllm_scaffold.terminal import console

    monkeypatch.setenv("COLUMNS", "200")
    console.out.cache_clear()
    try:
        result = run_cli("list", "--all")
    finally:
        console.out.cache_clear()
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    headings = [next(i for i, line in enumerate(lines) if line.startswith(s.capitalize())) for s in STATUSES]
    assert headings == sorted(headings)
    for registry in load_registries().values():
        at = next(i for i, line in enumerate(lines) if line.startswith(f"  - {registry.key}"))
        section = STATUSES.index(registry.status)
        assert headings[section] < at and (section == 2 or at < headings[section + 1]), registry.key
    # plain `list` stays the seams alone
    assert "Every registry" not in run_cli("list").stdout


def test_list_all_json_has_seams_and_registries() -> None:
    import json

    from tests.helpers import run_cli

    data = json.loads(run_cli("list", "--all", "--json").stdout)
    assert [seam["key"] for seam in data["seams"]] == list(load_catalog())
    assert [entry["key"] for entry in data["registries"]] == list(load_registries())
    offloading = next(entry for entry in data["registries"] if entry["key"] == "kv-offload-tier")
    assert offloading["status"] == "explained" and offloading["registration"] and offloading["keywords"]
    assert isinstance(json.loads(run_cli("list", "--json").stdout), list)  # unchanged without --all


@pytest.mark.parametrize("key", [r.key for r in load_registries().values() if r.status != "templated"])
def test_explain_prints_an_explained_or_internal_registry(key: str) -> None:
    from tests.helpers import run_cli

    result = run_cli("explain", key)
    assert result.exit_code == 0, result.stderr
    registry = load_registries()[key]
    printed = " ".join(result.stdout.split())
    facts = (
        [registry.reason or ""]
        if registry.status == "internal"
        else [
            registry.call or "",
            registry.processes or "",
            registry.duplicate_policy or "",
            *registry.selection,
            *registry.pitfalls,
        ]
    )
    for text in [registry.summary, *facts, *registry.registration, registry.source]:
        assert " ".join(text.split()) in printed, (key, text)


def test_explain_of_a_templated_registry_is_its_seam_and_an_unknown_key_is_refused() -> None:
    from tests.helpers import run_cli

    assert "vllm-scaffold new model NAME" in " ".join(run_cli("explain", "model").stdout.split())
    result = run_cli("explain", "kv-offloading-spek")
    assert result.exit_code != 0
    assert "unknown seam or registry 'kv-offloading-spek'" in result.stderr
    assert "kv-offloading-spec" in result.stderr
