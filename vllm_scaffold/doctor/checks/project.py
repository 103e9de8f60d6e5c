"""What doctor could read of the package: a package whose modules or vLLM entry points it did not find is
reported, so that an empty report always means "read and found nothing wrong"."""

from __future__ import annotations

from vllm_scaffold.doctor.reading.context import Context
from vllm_scaffold.doctor.report.findings import Finding, error, warning


def nothing_read(ctx: Context) -> list[Finding]:
    project = ctx.package.project
    read_from = ", ".join(project.read_from) or "no metadata file"
    findings = []
    if not ctx.package.modules:
        looked = ", ".join(sorted(p.relative_to(project.root).as_posix() for p in project.packages.values()))
        findings.append(
            error(
                "no-modules-read",
                project.name,
                f"doctor found no Python module of {project.name} (import packages: {looked or 'none found'}), "
                "so no check below read its code",
                "declare where the package lives in the build configuration ([tool.setuptools.packages.find] "
                "where, package_dir, [tool.maturin] python-source, [tool.hatch.build.targets.wheel] packages), "
                "or point doctor at the built wheel",
            )
        )
    computed = [reason for reason in project.unread if "entry_points" in reason or "setup(**" in reason]
    if computed and not project.vllm_entry_points:
        findings.append(
            warning(
                "entry-points-unread",
                "setup.py",
                f"{'; '.join(computed)}: doctor reads setup.py without running it, so it cannot tell which vLLM "
                "entry points the package declares, and checked none of them",
                "declare the entry points as a literal (in setup.py, setup.cfg or pyproject.toml), or run doctor "
                "on the built wheel or the installed distribution",
            )
        )
    elif not project.vllm_entry_points and ctx.package.modules:
        findings.append(
            warning(
                "no-vllm-entry-points",
                project.name,
                f"{project.name} declares no entry point in a vllm.* group (read: {read_from}): vLLM never "
                "loads it by itself, only code that imports it does (e.g. kv_connector_module_path)",
                'declare [project.entry-points."vllm.general_plugins"] (or the group of its kind) if vLLM '
                "should load it; nothing to do for a library vLLM reaches by module path",
            )
        )
    return findings
