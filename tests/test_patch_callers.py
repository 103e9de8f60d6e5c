"""Where vLLM calls the code a patch wraps (vllm_facts/patch_callers.toml): every entry's call sites are in the
sources of every release it names, its code is imported only where it says, and a patch's `reached_in`
default and slow-test engine arguments come from it."""

from __future__ import annotations

import pytest

from scripts import facts_docs
from vllm_scaffold import vllm_facts
from vllm_scaffold.errors import ScaffoldError
from vllm_scaffold.generate.rendering import patch_engine_args, patch_reached_in
from vllm_scaffold.vllm_facts import facts, patch_targets

ENTRIES = patch_targets.callers()
FAMILIES = {"front-end", "engine-core", "worker"}
RANGE = ">=0.32.0,<=0.33.0"


def _sources(version: str) -> facts.Sources:
    try:
        return facts.release_sources(version, facts_docs.trees())
    except ScaffoldError as error:
        pytest.skip(f"the sources of vLLM {version} are not at hand: {error}")


@pytest.mark.parametrize("entry", ENTRIES, ids=[entry.code for entry in ENTRIES])
def test_every_call_site_is_in_every_release_named(entry: patch_targets.Callers) -> None:
    assert set(entry.reached_in.split("+")) <= FAMILIES, entry.reached_in
    assert entry.evidence, f"{entry.code} names no call site"
    for version in entry.releases:
        sources = _sources(version)
        for evidence in entry.evidence:
            text = sources(evidence.file)
            assert text is not None, (version, evidence.file)
            assert facts.locate(text, evidence.text), (version, evidence.file, evidence.text)


@pytest.mark.parametrize("entry", [e for e in ENTRIES if e.importers], ids=lambda e: e.code)
def test_a_modules_code_is_imported_only_where_the_entry_says(entry: patch_targets.Callers) -> None:
    module = entry.code.partition(":")[0]
    for version in entry.releases:
        index = vllm_facts.shipped(version)
        outside = sorted(
            importer
            for importer, found in index.modules.items()
            if not _under(importer, (module,))
            and any(_under(target, (module,)) for target in found.get("i", {}).values())
            and not _under(importer, entry.importers)
        )
        assert not outside, f"vLLM {version}: {outside} import {module}, outside {entry.importers}"


def _under(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == prefix or name.startswith(f"{prefix}.") for prefix in prefixes)


@pytest.mark.parametrize(
    ("target", "reached_in", "engine_args"),
    [
        ("vllm.v1.sample.sampler:Sampler.apply_temperature", "worker", {}),
        ("vllm.v1.sample.sampler:Sampler.forward", "worker", {}),
        ("vllm.model_executor.layers.rotary_embedding:get_rope", "worker", {}),
        ("vllm.v1.worker.gpu_model_runner:GPUModelRunner.execute_model", "worker", {}),
        (
            "vllm.config:ModelConfig.get_vocab_size",  # re-exported: the definition decides
            "front-end+engine-core+worker",
            {"disable_log_stats": False, "enable_mfu_metrics": True},
        ),
        ("vllm.utils.math_utils:cdiv", patch_targets.EVERY_FAMILY, {}),
    ],
)
def test_reached_in_defaults_to_where_vllm_calls_the_target(
    target: str, reached_in: str, engine_args: dict[str, object]
) -> None:
    assert patch_reached_in(target, RANGE) == reached_in
    assert patch_engine_args(target, RANGE) == engine_args


def test_a_release_an_entry_does_not_name_gets_the_default() -> None:
    entry = next(e for e in ENTRIES if e.code == "vllm.v1.sample.sampler")
    found = {"9.9.9": patch_targets.TargetFacts("method", "self", "", "vllm.v1.sample.sampler.Sampler.forward")}
    assert entry.holds("vllm.v1.sample.sampler.Sampler.forward")
    assert patch_targets.callers_of(found) is None


def test_a_target_no_release_has_gets_the_default_without_an_error() -> None:
    assert patch_reached_in("vllm.no_such_module:f", RANGE) == patch_targets.EVERY_FAMILY
