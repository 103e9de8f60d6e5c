"""The catalog files: every key is a declared field of Seam, and every seam is listed under a category."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from vllm_scaffold import vllm_facts
from vllm_scaffold.catalog import CATALOG_DIR, _seam_from_table, load_catalog
from vllm_scaffold.errors import ScaffoldError


def _table(key: str) -> dict[str, object]:
    table = tomllib.loads((CATALOG_DIR / f"{key}.toml").read_text(encoding="utf-8"))
    table.pop("order")
    return table


def test_an_undeclared_key_is_refused_instead_of_kept_aside() -> None:
    with pytest.raises(ScaffoldError, match="general-plugin.toml has an unknown key 'colour'"):
        _seam_from_table(Path("general-plugin.toml"), {**_table("general-plugin"), "colour": "blue"})


def test_a_missing_required_key_is_named() -> None:
    table = _table("scheduler")
    del table["category"]
    with pytest.raises(ScaffoldError, match="scheduler.toml lacks category"):
        _seam_from_table(Path("scheduler.toml"), table)


def test_every_seam_has_a_category_and_categories_group_related_seams() -> None:
    catalog = load_catalog()
    assert all(seam.category for seam in catalog.values())
    assert catalog["attention-backend"].category == catalog["custom-op"].category
    assert catalog["attention-backend"].category != catalog["endpoint"].category


def test_every_templated_seam_offers_a_component_name_of_its_own() -> None:
    """The example `add` gives when it asks for a component's name fits the seam (not one seam's for all)."""
    examples = {seam.key: seam.name_example for seam in load_catalog().values() if seam.template}
    assert all(name and name.isidentifier() and name.islower() for name in examples.values()), examples
    assert len(set(examples.values())) == len(examples), examples
    assert examples["custom-op"] == "fused_silu_mul" and examples["logits-processor"] == "target_token"


def test_custom_op_offers_its_ops_as_a_declared_field() -> None:
    assert {"SiluAndMul", "RMSNorm"} <= set(load_catalog()["custom-op"].ops)


@pytest.mark.parametrize("version", vllm_facts.checked_versions())
def test_catalog_facts_hold_in_every_verified_release(version: str) -> None:
    """The groups a component's entry points go in, and the in-tree classes the catalog names, are there in
    each release's index (the seams' own `group` fields: tests/test_in_tree.py)."""
    index = vllm_facts.shipped(version)
    for seam in load_catalog().values():
        groups = {entry_point.group for entry_point in seam.entry_points}
        assert groups <= set(index.entry_point_groups), (seam.key, version)
        for op, where in seam.ops.items():
            assert index.custom_ops.get(op) == where["registry_name"], (op, version)
            assert index.resolve(f"{where['module']}.{op}").kind == "class", (op, version)
