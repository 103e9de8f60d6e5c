"""A finding about the plugin's use of vLLM is an error only when every link of its reasoning holds.

The checks establish the last link themselves: on the checked release the name is missing, or the call cannot
bind, and that raises. Two links they take for granted are checked here, on the plugin's own code, once per
report:
- **the name is vLLM's**: the plugin does not provide it (`provided`): a finding about a name the plugin
  installs into vLLM's namespace, assigns or places in `sys.modules` is shown as suppressed, with where;
- **the code runs**: its module is reached from the package's vLLM entry points (`loaded`); a module that
  nothing loaded imports or names, or one imported only under the plugin's own version condition, leaves the
  link unproven: the finding says which (an error becomes a warning).
A check that judges a link of its own passes it with the finding, and it is kept here with the others: where
the release's sources are at hand, an override vLLM's call would fail on is reached only if one of those calls
runs on the plugin's object; when the plugin's own runner, override or patch replaces every calling method,
the link "vLLM's call reaches the override" is unproven (`releases/override_callers.py`).
Each finding it judges carries the links in --json (`chain`).
"""

from __future__ import annotations

import ast
import re

from vllm_scaffold.doctor.proof.loaded import Loading, Reach, loading
from vllm_scaffold.doctor.proof.provided import installer, provided_names, provider
from vllm_scaffold.doctor.reading.package import Module, PluginPackage
from vllm_scaffold.doctor.report.findings import Finding, Link
from vllm_scaffold.vllm_facts import ReleaseIndex

# Codes about a use of vLLM at a place in the plugin's code: the ones whose reasoning needs the code to run.
REACHED_CODES = frozenset(
    {
        "vllm-import-missing",
        "vllm-attribute-missing",
        "vllm-call-signature",
        "vllm-override-signature",
        "vllm-override-keyword-renamed",
        "vllm-super-call-signature",
        "vllm-super-missing",
        "vllm-abstract-missing",
        "vllm-dotted-path-missing",
        "vllm-self-attribute-missing",
        "vllm-config-attribute-missing",
        "vllm-override-orphaned",
        "monkeypatch-target-missing",
        "monkeypatch-signature-changed",
        "monkeypatch-call-signature",
        "env-unknown-vllm-variable",
    }
)
# Of those, the codes about a vLLM name the plugin reads or calls (not one it sets itself): a name it provides
# is not missing.
NAME_CODES = frozenset(
    {
        "vllm-import-missing",
        "vllm-attribute-missing",
        "vllm-call-signature",
        "vllm-dotted-path-missing",
        "vllm-config-attribute-missing",
    }
)
_SUBJECT = re.compile(r"\bvllm(?:\.\w+)+")
CLAIM_OWNED = "the name is vLLM's, not the plugin's"
CLAIM_RUNS = "the code runs"
CLAIM_CALLED = "vLLM's call reaches the override"


def prove(package: PluginPackage, findings: list[Finding], index: ReleaseIndex | None = None) -> list[Finding]:
    """`findings` with the links of each judged finding checked: provided names suppressed, unreached code a
    warning. `index`: the checked release, whose own imports of the package's modules count as loading them."""
    judged = [f for f in findings if f.code in REACHED_CODES and f.suppressed is None and f.location]
    if not judged:
        return findings
    by_path = {module.rel: module for module in package.modules.values()}
    loaded = loading(package, external_imports(index) if index is not None else frozenset(), index)
    provided = provided_names(package) if any(f.code in NAME_CODES for f in judged) else {}
    proved = []
    for finding in findings:
        location = finding.location if finding.code in REACHED_CODES and finding.suppressed is None else None
        module = by_path.get(location[0]) if location else None
        proved.append(finding if module is None else _proved(finding, module, loaded[module.name], provided))
    return proved


def _proved(finding: Finding, module: Module, loading: Loading, provided: dict[str, str]) -> Finding:
    chain: list[Link] = list(finding.chain)  # the links the check judged itself
    if finding.code in NAME_CODES and (subject := _SUBJECT.search(finding.message)) is not None:
        name = subject.group(0)
        where = provider(provided, name)
        line = (finding.location or ("", None))[1] or 0
        if where is None or _later_in_same_import(where, module, line):
            chain.append(Link(CLAIM_OWNED, True, f"nothing in the package installs, assigns or sets {name} first"))
        elif installer(provided, name) or where.partition(":")[0] == module.rel:
            return finding.suppress(f"the plugin provides {name} itself ({where}) before this runs")
        else:  # set by another module of the plugin: whether that runs before this binds the name is not shown
            chain.append(Link(CLAIM_OWNED, None, f"the plugin sets {name} itself ({where})"))
    if loading.reach is Reach.EXCLUDED:  # the plugin's own version pin keeps the checked release from this code
        return finding.but(chain=(*chain, Link(CLAIM_RUNS, False, loading.evidence))).suppress(loading.evidence)
    reached = loading.reach is Reach.REACHED
    chain.append(Link(CLAIM_RUNS, True if reached else None, loading.evidence))
    unproven = [link.evidence for link in chain if link.holds is None]
    if not unproven:
        return finding.but(chain=tuple(chain))
    message = f"{finding.message} (unproven: {'; '.join(unproven)}, so that it fails is not shown)"
    return finding.but(message=message, chain=tuple(chain))


def _in_function(module: Module, line: int) -> bool:
    """Whether `line` of `module` lies in a function body: it runs when called, after the plugin has loaded."""
    return any(
        node.lineno < line <= (node.end_lineno or 0)
        for node in module.of_type(ast.FunctionDef, ast.AsyncFunctionDef)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    )


def _later_in_same_import(where: str, module: Module, line: int) -> bool:
    """Whether the plugin provides the name further down the same module, while `line` runs at its import:
    the failing line runs first (`from vllm.x import A` above `x.A = Mine`)."""
    path, _, provided_line = where.partition(":")
    return (
        path == module.rel and provided_line.isdigit() and int(provided_line) > line and not _in_function(module, line)
    )


def external_imports(index: ReleaseIndex) -> frozenset[str]:
    """The names outside vLLM that the release's modules import (a platform's package, for instance)."""
    return frozenset(
        target
        for entry in index.modules.values()
        for target in entry.get("i", {}).values()
        if target.split(".")[0] != "vllm"
    )
