"""The catalog files: every key is a declared field of Seam, and every seam is listed under a category."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

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


def test_custom_op_offers_its_ops_as_a_declared_field() -> None:
    assert {"SiluAndMul", "RMSNorm"} <= set(load_catalog()["custom-op"].ops)
