"""One doctor run: the static checks, then (when vLLM imports) the live probe, into one Report."""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import Enum
from pathlib import Path
from typing import Any, Literal

from vllm_scaffold import vllm_facts
from vllm_scaffold.doctor import checks
from vllm_scaffold.doctor import inventory as coupling
from vllm_scaffold.doctor.checks import environment as checks_environment
from vllm_scaffold.doctor.checks.target import Check, Target
from vllm_scaffold.doctor.live import probe_ray
from vllm_scaffold.doctor.proof import chain as proof
from vllm_scaffold.doctor.reading import installed
from vllm_scaffold.doctor.reading.collector import collector_paused
from vllm_scaffold.doctor.reading.context import Context
from vllm_scaffold.doctor.reading.installed import InstalledVllm, installed_vllm
from vllm_scaffold.doctor.reading.package import PluginPackage
from vllm_scaffold.doctor.report import suppress
from vllm_scaffold.doctor.report.findings import Finding, LiveProbe, ProbeState, Report
from vllm_scaffold.errors import ScaffoldError
from vllm_scaffold.project.distribution import (
    is_archive,
    project_of,
    read_archive,
    read_installed,
    vllm_plugin_distributions,
)
from vllm_scaffold.vllm_facts import ReleaseIndex

# Every check (`@check` in the modules of doctor/checks/): each declares its codes, and the ones declared
# `every_release` also run for each release `--vllm` names.
CHECKS: tuple[Check, ...] = checks.registered()


class _Unset(Enum):
    """The default of `vllm_plugins`: take VLLM_PLUGINS from the environment (None is "unset")."""

    FROM_ENVIRON = "from the environment"


_UNSET = _Unset.FROM_ENVIRON


def diagnose(target: Path | str, *, environ: Mapping[str, str] | None = None, **options: Any) -> Report:
    """Runs every check on the plugin `target`: a source directory, a wheel or sdist file, or the name of an
    installed distribution. `environ` is the environment vLLM would run in (default: this one); `options` are
    diagnose_package's."""
    environ = dict(os.environ if environ is None else environ)
    with tempfile.TemporaryDirectory(prefix="vllm-scaffold-doctor-") as scratch:
        started = time.perf_counter()
        package = open_package(target, Path(scratch), search_path(environ))
        read = time.perf_counter() - started  # finding and parsing every module
        report = diagnose_package(package, environ=environ, **options)
    report.timings = {"read": read, **report.timings}
    return report


def diagnose_releases(target: Path | str, specs: list[str], *, inventory: bool = False) -> list[Report]:
    """`doctor --vllm`: one report per release in `specs` (versions, wheels or source directories), in that
    order, for the plugin `target` (a directory, a wheel or sdist, or an installed distribution's name); with
    `inventory`, each report holds the plugin's coupling surface across those releases."""
    with tempfile.TemporaryDirectory(prefix="vllm-scaffold-doctor-") as scratch:
        package = open_package(target, Path(scratch), search_path(os.environ))
        loaded: list[tuple[ReleaseIndex, float]] = []
        for spec in specs:
            started = time.perf_counter()
            loaded.append((vllm_facts.release(spec), time.perf_counter() - started))
        indexes = [index for index, _seconds in loaded]
        others = indexes + [vllm_facts.shipped(v) for v in vllm_facts.shipped_versions()]
        reports = []
        for index, seconds in loaded:
            started = time.perf_counter()
            report = Report(package.dist_name, f"{index.distribution} {index.version}", read=what_was_read(package))
            report.live = LiveProbe(ProbeState.OFF, "checked against the release's source index")
            against = Target(package, index, None, lambda: others)
            for check in CHECKS:
                if check.every_release:
                    report.add(check(against))
            report.findings = suppress.apply(package, proof.prove(package, report.findings, index))
            report.timings = {"index": seconds, "static": time.perf_counter() - started}
            reports.append(report)
        if inventory:
            shared = coupling.inventory(package, indexes).as_json()
            for report in reports:
                report.inventory = shared
        return reports


