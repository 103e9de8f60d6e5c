"""The README and docs keep up with the catalog, and CI runs the README's test command."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_scaffold.catalog import load_catalog

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("key", list(load_catalog()))
def test_readme_seam_table_names_every_seam(key: str) -> None:
    assert f"| `{key}` |" in README


@pytest.mark.parametrize("key", [seam.key for seam in load_catalog().values() if seam.has_template])
def test_every_templated_seam_has_a_docs_page(key: str) -> None:
    assert (ROOT / "docs" / "seams" / f"{key}.md").is_file()


def test_ci_runs_the_readme_test_command() -> None:
    assert "bash scripts/test.sh\n" in README
    assert "bash scripts/test.sh" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_readme_lists_the_pickers_categories_in_its_order() -> None:
    from vllm_scaffold.terminal.seam_picker import SeamPicker

    shown = list(dict.fromkeys(seam.category for seam in SeamPicker("", list(load_catalog().values()), {}).seams))
    prose = " ".join(README.split())
    listed = prose.split("It lists every seam of the catalog under its category (", 1)[1].split(")", 1)[0]
    assert [category.lower() for category in listed.split("; ")] == [category.lower() for category in shown]
