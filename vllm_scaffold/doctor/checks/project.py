"""What doctor could read of the package, and what the distribution installs besides its modules: a package
whose modules or vLLM entry points it did not find is reported, so that an empty report always means "read and
found nothing wrong"; a `.pth` file that runs code is reported."""

from __future__ import annotations

from vllm_scaffold.doctor.checks.target import Target, check
from vllm_scaffold.doctor.report.findings import Finding
from vllm_scaffold.vllm_facts import facts


@check("entry-points-unread", "no-modules-read", "no-vllm-entry-points")
def nothing_read(target: Target) -> list[Finding]:
    ctx = target.environment
    project = ctx.package.project
    read_from = ", ".join(project.read_from) or "no metadata file"
    findings = []
    if not ctx.package.modules:
        looked = ", ".join(sorted(p.relative_to(project.root).as_posix() for p in project.packages.values()))
        findings.append(
            Finding(
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
            Finding(
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
            Finding(
                "no-vllm-entry-points",
                project.name,
                f"{project.name} declares no entry point in a vllm.* group (read: {read_from}): only code that "
                "imports it, or a name given in an option, reaches it. "
                + facts.fact("entry-point-groups").text()
                + " "
                + facts.fact("classes-loaded-by-name").text(),
                'declare [project.entry-points."vllm.general_plugins"] (or the group of its kind) if vLLM '
                "should load it; nothing to do for a library vLLM reaches by module path",
            )
        )
    return findings


@check("pth-runs-code")
def pth_files(target: Target) -> list[Finding]:
    """A `.pth` file the distribution installs into site-packages runs its `import` lines in every Python
    process of the environment (Python's site module executes each line that starts with "import " or
    "import\\t"; every other line is a path)."""
    ctx = target.environment
    project = ctx.package.project
    findings = []
    for relative in project.pth_files:
        path = project.root / relative
        text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.startswith(("import ", "import\t")):
                continue
            findings.append(
                Finding(
                    "pth-runs-code",
                    f"{relative}:{number}",
                    f"{relative} is installed into site-packages, so Python runs its line {number} "
                    f"(`{line.strip()[:120]}`) at the start of every Python process of the environment, vLLM or "
                    "not: what it changes there applies to every program",
                    "ship no code in a .pth file: do the set-up in the plugin's register() (vLLM calls it in "
                    "each of its processes) or where the plugin's own code is imported; keep path lines only",
                )
            )
    return findings
