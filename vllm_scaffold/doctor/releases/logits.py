"""Logits processors across releases: an entry point of `vllm.logits_processors` whose class derives from the V1
runner's interface (gone in 0.34) or from no LogitsProcessor at all, on a release whose only runner is Model
Runner V2."""

from __future__ import annotations

from vllm_scaffold.doctor.releases.classes import PluginClasses
from vllm_scaffold.doctor.releases.findings import Findings
from vllm_scaffold.doctor.releases.places import Place
from vllm_scaffold.vllm_facts import facts

# The logits-processor interfaces: the V1 runner's (gone in 0.34) and Model Runner V2's.
LOGITS_GROUP = "vllm.logits_processors"
V1_LOGITS_MODULE = "vllm.v1.sample.logits_processor"
V2_LOGITS_BASE = "vllm.v1.worker.gpu.sample.logits_processor.interface.LogitsProcessor"
V2_LOGITS_PUBLIC = "vllm.v1.worker.gpu.sample.logits_processor.LogitsProcessor"
V1_LOGITS_FIX = (
    f"derive the processor from {V2_LOGITS_PUBLIC} (Model Runner V2's interface: __init__(vllm_config, req_states), "
    "add_request, apply(logits, ctx)); keep the V1 class only for releases before 0.34, behind "
    f'`importlib.util.find_spec("{V1_LOGITS_MODULE}")`'
)


def check_logits_processor_interfaces(classes: PluginClasses, out: Findings) -> None:
    """On a release whose only runner is Model Runner V2, an entry point of `vllm.logits_processors` whose class
    does not derive from V2's `LogitsProcessor`: the loader refuses it and no engine starts. (Where the V1
    runner exists too, which of the two loads the class depends on the platform: the live probe checks it.)"""
    index = classes.index
    if index.has_module(V1_LOGITS_MODULE) or not index.resolve(V2_LOGITS_BASE).exists:
        return
    for ep in classes.package.entry_points_in(LOGITS_GROUP):
        qualname = classes.entry_class(ep.value)
        if qualname is None:
            continue  # not a class of the plugin's own: nothing proves what it derives from
        module, node = classes.classes[qualname]
        names = classes.base_names(qualname)
        if names is None or any(_is_v2_logits(classes, name) for name in names):
            continue
        v1 = [name for name in names if name.startswith(V1_LOGITS_MODULE)]
        derives = (
            f"derives from {v1[0]}, the V1 runner's interface, which {classes.release.label} removed"
            if v1
            else ("derives from no LogitsProcessor base")
        )
        out.report(
            "logits-processor-not-v2",
            Place.unguarded(module, node),
            f"{node.name}, the `{ep.name}` entry point of {LOGITS_GROUP}, {derives}. "
            + facts.fact("logits-v1-interface-removed").text(),
            V1_LOGITS_FIX,
        )


def _is_v2_logits(classes: PluginClasses, name: str) -> bool:
    symbol = classes.index.resolve(name)
    if symbol.kind != "class":
        return False
    return any(cls.qualname == V2_LOGITS_BASE for cls in classes.index.mro(symbol)[0])
