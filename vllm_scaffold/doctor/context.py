"""What every check reads: the package, the installed vLLM, the installed plugins, the VLLM_PLUGINS value."""

from __future__ import annotations

from dataclasses import dataclass, field

from vllm_scaffold.doctor.installed import InstalledEntryPoint, InstalledVllm, installed_entry_points, installed_vllm
from vllm_scaffold.doctor.package import PluginPackage


@dataclass
class Context:
    package: PluginPackage
    vllm: InstalledVllm
    vllm_plugins: str | None  # VLLM_PLUGINS as the user's processes will see it; None when unset
    others: list[InstalledEntryPoint] = field(default_factory=list)  # other distributions' vllm.* entry points

    @classmethod
    def build(cls, package: PluginPackage, vllm_plugins: str | None) -> Context:
        return cls(package, installed_vllm(), vllm_plugins, installed_entry_points(exclude_dist=package.dist_name))
