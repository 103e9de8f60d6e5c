"""The patches a package declares (`patch` components in its manifest) checked against one release.

Each patch records its target and, per release it was written for, a fingerprint: the target's signature
and a hash of its source (`vllm_facts.patch_targets`). Against a release, the target must still exist and be
patchable (else `patch-target-missing`); vLLM's own calls of the release's target must still bind the
wrapper's parameters (else `patch-signature-changed`: the wrapper would raise a TypeError at those calls,
or the run-time check refuses to apply it); and a target whose source differs from the fingerprint wants a
review (`patch-source-changed`). The fingerprint compared is the release's own when the patch records one,
else the newest recorded (the one the wrapper was written for).

With the installed vLLM's call sites (`CallSites`), a changed signature is reported at the first vLLM call
that passes what the wrapper does not take; without them (a release that is not installed), the release's
signature is compared with the wrapper's by the override rule: whatever vLLM may pass must be accepted.
"""

from __future__ import annotations

from vllm_scaffold.doctor.reading.callers import CallSites
from vllm_scaffold.doctor.reading.package import PluginPackage
from vllm_scaffold.doctor.releases.signatures import call_problem, override_problem
from vllm_scaffold.doctor.report.codes import severity_of
from vllm_scaffold.doctor.report.findings import Finding, Severity
from vllm_scaffold.vllm_facts import ReleaseIndex, Signature
from vllm_scaffold.vllm_facts.patch_targets import describe, shape
from vllm_scaffold.vllm_facts.store import version_key

# The section of codes.toml these codes are listed under.
SECTION = "Declared patches (`patch` components)"
CODES = frozenset({"patch-target-missing", "patch-signature-changed", "patch-source-changed"})
MANIFEST = "pyproject.toml [[tool.vllm-scaffold.components]]"


def _finding(code: str, where: str, message: str, fix: str) -> Finding:
    return Finding(Severity(severity_of(code)), code, where, message, fix)


def declared_patches(package: PluginPackage) -> list[dict]:
    """The manifest's patch components that name a target."""
    components = package.manifest.get("components", [])
    return [c for c in components if isinstance(c, dict) and c.get("seam") == "patch" and c.get("target")]


def _recorded(component: dict, version: str) -> tuple[str, dict[str, str]] | None:
    """(release, fingerprint) to compare with `version`: its own, else the newest recorded."""
    fingerprints = component.get("fingerprints")
    if not isinstance(fingerprints, dict) or not fingerprints:
        return None
    if isinstance(fingerprints.get(version), dict):
        return version, fingerprints[version]
    newest = max(fingerprints, key=version_key)
    return (newest, fingerprints[newest]) if isinstance(fingerprints[newest], dict) else None


def check_patches(package: PluginPackage, index: ReleaseIndex, sites: CallSites | None = None) -> list[Finding]:
    findings: list[Finding] = []
    release = f"vLLM {index.version}"
    for component in declared_patches(package):
        target = str(component["target"])
        where = f"{MANIFEST} {component.get('name', target)}"
        facts = describe(index, target)
        if isinstance(facts, str):
            findings.append(
                _finding(
                    "patch-target-missing",
                    where,
                    f"the patch of {target} has nothing to wrap on {release}: {facts}",
                    "find where the release moved the behaviour and patch that, or drop the patch if the release "
                    f"made it unnecessary (remove when: {component.get('remove_when', 'not recorded')})",
                )
            )
            continue
        recorded = _recorded(component, index.version)
        if recorded is None:
            continue
        written_for, fingerprint = recorded
        old, new = str(fingerprint.get("signature", "")), facts.signature
        if shape(old) != shape(new):
            problem = _binding_problem(Signature.parse(new), Signature.parse(old), target, sites)
            if problem:
                findings.append(
                    _finding(
                        "patch-signature-changed",
                        where,
                        f"{target} takes ({shape(new)}) on {release}, the patch was written for ({shape(old)}) on "
                        f"vLLM {written_for}: {problem}",
                        f"regenerate the wrapper for {release} (vllm-scaffold add patch NAME --data target={target}) "
                        "and carry your change over",
                    )
                )
                continue
        if fingerprint.get("source") and facts.source_hash and fingerprint["source"] != facts.source_hash:
            changed = "its source" if shape(old) == shape(new) else f"its parameters ({shape(new)}) and source"
            findings.append(
                _finding(
                    "patch-source-changed",
                    where,
                    f"{target} on {release} differs from the code the patch was written for on vLLM {written_for} "
                    f"({changed})",
                    "review the patch against the new code; has its remove-when condition been reached "
                    f"({component.get('remove_when', 'not recorded')})? then record the new fingerprint",
                )
            )
    return findings


def _binding_problem(release: Signature, wrapper: Signature, target: str, sites: CallSites | None) -> str | None:
    """Why vLLM's calls of the release's target would not bind the wrapper's parameters; None when they do."""
    if sites is None:
        problem = override_problem(release, wrapper)
        return f"a call vLLM may make would raise ({problem})" if problem else None
    module, _, qualname = target.partition(":")
    owner, _, name = qualname.rpartition(".")
    takes = wrapper.bound() if owner and wrapper.decorator != "s" else wrapper
    for site in sites.of(name):
        inside_target = site.module == module and site.function == name and site.cls == f"{module}.{owner}"
        # a definition handing on to a namesake (self.engine.NAME(...)) is not a caller of the target
        if site.spread or inside_target:
            continue
        problem = call_problem(takes, site.positional, list(site.keywords))
        as_called = release.bound() if owner else release
        binds_release = call_problem(as_called, site.positional, list(site.keywords)) is None
        if problem and binds_release:
            return f"vLLM's call of {name} at {site.where} would raise ({problem})"
    return None
