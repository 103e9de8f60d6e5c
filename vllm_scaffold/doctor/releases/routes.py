"""An endpoint plugin's route on one of vLLM's own paths, on a release where vLLM's route wins."""

from __future__ import annotations

from vllm_scaffold import vllm_facts
from vllm_scaffold.doctor.reading.installed import ENDPOINT
from vllm_scaffold.doctor.releases.classes import PluginClasses
from vllm_scaffold.doctor.releases.findings import Findings
from vllm_scaffold.doctor.releases.places import Place
from vllm_scaffold.vllm_facts import facts
from vllm_scaffold.vllm_facts.routes import declared_routes


def check_endpoint_routes(classes: PluginClasses, out: Findings) -> None:
    index = classes.index
    core = set(index.registry("http_routes"))
    if not core or vllm_facts.endpoint_routes_replace_core(index.version):
        return
    if not classes.package.entry_points_in(ENDPOINT):
        return
    for module in classes.package.parsed():
        if module.tree is None or module.rel.startswith("tests/"):
            continue
        for route, node in declared_routes(module.tree):
            if route in core:
                out.report(
                    "vllm-endpoint-route-shadowed",
                    Place.unguarded(module, node),
                    f"{route} is also a route of {classes.release.label}'s own server. "
                    + facts.fact("endpoint-route-order").text(),
                    "serve it under a path of the plugin's own, or declare a vLLM range from "
                    + vllm_facts.endpoint_routes_replace_core_from(),
                )
