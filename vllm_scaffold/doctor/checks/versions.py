"""A platform detector or general plugin that switches itself off outside a vLLM version range written in code.

Hardware plugins often guard their entry point with the releases they were written for: `if not
vllm.__version__.startswith("0.10"): return None` in the platform detector, `if Version(vllm.__version__) <
Version("0.9"): return` in `register()`. On a release outside that range the plugin silently does nothing:
the platform never activates, nothing registers. The test is evaluated against the release being
checked (the installed vLLM, or each `--vllm` release) by `reading/versions.py`; a test it cannot decide is
left alone.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from vllm_scaffold.doctor.checks.target import Target, check
from vllm_scaffold.doctor.reading.installed import GENERAL, PLATFORM
from vllm_scaffold.doctor.reading.package import PluginPackage
from vllm_scaffold.doctor.reading.versions import entry_point_readers
from vllm_scaffold.doctor.report.findings import Finding

CODE = "version-range-excludes-release"


@check(CODE, every_release=True)
def version_ranges(target: Target) -> list[Finding]:
    if target.index is None or not target.version:
        return []
    return excluded_by_version(target.package, target.version)


def excluded_by_version(package: PluginPackage, version: str) -> list[Finding]:
    """Each platform detector and general plugin of `package` that returns before doing its work on vLLM
    `version` because of a version range in its code."""
    findings = []
    for group, what, effect in (
        (PLATFORM, "platform detector", "returns None, so the platform silently never activates"),
        (GENERAL, "general plugin", "returns before registering anything, so the plugin silently does nothing"),
    ):
        for ep, module, node, reader in entry_point_readers(package, group):
            for test, off_when in _switches_off(node):
                if not reader.reads_version(test):
                    continue
                holds = reader.evaluate(test, version)
                if holds is None or holds != off_when:
                    continue
                written = ast.unparse(test)
                condition = written if off_when else f"not ({written})"
                findings.append(
                    Finding(
                        CODE,
                        module.where(test),
                        f"{what} {ep.attr}() {effect} on vLLM {version}: it switches itself off when "
                        f"{condition}, a vLLM version range written in its code, and that holds on {version}",
                        f"widen the range to the releases the plugin works on (vLLM {version} if it does), or say "
                        "in the package's requirements which vLLM it needs",
                    )
                )
    return findings


def _returns_nothing(stmt: ast.stmt) -> bool:
    """`return`, `return None` or `return False`: the entry point's way of doing nothing."""
    return isinstance(stmt, ast.Return) and (
        stmt.value is None or (isinstance(stmt.value, ast.Constant) and stmt.value.value in (None, False))
    )


def _returns_something(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Return) and not _returns_nothing(stmt)


def _switches_off(node: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[tuple[ast.expr, bool]]:
    """(test, whether the function does nothing when the test holds) for each test in the function's own body
    that decides whether it returns early with nothing (`if T: return None`), or returns its result only
    when the test holds (`if T: return "pkg.Platform"` and nothing after; `return X if T else None`)."""
    body = [s for s in node.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    for position, stmt in enumerate(body):
        if isinstance(stmt, ast.If) and stmt.body:
            if _returns_nothing(stmt.body[-1]):
                yield stmt.test, True
            elif _returns_something(stmt.body[-1]):
                rest = body[position + 1 :]
                if (stmt.orelse and _returns_nothing(stmt.orelse[-1])) or (
                    not stmt.orelse and (not rest or (len(rest) == 1 and _returns_nothing(rest[0])))
                ):
                    yield stmt.test, False
        elif isinstance(stmt, ast.Return) and isinstance(stmt.value, ast.IfExp):
            if isinstance(stmt.value.orelse, ast.Constant) and stmt.value.orelse.value is None:
                yield stmt.value.test, False
            elif isinstance(stmt.value.body, ast.Constant) and stmt.value.body.value is None:
                yield stmt.value.test, True
