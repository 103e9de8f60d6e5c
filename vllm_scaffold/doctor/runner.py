"""One doctor run: the static checks, then (when vLLM imports) the live probe, into one Report."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from vllm_scaffold.doctor import checks_code, checks_manifest, checks_metadata, suppress
from vllm_scaffold.doctor.context import Context
from vllm_scaffold.doctor.findings import Finding, Report
from vllm_scaffold.doctor.package import PluginPackage

StaticCheck = Callable[[Context], list[Finding]]

STATIC_CHECKS: tuple[StaticCheck, ...] = (
    checks_metadata.entry_point_groups,
    checks_metadata.entry_point_targets,
    checks_metadata.vllm_plugins_value,
    checks_metadata.endpoint_enabled,
    checks_metadata.vllm_version,
    checks_code.registration_timing,
    checks_code.attention,
    checks_code.attention_custom_claims,
    checks_code.logits_argmax_masks,
    checks_code.quantization_names,
    checks_code.linear_kernel_kinds,
    checks_code.custom_ops,
    checks_code.kv_connector_names,
    checks_code.model_architectures,
    checks_code.schedulers,
    checks_code.platform_detectors,
    checks_code.general_plugin_side_effects,
    checks_code.io_processor_names,
    checks_code.vllm_imports,
    checks_manifest.components_registered,
    checks_manifest.version_specifiers,
)

_UNSET = object()


def diagnose(
    root: Path,
    *,
    live: bool | None = None,
    vllm_plugins: str | None | object = _UNSET,
    environ: Mapping[str, str] | None = None,
    use_cache: bool = True,
) -> Report:
    """Runs every check on the package at `root`. `live=None` probes when vLLM is installed. `environ` is the
    environment vLLM would run in (default: this one); `vllm_plugins` defaults to its VLLM_PLUGINS."""
    started = time.perf_counter()
    package = PluginPackage.load(root)
    environ = dict(os.environ if environ is None else environ)
    plugins = environ.get("VLLM_PLUGINS") if vllm_plugins is _UNSET else vllm_plugins
    ctx = Context.build(package, plugins, environ)  # type: ignore[arg-type]
    vllm = f"{ctx.vllm.distribution} {ctx.vllm.version}" if ctx.vllm.present else "no vLLM (not installed)"
    report = Report(package=package.dist_name, vllm=vllm)
    report.add(_syntax_errors(package))
    if not ctx.vllm.present:
        report.add([_vllm_not_installed()])
    for check in STATIC_CHECKS:
        report.add(check(ctx))
    report.timings["static"] = time.perf_counter() - started

    if live is None:
        live = ctx.vllm.present
    if not live:
        report.live = "off"
    elif not ctx.vllm.present:
        report.live = "skipped: vLLM is not installed"
    else:
        from vllm_scaffold.doctor.probe import ProbeFailed, live_findings

        probe_started = time.perf_counter()
        try:
            static_places = {(f.code, f.where) for f in report.findings}
            # the probe confirms some static findings (a missing target fails to load too): keep the static one
            report.add([f for f in live_findings(ctx, use_cache=use_cache) if (f.code, f.where) not in static_places])
            report.live = "on"
        except ProbeFailed as failure:
            report.live = f"failed: {failure}"
        report.timings["live"] = time.perf_counter() - probe_started
    report.findings = suppress.apply(package, report.findings)
    return report


def _vllm_not_installed() -> Finding:
    from vllm_scaffold.doctor.findings import info

    return info(
        "vllm-not-installed",
        "the environment",
        "vLLM is not installed here, so the checks that compare the plugin with vLLM's own names and APIs "
        "(in-tree CustomOps, quantization methods, KV connectors, models, vllm.* imports, versions, signatures) "
        "and the live probe were skipped",
        "run doctor where the plugin's vLLM is installed for the full check",
    )


def _syntax_errors(package: PluginPackage) -> list[Finding]:
    from vllm_scaffold.doctor.findings import error

    return [
        error(
            "syntax-error",
            module.rel,
            f"{module.name} does not parse ({module.syntax_error}); no check can read it and vLLM cannot import it",
            "fix the syntax",
        )
        for module in package.modules.values()
        if module.syntax_error
    ]
