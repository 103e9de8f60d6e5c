"""Static checks on what the package says about itself: its components are registered, its vLLM range parses.

The `[tool.vllm-scaffold]` manifest lists the package's components with their seam and module; each seam
reaches vLLM either through an entry-point group or through a registration run by the general plugin (the
catalog says which). A component whose path is broken is silently absent from every vLLM process.
"""

from __future__ import annotations

import ast

from vllm_scaffold.doctor.checks.target import Target, check
from vllm_scaffold.doctor.reading import installed as vllm_facts
from vllm_scaffold.doctor.reading.source import reached_modules, string_constants
from vllm_scaffold.doctor.report.findings import Finding
from vllm_scaffold.vllm_facts import example_range

MANIFEST = "pyproject.toml [[tool.vllm-scaffold.components]]"


def _inside(module: str, component: str) -> bool:
    return module == component or module.startswith(component + ".")


@check("component-not-registered")
def components_registered(target: Target) -> list[Finding]:
    """Each manifest component is reached by vLLM: its entry point exists, or a general plugin reaches it."""
    ctx = target.environment
    from vllm_scaffold.catalog import load_catalog

    catalog = load_catalog()
    general = [ep.module for ep in ctx.package.entry_points_in(vllm_facts.GENERAL)]
    reached = reached_modules(ctx.package, general) if general else set()
    findings = []
    for component in ctx.package.manifest.get("components", []):
        if not isinstance(component, dict) or component.get("seam") not in catalog:
            continue
        seam = catalog[component["seam"]]
        module = str(component.get("module") or str(component.get("object", "")).partition(":")[0])
        label = f"component {component.get('name', module)} ({seam.key})"
        where = f"{MANIFEST} {component.get('name', module)}"
        if seam.entry_points:
            groups = sorted({ep.group for ep in seam.entry_points})
            if not any(_inside(ep.module, module) for group in groups for ep in ctx.package.entry_points_in(group)):
                findings.append(
                    Finding(
                        "component-not-registered",
                        where,
                        f"{label} is listed in the manifest, but no {' or '.join(groups)} entry point points "
                        f"into {module}: vLLM never loads it",
                        f'declare it under [project.entry-points."{groups[0]}"] (vllm-scaffold add writes it)',
                    )
                )
        elif seam.registration and not general:
            findings.append(
                Finding(
                    "component-not-registered",
                    where,
                    f"{label} registers through the general plugin, and the package declares no "
                    "vllm.general_plugins entry point: vLLM never runs its registration",
                    'declare the general plugin under [project.entry-points."vllm.general_plugins"] (the '
                    "module holding COMPONENT_REGISTRATIONS, e.g. pkg.vllm_plugin:register)",
                )
            )
        elif seam.registration and not any(_inside(name, module) for name in reached):
            findings.append(
                Finding(
                    "component-not-registered",
                    where,
                    f"{label} is listed in the manifest, but nothing the general plugin runs reaches {module} "
                    "(its line in COMPONENT_REGISTRATIONS is gone?): it never registers with vLLM",
                    f"call its registration from the general plugin (add {_registration_target(seam, component)} "
                    "to COMPONENT_REGISTRATIONS)",
                )
            )
    return findings


def _registration_target(seam, component: dict) -> str:
    """The "pkg.module.file:register" line the catalog says a component of `seam` registers through, filled from
    the manifest entry, or a description of one when the entry does not say enough to fill it."""
    module = str(component.get("module", ""))
    package, _, subpackage = module.partition(".")
    try:
        return '"' + seam.registration.format(package=package, module=subpackage) + '"'
    except (KeyError, IndexError, ValueError):
        return f"the register function of {module or 'the component'}, as 'module:function'"


@check("vllm-range-invalid")
def version_specifiers(target: Target) -> list[Finding]:
    """The manifest's `vllm` range and SUPPORTED_VLLM constants must be valid PEP 440 specifiers."""
    ctx = target.environment
    try:
        from packaging.specifiers import InvalidSpecifier, SpecifierSet
    except ImportError:  # packaging comes with pip and vLLM; without it the range cannot be read
        return []

    def invalid(value: str) -> bool:
        try:
            SpecifierSet(value)
        except InvalidSpecifier:
            return True
        return False

    findings = []
    declared = ctx.package.manifest.get("vllm")
    if isinstance(declared, str) and invalid(declared):
        findings.append(
            Finding(
                "vllm-range-invalid",
                "pyproject.toml [tool.vllm-scaffold] vllm",
                f"'{declared}' is not a valid version specifier: the vLLM range the package declares cannot be "
                "compared with any vLLM (doctor, add and the version check all read it)",
                f"write a PEP 440 specifier such as '{example_range()}' (commas between clauses, no spaces inside "
                "versions)",
            )
        )
    for module in ctx.package.parsed():
        value = string_constants(module).get("SUPPORTED_VLLM")
        if value is None or not invalid(value):
            continue
        for stmt in module.tree.body:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]
            if any(isinstance(t, ast.Name) and t.id == "SUPPORTED_VLLM" for t in targets):
                findings.append(
                    Finding(
                        "vllm-range-invalid",
                        module.where(stmt),
                        f"SUPPORTED_VLLM = '{value}' is not a valid version specifier: SpecifierSet raises "
                        "InvalidSpecifier, so the version check register() runs raises in every vLLM process",
                        f"write a PEP 440 specifier such as '{example_range()}', the same as [tool.vllm-scaffold] vllm",
                    )
                )
    return findings
