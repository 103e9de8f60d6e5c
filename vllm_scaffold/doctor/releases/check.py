"""`doctor --vllm VERSION`: a plugin's use of vLLM checked against a release that is not installed.

The plugin's source is read as ASTs and every use of vLLM is looked up in the release's index
(`vllm_scaffold.vllm_facts`): imports at any depth (those under `if TYPE_CHECKING:` never run and are
skipped; those in `try/except ImportError` or under a version or `hasattr` test are reported as info, since
the plugin handles them but a feature silently switches off), attributes read from imported vLLM names,
classes derived from vLLM classes (abstract methods the release requires, overrides of members the release
no longer has, `super()` calls into missing members, override signatures the release cannot call), calls
into vLLM functions and constructors, and `"vllm.x.y"` strings such as class paths.

Each kind of use has its module; this one reads the plugin's classes once (`PluginClasses`) and runs them all.
"""

from __future__ import annotations

import ast

from vllm_scaffold.doctor.reading.callers import CallSites
from vllm_scaffold.doctor.reading.package import Module, PluginPackage
from vllm_scaffold.doctor.releases.abstract import check_abstract, declares_abstract
from vllm_scaffold.doctor.releases.attributes import check_attributes, check_self_attributes, check_super_calls
from vllm_scaffold.doctor.releases.calls import check_calls
from vllm_scaffold.doctor.releases.classes import PluginClasses
from vllm_scaffold.doctor.releases.findings import Findings
from vllm_scaffold.doctor.releases.imports import check_imports
from vllm_scaffold.doctor.releases.logits import check_logits_processor_interfaces
from vllm_scaffold.doctor.releases.monkeypatches import check_monkeypatches
from vllm_scaffold.doctor.releases.override_callers import OverrideCallers
from vllm_scaffold.doctor.releases.overrides import check_overrides
from vllm_scaffold.doctor.releases.patches import check_patches
from vllm_scaffold.doctor.releases.places import Place
from vllm_scaffold.doctor.releases.release import Others, Release
from vllm_scaffold.doctor.releases.routes import check_endpoint_routes
from vllm_scaffold.doctor.releases.strings import check_dotted_strings, check_environment_variables
from vllm_scaffold.doctor.report.findings import Finding
from vllm_scaffold.vllm_facts import ReleaseIndex

# The codes of these modules (their severities, summaries and examples are in codes.toml, section "Across
# releases"); an import the release lacks is reported with the installed-vLLM check's codes.
SECTION = "Across releases (`--vllm`)"
_MODULE_CHECKS = (
    check_imports,
    check_attributes,
    check_calls,
    check_dotted_strings,
    check_environment_variables,
    check_monkeypatches,
)


def _check_subclasses(classes: PluginClasses, out: Findings) -> None:
    """Each plugin class deriving from vLLM classes: abstract methods, overrides, super() and self. reads."""
    for qualname, (module, node) in classes.classes.items():
        members, bases = classes.lineage(qualname)
        if not bases:
            continue
        if qualname not in classes.subclassed and not declares_abstract(node):
            check_abstract(classes, out, Place.unguarded(module, node), node, members, bases)
        check_overrides(classes, out, module, node, bases)
        check_super_calls(classes, out, module, node, bases)
        check_self_attributes(classes, out, module, node)


def check(
    package: PluginPackage,
    index: ReleaseIndex,
    others: Others,
    sites: CallSites | None = None,
    installed: bool = True,
) -> list[Finding]:
    """Every finding of `package` against the release `index`; `others` are the other indexed releases, to
    tell an override of a removed member from a method of the plugin's own. With `sites` (the call sites of
    the release `index` is) an override vLLM cannot reach is not reported. `installed` False (a `--vllm` run)
    reports an override that only the plugin's own code keeps vLLM's calls from as a warning naming that link,
    and judges declared patches by the release's signatures; the run against the installed vLLM keeps doing
    what it always did (no finding; patches judged by vLLM's calls)."""
    classes = PluginClasses(package, Release(index, others))
    out = Findings(classes, OverrideCallers(classes, sites, lineage=not installed, bypass_is_unproven=not installed))
    for module in package.parsed():
        for check_module in _MODULE_CHECKS:
            check_module(classes, out, module)
    _check_subclasses(classes, out)
    check_logits_processor_interfaces(classes, out)
    check_endpoint_routes(classes, out)
    out.found += check_patches(package, index, sites if installed else None)
    if sites is not None:
        sites.save()
    return out.found


def with_tests(package: PluginPackage) -> PluginPackage:
    """The package plus its tests/ modules: generated tests reach into vLLM too, and must hold on every
    release the package declares."""
    tests = package.root / "tests"
    for path in sorted(tests.rglob("*.py")) if tests.is_dir() else ():
        rel = path.relative_to(package.root).as_posix()
        name = rel[: -len(".py")].replace("/", ".")
        try:
            tree: ast.Module | None = ast.parse(path.read_text(encoding="utf-8"))
        except SyntaxError:
            tree = None
        package.modules.setdefault(name, Module(name, path, rel, path.name == "__init__.py", tree))
    return package
