"""The plugin's use of vLLM's API (imports, calls, overrides, abstract methods, super() calls, attributes,
dotted paths, monkeypatches, declared patches...) against a release's index: the release check of
`doctor/releases/`, run on the installed vLLM and on each release `--vllm` names."""

from __future__ import annotations

from vllm_scaffold.doctor.checks.target import Target, check
from vllm_scaffold.doctor.report.findings import Finding

# Against the installed vLLM, these are the plain run's own import check's (imports.vllm_imports, which also reads
# lazily resolved modules); every other code is reported exactly as `--vllm <installed version>` reports it.
IMPORT_CODES = frozenset({"vllm-import-missing", "vllm-import-guarded"})


@check(
    *IMPORT_CODES,
    "env-unknown-vllm-variable",
    "logits-processor-not-v2",
    "monkeypatch-call-signature",
    "monkeypatch-signature-changed",
    "monkeypatch-target-missing",
    "patch-signature-changed",
    "patch-source-changed",
    "patch-target-missing",
    "vllm-abstract-missing",
    "vllm-argument-type",
    "vllm-attribute-missing",
    "vllm-call-signature",
    "vllm-dotted-path-missing",
    "vllm-endpoint-route-shadowed",
    "vllm-override-moved",
    "vllm-override-not-yet",
    "vllm-override-orphaned",
    "vllm-override-signature",
    "vllm-self-attribute-missing",
    "vllm-super-call-signature",
    "vllm-super-missing",
    every_release=True,
)
def release_api(target: Target) -> list[Finding]:
    """The other releases tell a member vLLM removed from one the plugin defines; the release's call sites, where
    its sources are at hand (the installed vLLM, or a copy in the cache), also tell an override vLLM never
    reaches."""
    from vllm_scaffold.doctor.checks.renamed_keywords import release_sources
    from vllm_scaffold.doctor.releases import check as releases

    index = target.index
    if index is None:
        return []
    source = release_sources(target, index)
    if source is None:
        return releases.check(target.package, index, target.releases)
    from vllm_scaffold.doctor.reading import installed
    from vllm_scaffold.doctor.reading.callers import CallSites

    release = f"{index.distribution}-{index.version}-{str(index.data.get('digest', ''))[:12]}"
    sites = CallSites(source, release, installed.cache_dir())
    if target.installed is None:
        return releases.check(target.package, index, target.releases, sites, installed=False)
    findings = releases.check(target.package, index, target.releases, sites)
    return [f for f in findings if f.code not in IMPORT_CODES]