def search_path(environ: Mapping[str, str]) -> list[str]:
    """Where the processes of `environ` find distributions: its PYTHONPATH first, then this sys.path."""
    extra = [p for p in environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return [*extra, *(p for p in sys.path if p not in extra)]


def open_package(target: Path | str, scratch: Path, path: list[str] | None = None) -> PluginPackage:
    """`target` read as a package: a directory, an archive unpacked under `scratch`, or an installed name."""
    candidate = Path(target)
    if candidate.is_dir():
        return PluginPackage.load(candidate)
    if is_archive(candidate):
        project = read_archive(candidate, scratch)
        wheel = candidate.absolute() if candidate.name.endswith(".whl") else None
        return PluginPackage.of(project, install_from=wheel)
    if candidate.exists() or os.sep in str(target) or not str(target).strip():
        raise ScaffoldError(
            f"{target} is neither a plugin directory nor a wheel or sdist",
            "pass a directory holding pyproject.toml or setup.py, a .whl/.tar.gz file, or an installed name",
        )
    return PluginPackage.of(read_installed(str(target), path))


def diagnose_package(
    package: PluginPackage,
    *,
    live: bool | None = None,
    vllm_plugins: str | None | Literal[_Unset.FROM_ENVIRON] = _UNSET,
    environ: Mapping[str, str] | None = None,
    use_cache: bool = True,
    executor: str | None = None,
    inventory: bool = False,
) -> Report:
    """Runs every check on a package already read. `live=None` probes when vLLM is installed (source
    directories and wheels only). `vllm_plugins` defaults to `environ`'s VLLM_PLUGINS. `executor="ray"` also
    runs the plugin under vLLM's Ray executor (see probe_ray). `inventory` adds the plugin's coupling surface,
    read against the installed vLLM (without one, the newest indexed release)."""
    started = time.perf_counter()
    environ = dict(os.environ if environ is None else environ)
    plugins = environ.get("VLLM_PLUGINS") if vllm_plugins is _UNSET else vllm_plugins
    ctx = Context.build(package, plugins, environ)
    report = Report(package=package.dist_name, vllm=_vllm_label(ctx.vllm), read=what_was_read(package))
    report.add(_syntax_errors(package))
    if not ctx.vllm.present:
        report.add([_vllm_not_installed()])
    with collector_paused():
        index = installed.facts() if ctx.vllm.present else None
        target = Target(package, index, ctx, _shipped_indexes)
        for check in CHECKS:
            report.add(check(target))
        if executor == "ray" or "RAY_ADDRESS" in environ:
            report.add(probe_ray.cluster_note(ctx))
    report.timings["static"] = time.perf_counter() - started

    if live is None:
        live = ctx.vllm.present and package.installable
    if not live:
        report.live = LiveProbe(ProbeState.OFF)
    elif not ctx.vllm.present:
        report.live = LiveProbe(ProbeState.SKIPPED, "vLLM is not installed")
    elif not package.installable:
        report.live = LiveProbe(ProbeState.SKIPPED, "the probe installs a source directory or a wheel")
    else:
        from vllm_scaffold.doctor.live.probe import ProbeFailed, live_findings

        probe_started = time.perf_counter()
        try:
            static_places = {(f.code, f.where) for f in report.findings}
            # the probe confirms some static findings (a missing target fails to load too): keep the static one
            report.add([f for f in live_findings(ctx, use_cache=use_cache) if (f.code, f.where) not in static_places])
            report.live = LiveProbe(ProbeState.ON)
        except ProbeFailed as failure:
            report.live = LiveProbe(ProbeState.FAILED, str(failure))
        report.timings["live"] = time.perf_counter() - probe_started
        if executor == "ray":
            report.live = replace(report.live, ray=_ray_probe(report, ctx))
            report.timings["live-ray"] = time.perf_counter() - probe_started - report.timings["live"]
    index = installed.facts() if ctx.vllm.present else None
    report.findings = suppress.apply(package, proof.prove(package, report.findings, index))
    if inventory:
        newest = index or vllm_facts.shipped(vllm_facts.shipped_versions()[-1])
        report.inventory = coupling.inventory(package, [newest]).as_json()
    return report


def _shipped_indexes() -> list[ReleaseIndex]:
    return [vllm_facts.shipped(version) for version in vllm_facts.shipped_versions()]


def _ray_probe(report: Report, ctx: Context) -> str:
    """Runs the Ray probe into `report`; what it did, for the report's live-probe line."""
    from vllm_scaffold.doctor.live.probe import ProbeFailed

    try:
        findings, cluster = probe_ray.ray_findings(ctx)
    except ProbeFailed as failure:
        return f"failed: {failure}"
    report.add(findings)
    return cluster


def _vllm_not_installed() -> Finding:
    return Finding(
        "vllm-not-installed",
        "the environment",
        "vLLM is not installed here, so the checks that compare the plugin with vLLM's own names and APIs "
        "(in-tree CustomOps, quantization methods, KV connectors, models, vllm.* imports, versions, signatures) "
        "and the live probe were skipped",
        "run doctor where the plugin's vLLM is installed for the full check",
    )


@dataclass
class EnvironmentReport:
    """`doctor --installed`: each installed plugin alone, and what goes wrong between them."""

    environment: Report
    packages: list[Report] = field(default_factory=list)

    @property
    def has_error(self) -> bool:
        return self.environment.has_error or any(report.has_error for report in self.packages)

    def as_json(self) -> dict[str, object]:
        return {"environment": self.environment.as_json(), "packages": [r.as_json() for r in self.packages]}


def diagnose_installed(
    *,
    live: bool | None = None,
    vllm_plugins: str | None | Literal[_Unset.FROM_ENVIRON] = _UNSET,
    environ: Mapping[str, str] | None = None,
) -> EnvironmentReport:
    """Every distribution with vLLM entry points in the environment (`environ`'s PYTHONPATH first), each
    checked statically, plus the checks between them; `live=None` calls the platform detectors when vLLM
    is installed."""
    started = time.perf_counter()
    environ = dict(os.environ if environ is None else environ)
    plugins = environ.get("VLLM_PLUGINS") if vllm_plugins is _UNSET else vllm_plugins
    path = search_path(environ)
    packages = [PluginPackage.of(project_of(dist)) for dist in vllm_plugin_distributions(path)]
    # VLLM_PLUGINS is judged once for the environment below, not again inside each package's report
    reports = [diagnose_package(p, live=False, vllm_plugins=None, environ=environ) for p in packages]
    vllm = installed_vllm()
    environment = Report(
        package="installed vLLM plugins", vllm=_vllm_label(vllm), read={"distributions": len(packages)}
    )
    if live is None:
        live = vllm.present
    claims: dict[str, str] | None = None
    if environ.get("VLLM_TARGET_DEVICE") == "cpu":
        claims = {}  # vLLM takes the CPU platform without asking any detector
    elif live:
        detection_env = {k: v for k, v in environ.items() if k != "VLLM_PLUGINS"}
        if plugins is not None:
            detection_env["VLLM_PLUGINS"] = str(plugins)
        claims = checks_environment.detected_platforms(detection_env)
    environment.live = LiveProbe(ProbeState.ON, how="platform detectors called") if live else LiveProbe()
    environment.add(checks_environment.platforms_conflict(packages, claims))
    environment.add(checks_environment.custom_attention_twice(packages))
    environment.add(checks_environment.shared_registry_names(packages))
    environment.add(checks_environment.plugins_drops(packages, plugins))
    environment.timings["static"] = time.perf_counter() - started
    return EnvironmentReport(environment, reports)


def _vllm_label(vllm: InstalledVllm) -> str:
    return f"{vllm.distribution} {vllm.version}" if vllm.present else "no vLLM (not installed)"


def what_was_read(package: PluginPackage) -> dict[str, object]:
    project = package.project
    return {
        "modules": len(package.modules),
        "lines": sum(module.lines for module in package.modules.values()),
        "vllm_entry_points": len(project.vllm_entry_points),
        "read_from": list(project.read_from),
        "packages": {name: _relative(path, project.root) for name, path in project.packages.items()},
    }


def _relative(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)


def _syntax_errors(package: PluginPackage) -> list[Finding]:
    """Modules that do not parse, and files holding the conflict markers of an unresolved `update` (named as
    such: a module with markers does not parse either, and the fix is to resolve the merge)."""
    from vllm_scaffold.project import conflicts

    root = package.project.root
    modules = {module.rel: module for module in package.modules.values()}
    # What update merges: the package's modules, and every file of its base snapshot (docs, README...).
    base = root / ".vllm-scaffold" / "base"
    generated = [p.relative_to(base).as_posix() for p in base.rglob("*") if p.is_file()] if base.is_dir() else []
    marked = conflicts.unresolved(root, sorted(set(modules) | set(generated)))
    findings = [
        Finding(
            "update-conflict-markers",
            f"{relpath}:{line}",
            f"{relpath} holds the conflict markers 'vllm-scaffold update' writes: the merge of your edit and "
            "the template's change is unresolved" + (", and the module does not parse" if relpath in modules else ""),
            f"keep the lines you want between '{conflicts.YOURS_MARKER}' and '{conflicts.TEMPLATE_MARKER}', "
            "delete the markers, and run 'vllm-scaffold update' again",
        )
        for relpath, line in marked.items()
    ]
    return findings + [
        Finding(
            "syntax-error",
            module.rel,
            f"{module.name} does not parse ({module.syntax_error}); no check can read it and vLLM cannot import it",
            "fix the syntax",
        )
        for module in package.modules.values()
        if module.syntax_error and module.rel not in marked
    ]
