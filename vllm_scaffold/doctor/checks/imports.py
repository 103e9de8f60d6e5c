"""Static check of the package's `vllm.*` imports against the installed vLLM's sources, lazily resolved
modules included, and whether a module fails to import."""

from __future__ import annotations

import ast

from vllm_scaffold.doctor.checks.target import Target, check
from vllm_scaffold.doctor.reading import installed as vllm_facts
from vllm_scaffold.doctor.reading.guards import Guard, GuardKind, dead_fallbacks, guards, untaken_branches
from vllm_scaffold.doctor.reading.package import Module
from vllm_scaffold.doctor.reading.source import (
    resolve_relative,
)
from vllm_scaffold.doctor.report.findings import Finding


@check("vllm-import-guarded", "vllm-import-missing")
def vllm_imports(target: Target) -> list[Finding]:
    """Every vllm.* import must exist in the installed vLLM: the first thing that breaks on an upgrade.

    Imports under `if TYPE_CHECKING:` never run; a guarded one (try/except ImportError, a version condition) is
    planned for, so it is reported as what silently switches off on this vLLM."""
    ctx = target.environment
    if not ctx.vllm.present:
        return []
    findings = []
    for module in ctx.package.parsed():
        dead: set[int] | None = None
        missing_at: dict[int, list[str]] = {}  # import node -> the names of it this vLLM lacks
        guarded: list[tuple[ast.AST, list[str], Guard]] = []
        for node in module.of_type(ast.Import, ast.ImportFrom):
            targets = _import_targets(module, node)
            if targets is None:
                continue
            absent_names = [m for source, name in targets if (m := _missing_vllm_name(source, name)) is not None]
            if absent_names:
                if dead is None:
                    dead = dead_fallbacks(module, lambda source, name: _missing_vllm_name(source, name) is None)
                if id(node) in dead:
                    continue  # the fallback of a try block whose own imports exist here: it never runs
                if id(node) in untaken_branches(module, ctx.vllm.version):
                    continue  # in a branch of a version condition this vLLM does not take: it never runs
            guard = guards(module).get(id(node)) if absent_names else None
            if guard is not None and guard.kind is GuardKind.TYPE_CHECKING:
                continue
            if not absent_names:
                continue
            if guard is None:
                missing_at[id(node)] = absent_names
            else:
                guarded.append((node, absent_names, guard))
        fallbacks = _failing_fallbacks(module, missing_at)
        for node, absent_names, guard in guarded:
            if id(guard.node) in fallbacks:
                continue  # its except branch fails too: the fallback's error says so, not an info saying it is fine
            for missing in absent_names:
                findings.append(
                    Finding(
                        "vllm-import-guarded",
                        module.where(node),
                        f"{missing} does not exist in the installed vLLM {ctx.vllm.version}; the import is guarded "
                        f"({guard.kind}), so on this vLLM {guard.consequence(module)}",
                        "nothing to do if that is intended here; otherwise import it from where this vLLM defines it",
                    )
                )
        tried = {id(fallback): attempt for attempt, fallback in fallbacks.values()}
        for node in module.of_type(ast.Import, ast.ImportFrom):
            for missing in missing_at.get(id(node), []):
                absent = f"{missing} does not exist in the installed vLLM {ctx.vllm.version}"
                if id(node) in tried:
                    absent += (
                        f"; it is the fallback of the import at {module.where(tried[id(node)])}, which this vLLM "
                        "lacks too, so the ImportError is raised from the except branch"
                    )
                findings.append(
                    Finding(
                        "vllm-import-missing",
                        module.where(node),
                        absent,
                        "import it from where this vLLM defines it (search site-packages/vllm), or guard the "
                        "import for the versions that have it",
                    )
                )
    return findings


def _failing_fallbacks(module: Module, missing_at: dict[int, list[str]]) -> dict[int, tuple[ast.AST, ast.AST]]:
    """try statements whose except branch makes an unguarded import this vLLM lacks: id(try) -> (the first
    import of its body, the failing import of the handler)."""
    found: dict[int, tuple[ast.AST, ast.AST]] = {}
    for node in module.of_type(ast.Try):
        if not isinstance(node, ast.Try):
            continue
        attempt = next((s for s in node.body if isinstance(s, (ast.Import, ast.ImportFrom))), None)
        failing = next(
            (
                s
                for h in node.handlers
                for s in h.body
                if isinstance(s, (ast.Import, ast.ImportFrom)) and id(s) in missing_at
            ),
            None,
        )
        if attempt is not None and failing is not None:
            found[id(node)] = (attempt, failing)
    return found


def fails_to_import(module: Module) -> bool:
    """Whether the module stops at one of its own top-level statements on the installed vLLM: an unguarded
    `import`/`from ... import` at module level of a vllm name this release lacks. Nothing after it runs, so no
    registration the module makes happens on this release; the import itself is what vllm-import-missing
    reports."""
    if "fails_to_import" not in module.memo:
        module.memo["fails_to_import"] = module.tree is not None and any(
            _missing_vllm_name(source, name) is not None
            for node in module.tree.body
            if isinstance(node, (ast.Import, ast.ImportFrom))
            for source, name in _import_targets(module, node) or []
        )
    return bool(module.memo["fails_to_import"])


def _import_targets(module: Module, node: ast.AST) -> list[tuple[str, str | None]] | None:
    """(module, name) pairs an import statement asks for (name None for `import x`); None for a relative
    import, which never names vllm."""
    if isinstance(node, ast.Import):
        return [(alias.name, None) for alias in node.names]
    if isinstance(node, ast.ImportFrom) and not node.level:
        return [(resolve_relative(module, node), alias.name) for alias in node.names]
    return None


def _missing_vllm_name(source: str, name: str | None) -> str | None:
    """What of `from source import name` (or `import source`) the installed vLLM lacks, or None."""
    if not (source == "vllm" or source.startswith("vllm.")):
        return None
    if not vllm_facts.vllm_module_exists(source):
        return f"module {source}"
    if name is None or name == "*" or vllm_facts.vllm_module_exists(f"{source}.{name}"):
        return None
    known = vllm_facts.vllm_module_names(source)
    return None if known is None or name in known else f"{source}.{name}"
