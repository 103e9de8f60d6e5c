"""What every check reads: the package, the installed vLLM, the installed plugins, the VLLM_PLUGINS value."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from vllm_scaffold.doctor.reading.installed import (
    InstalledEntryPoint,
    InstalledVllm,
    installed_entry_points,
    installed_vllm,
)
from vllm_scaffold.doctor.reading.package import PluginPackage


@dataclass
class Context:
    package: PluginPackage
    vllm: InstalledVllm
    vllm_plugins: str | None  # VLLM_PLUGINS as the user's processes will see it; None when unset
    environ: Mapping[str, str]  # the environment vLLM's processes would start with
    others: list[InstalledEntryPoint] = field(default_factory=list)  # other distributions' vllm.* entry points

    @classmethod
    def build(cls, package: PluginPackage, vllm_plugins: str | None, environ: Mapping[str, str]) -> Context:
        others = installed_entry_points(exclude_dist=package.dist_name, pythonpath=environ.get("PYTHONPATH"))
        return cls(package, installed_vllm(), vllm_plugins, environ, others)
