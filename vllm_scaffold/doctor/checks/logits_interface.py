"""A `vllm.logits_processors` class for only one of the two model runners, on a release that has both.

From 0.31 to 0.33 vLLM has two model runners and which one runs depends on the environment
(vllm/config/vllm.py, `use_v2_model_runner`: `VLLM_USE_V2_MODEL_RUNNER`, else V2 unless Triton is missing or
the configuration uses a feature V2 lacks). Each loads every installed entry point of the group:
- Model Runner V2's loader (vllm/v1/worker/gpu/sample/logits_processor/loader.py) refuses a class that is not a
  subclass of its `LogitsProcessor` with ValueError;
- the V1 runner's loader (vllm/v1/sample/logits_processor/__init__.py) checks nothing: it builds the class
  with (vllm_config, device, is_pin_memory), which V2's `__init__(vllm_config, req_states)` does not take, then
  sorts it by `is_argmax_invariant()`, which V2's interface does not have (state.py), so the engine fails to
  build.
A class for one interface therefore stops every engine wherever the other runner runs: a warning, as doctor
does not know which runner the user's environment picks (the live probe checks this environment's). From 0.34
V2 is the only runner, which `logits-processor-not-v2` checks.
"""

from __future__ import annotations

import ast

from vllm_scaffold.doctor.checks.target import release_check
from vllm_scaffold.doctor.reading.package import Module, PluginPackage
from vllm_scaffold.doctor.reading.source import classes
from vllm_scaffold.doctor.report.findings import Finding
from vllm_scaffold.vllm_facts import ReleaseIndex, facts

GROUP = "vllm.logits_processors"
# the interfaces by their public names, resolved in each release to where it defines them
V1_PUBLIC = "vllm.v1.sample.logits_processor.LogitsProcessor"
V2_PUBLIC = "vllm.v1.worker.gpu.sample.logits_processor.LogitsProcessor"


@release_check("logits-processor-one-runner")
def logits_interfaces(package: PluginPackage, index: ReleaseIndex) -> list[Finding]:
    """Each entry-point class of the group that derives from exactly one runner's interface, where `index`
    has both runners."""
    entry_points = package.entry_points_in(GROUP)
    v1, v2 = index.resolve(V1_PUBLIC), index.resolve(V2_PUBLIC)
    if not entry_points or v1.kind != "class" or v2.kind != "class":
        return []
    runners = (v1.qualname, v2.qualname)
    # a class defined twice (per release, under a find_spec or version test) counts with every definition
    own: dict[str, list[tuple[Module, ast.ClassDef, list[str]]]] = {}
    for module, node, bases in classes(package):
        own.setdefault(f"{module.name}.{node.name}", []).append((module, node, bases))
    findings = []
    for ep in entry_points:
        module_name, _, attr = ep.value.partition(":")
        qualname = f"{module_name.strip()}.{attr.strip()}"
        if qualname not in own:
            continue  # not a class of the plugin's own module: nothing proves what it derives from
        interfaces = _interfaces(qualname, own, index, runners, set())
        if interfaces is None or len(interfaces) != 1:
            continue  # both (an adapter, or one definition per runner), neither, or a base doctor cannot follow
        module, node, _bases = own[qualname][0]
        findings.append(_finding(module, node, ep.name, "V2" if v2.qualname in interfaces else "V1", index))
    return findings


def _interfaces(
    qualname: str,
    own: dict[str, list[tuple[Module, ast.ClassDef, list[str]]]],
    index: ReleaseIndex,
    interfaces: tuple[str, str],
    seen: set[str],
) -> set[str] | None:
    """Which of the two interfaces the plugin class `qualname` derives from (in any of its definitions); None
    when a base is neither the plugin's nor a class the index knows in full."""
    if qualname in seen:
        return set()
    seen.add(qualname)
    found: set[str] = set()
    for module, base in [(module, base) for module, _node, bases in own[qualname] for base in bases]:
        local = base if base in own else f"{module.name}.{base}"
        if local in own:
            inner = _interfaces(local, own, index, interfaces, seen)
            if inner is None:
                return None
            found |= inner
            continue
        symbol = index.resolve(base)
        if symbol.kind != "class":
            return None
        order, complete = index.mro(symbol)
        names = {cls.qualname for cls in order}
        if not complete and not names & set(interfaces):
            return None
        found |= names & set(interfaces)
    return found


def _finding(module: Module, node: ast.ClassDef, name: str, runner: str, index: ReleaseIndex) -> Finding:
    if runner == "V2":
        other = (
            "the V1 runner builds it with (vllm_config, device, is_pin_memory) and calls is_argmax_invariant(), "
            "which V2's interface does not have"
        )
    else:
        other = "Model Runner V2 refuses a class that is not its subclass with ValueError"
    return Finding(
        "logits-processor-one-runner",
        module.where(node),
        f"{node.name}, the `{name}` entry point of {GROUP}, implements only the {runner} runner's interface; "
        f"vLLM {index.version} picks its runner by environment, and every engine fails to start where the other "
        f"runs: {other}. " + facts.holding("model-runner-choice", index.version).claim,
        "to run under both, derive the entry point's class from both interfaces (V2's loader checks the subclass; "
        "V1's builds it with (vllm_config, device, is_pin_memory) and calls the V1 methods); otherwise tell users "
        "to set VLLM_USE_V2_MODEL_RUNNER to the runner it needs",
    )
