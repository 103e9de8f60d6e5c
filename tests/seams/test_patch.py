"""The patch template: its target is checked against every declared release, a target a seam covers is
refused, the manifest records the fingerprints, and `add` next to a general plugin wires apply() in."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from seam_helpers import add_into, added, assert_lint_clean, assert_refused, run_package_tests

from tests.helpers import run_cli
from vllm_scaffold import vllm_facts
from vllm_scaffold.catalog import load_catalog
from vllm_scaffold.catalog.covers import covering_seam
from vllm_scaffold.vllm_facts import patch_targets

TARGET = "vllm.config.model:ModelConfig.get_num_layers"


def test_add_records_target_why_remove_when_and_a_fingerprint_per_release(host: Path) -> None:
    add_into(host, "patch", "layers", f"target={TARGET}", "why=count layers", "remove_when=vllm#12345")
    entry = added(host, "patch")[1]
    assert (entry["target"], entry["why"], entry["remove_when"]) == (TARGET, "count layers", "vllm#12345")
    assert set(entry["fingerprints"]) == set(vllm_facts.checked_versions())
    for version, fingerprint in entry["fingerprints"].items():
        facts = patch_targets.describe(vllm_facts.shipped(version), TARGET)
        assert not isinstance(facts, str)
        assert fingerprint == facts.fingerprint() and len(fingerprint["source"]) == 10
    plugin = (host / "src/host/vllm_plugin.py").read_text()
    assert '"host.layers.patch:apply"' in plugin
    module = (host / "src/host/layers/patch.py").read_text()
    assert "def patched_get_num_layers(self: Any, parallel_config: Any) -> Any:" in module
    assert "result = original(self, parallel_config)" in module
    assert_lint_clean(host, "src/host/layers", "tests/test_layers_patch.py")


@pytest.mark.parametrize(
    ("target", "reached_in"),
    [
        ("vllm.model_executor.layers.rotary_embedding:get_rope", "worker"),
        ("vllm.v1.sample.sampler:Sampler.apply_temperature", "worker"),
        ("vllm.v1.sample.sampler:Sampler.forward", "worker"),
        ("vllm.config:ModelConfig.get_vocab_size", "front-end+engine-core+worker"),
    ],
)
def test_new_patch_lints_whatever_the_signature_and_records_where_vllm_calls_it(
    target: str, reached_in: str, tmp_path: Path
) -> None:
    """get_rope's parameters do not fit on a line; the sampler is called in the workers only."""
    answers = ["--data", f"target={target}", "--data", "vllm_range=>=0.32.0,<=0.33.0"]
    done = run_cli("new", "patch", "tweak", "--dest", "tweak", *answers, cwd=tmp_path)
    assert done.exit_code == 0, done.output
    package = tmp_path / "tweak"
    assert_lint_clean(package, ".")
    formatted = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--check", "."], cwd=package, capture_output=True, text=True
    )
    assert formatted.returncode == 0, formatted.stdout + formatted.stderr
    recorded = yaml.safe_load((package / ".vllm-scaffold/patch-tweak.yml").read_text())["answers"]
    assert recorded["reached_in"] == reached_in
    tests = (package / "tests/test_patch_patch.py").read_text()
    assert f"REACHED_IN = {reached_in.split('+')!r}".replace("'", '"') in tests


def test_a_covered_target_is_patched_only_when_the_user_insists(host: Path) -> None:
    target = "vllm.v1.core.sched.scheduler:Scheduler.schedule"
    assert_refused(host, ["patch", "schedule", "--data", f"target={target}"], "use 'vllm-scaffold add scheduler NAME'")
    add_into(host, "patch", "schedule", f"target={target}", "despite_seam=true")
    components = tomllib.loads((host / "pyproject.toml").read_text())["tool"]["vllm-scaffold"]["components"]
    assert components[1]["target"] == target


@pytest.mark.parametrize(
    ("target", "seam"),
    [
        ("vllm.v1.attention.backends.cpu_attn:CPUAttentionBackendImpl.forward", "attention-backend"),
        ("vllm.model_executor.layers.activation:SiluAndMul.forward_native", "custom-op"),
        ("vllm.v1.core.sched.scheduler:Scheduler.schedule", "scheduler"),
        ("vllm.platforms.cpu:CpuPlatform.get_device_name", "platform"),
        ("vllm.model_executor.models.llama:LlamaModel.forward", "model"),
        ("vllm.config.model:ModelConfig.get_vocab_size", None),
        ("vllm.utils.math_utils:cdiv", None),
    ],
)
def test_covers_names_the_seam_of_in_tree_code(target: str, seam: str | None) -> None:
    found = covering_seam(vllm_facts.shipped(vllm_facts.checked_versions()[-1]), target)
    assert (found[0].key if found else None) == seam


def test_every_covers_entry_resolves_in_a_shipped_release_and_each_seam_covers_something_in_each() -> None:
    """A seam names what it covers under each name it has had (vLLM 0.34 removed the V1 logits-processor
    interface, for example): each entry resolves where it exists, and in every release one of them does."""
    indexes = {version: vllm_facts.shipped(version) for version in vllm_facts.shipped_versions()}
    for seam in load_catalog().values():
        found: dict[str, set[str]] = {version: set() for version in indexes}
        for entry in seam.covers:
            module, _, name = entry.partition(":")
            for version, index in indexes.items():
                symbol = index.resolve(f"{module}.{name}" if name else module)
                if symbol.kind in {"class", "function", "module"}:
                    assert not name or symbol.qualname == f"{module}.{name}", (version, entry, symbol)
                    found[version].add(entry)
            assert any(entry in names for names in found.values()), (seam.key, entry, "in no shipped release")
        if seam.covers:
            assert all(found.values()), (seam.key, {v: sorted(n) for v, n in found.items()})


def test_the_source_hash_ignores_docstrings_comments_and_layout() -> None:
    import ast

    from vllm_scaffold.vllm_facts.build import source_hash

    one = ast.parse('def f(a):\n    """Doc."""\n    return a  # note\n').body[0]
    two = ast.parse("def f(a):\n\n    return (a)\n").body[0]
    three = ast.parse("def f(a):\n    return a + 1\n").body[0]
    assert isinstance(one, ast.FunctionDef) and isinstance(two, ast.FunctionDef) and isinstance(three, ast.FunctionDef)
    assert source_hash(one) == source_hash(two) != source_hash(three)


@pytest.mark.engine
def test_host_with_both_components_passes_its_tests(host: Path, tmp_path: Path) -> None:
    add_into(host, "patch", "vocab")
    run_package_tests(host, tmp_path / "cache", "tests/test_vllm_plugin.py", "tests/test_vocab_patch.py")
