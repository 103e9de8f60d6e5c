"""scripts/adopt_release.py, the one command that adopts a vLLM release: its parts on data small enough to read.

The whole command builds an index from a 240 MB wheel (minutes); its report for 0.34.0 is docs/releases/0.34.0.md.
Here each part runs on what it reads: a facts file of two facts against sources given as text, and the shipped
indexes of two releases.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from vllm_scaffold import vllm_facts
from vllm_scaffold.vllm_facts import facts, store

SCRIPT = Path(__file__).parents[1] / "scripts" / "adopt_release.py"


@pytest.fixture(scope="module")
def adopt():
    spec = importlib.util.spec_from_file_location("adopt_release", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["adopt_release"] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("adopt_release", None)


FACTS = """\
[kept]
[[kept.holds]]
releases = ["0.32.0", "0.33.0"]
claim = "Kept."
evidence = [
    { file = "vllm/a.py", anchor = "def kept():\\nreturn 1" },
    { file = "vllm/a.py", absent = "removed_thing" },
]

[moved]
[[moved.holds]]
releases = ["0.33.0"]
claim = "Moved."
evidence = [{ file = "vllm/b.py", anchor = "moved_call()" }]
"""


def test_facts_whose_anchors_hold_are_carried_and_the_others_listed(adopt, tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "facts.toml"
    path.write_text(FACTS, encoding="utf-8")
    monkeypatch.setattr(facts, "FACTS", path)
    facts.facts.cache_clear()
    sources = {"vllm/a.py": "def kept():\n    return 1\n", "vllm/b.py": "other_call()\n"}
    try:
        carried, broken = adopt.carry_facts("0.34.0", "0.33.0", sources.get)
        assert carried == ["kept"]
        assert broken == {"moved": ["vllm/b.py: anchor 'moved_call()' is gone"]}
        text = path.read_text(encoding="utf-8")
        assert 'releases = ["0.32.0", "0.33.0", "0.34.0"]' in text and 'releases = ["0.33.0"]' in text
        assert text.count("\n") == FACTS.count("\n"), "the file keeps its layout"
    finally:
        facts.facts.cache_clear()


def test_registries_new_in_a_release_are_listed(adopt) -> None:
    lines = adopt.registry_diff(store.shipped("0.33.0"), store.shipped("0.34.0"))
    point = "vllm.v1.worker.gpu.spec_decode.speculator_config.register_speculative_method"
    assert f"- new registration point `{point}`" in lines
    assert any(line.startswith("- changed entry-point group `vllm.logits_processors`") for line in lines)


def test_migrate_moves_between_two_releases_are_listed(adopt) -> None:
    moves, _renamed, gone = adopt.migrate_moves(store.shipped("0.32.0"), store.shipped("0.33.0"))
    assert (
        "- `vllm.utils.torch_utils.is_quantized_kv_cache` -> `vllm.v1.kv_cache_interface.is_quantized_kv_cache`"
        in moves
    )
    assert not any("is_quantized_kv_cache" in name for name in gone)


def test_parser_names_new_in_a_release_are_listed(adopt) -> None:
    old, new = store.shipped("0.33.0"), store.shipped("0.34.0")
    lines = adopt.parser_diff(old, new)
    assert "- new in-tree tool parser `zaya_xml`" in lines and "- new in-tree reasoning parser `zaya`" in lines
    assert "- removed in-tree tool parser `musespark1x`" in lines
    gone = vllm_facts.ReleaseIndex({**new.data, "parsers": {"tool": sorted(new.tool_parsers or ())}})
    assert adopt.parser_diff(old, gone)[-1].startswith("- no reasoning parser table found")
