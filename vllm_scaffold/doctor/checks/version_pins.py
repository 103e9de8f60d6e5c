"""What a plugin's own vLLM version pins do on the release checked: switch an entry point off, or stop vLLM.

Hardware plugins often guard their entry points with the releases they were written for. A platform detector
or general plugin that returns early outside a range (`if not vllm.__version__.startswith("0.10"): return
None`, `if Version(vllm.__version__) < Version("0.9"): return`) silently does nothing there: the platform
never activates, nothing registers (`version-range-excludes-release`). A general plugin that raises outside
its pin (`if Version(vllm.__version__) < MIN or ... >= MAX: raise RuntimeError(...)`) stops every vLLM
process at start-up, since vLLM calls every general plugin without catching what it raises
(`general-plugin-refuses-release`); the raise counts only when every call of the entry point reaches it: it
stands in the function's own body, and nothing before it returns or raises on a test that cannot be decided.
A platform detector that raises is logged and skipped by vLLM, which the first code and the live probe cover.

Each test is evaluated against the release checked (the installed vLLM, or each `--vllm` release) by
`reading/versions.py`; a test it cannot decide is left alone.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from vllm_scaffold.doctor.checks.target import Target, check
from vllm_scaffold.doctor.reading.guards import leaves
from vllm_scaffold.doctor.reading.installed import GENERAL, PLATFORM
from vllm_scaffold.doctor.reading.package import PluginPackage, walk_nodes
from vllm_scaffold.doctor.reading.versions import VersionReader, entry_point_readers
from vllm_scaffold.doctor.report.findings import Finding
from vllm_scaffold.vllm_facts import facts

SWITCHED_OFF = "version-range-excludes-release"
REFUSES = "general-plugin-refuses-release"


@check(SWITCHED_OFF, REFUSES, every_release=True)
def version_pins(target: Target) -> list[Finding]:
    if target.index is None or not target.version:
        return []
    return excluded_by_version(target.package, target.version) + refusals(target.package, target.version)


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
                        SWITCHED_OFF,
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


def refusals(package: PluginPackage, version: str) -> list[Finding]:
    """Each general plugin of `package` whose own version pin raises on vLLM `version` on every call."""
    findings = []
    for ep, module, node, reader in entry_point_readers(package, GENERAL):
        for test, raises_when in _pins(node, reader, version):
            written = ast.unparse(reader.spelled(test))
            condition = written if raises_when else f"not ({written})"
            findings.append(
                Finding(
                    REFUSES,
                    module.where(test),
                    f"general plugin {ep.attr}() raises on vLLM {version} by its own version pin: it raises when "
                    f"{condition}, and that holds on {version}; {facts.fact('general-plugin-unguarded').text()}",
                    f"widen the pin to vLLM {version} if the plugin works there, or declare the range it pins "
                    "in the package's requirements (`vllm>=...,<...`) so installers refuse the combination",
                )
            )
    return findings


def _pins(
    node: ast.FunctionDef | ast.AsyncFunctionDef, reader: VersionReader, version: str
) -> Iterator[tuple[ast.expr, bool]]:
    """(test, whether the raise follows when it holds) for the version pin that raises on `version`, when every
    call reaches it: the statements before it in the function's own body either leave nowhere or leave on a
    test decided not to hold. Stops at the first statement whose effect on the path is not known."""
    for stmt in node.body:
        if isinstance(stmt, ast.Assert) and reader.reads_version(stmt.test):
            if reader.evaluate(stmt.test, version) is False:
                yield stmt.test, False
                return
            continue
        if isinstance(stmt, ast.If):
            holds = reader.evaluate(stmt.test, version) if reader.reads_version(stmt.test) else None
            taken = stmt.body if holds else stmt.orelse if holds is False else None
            if taken is not None:
                if taken and isinstance(taken[-1], ast.Raise) and taken[-1].exc is not None:
                    yield stmt.test, bool(holds)
                    return
                if _may_leave(taken):
                    return
                continue
        if _may_leave([stmt]):
            return


def _may_leave(statements: list[ast.stmt]) -> bool:
    """Whether any statement here may end the call early (return, raise, exit), nested functions aside."""
    for stmt in statements:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        for inner in walk_nodes(stmt):
            if isinstance(inner, ast.Return | ast.Raise) or (isinstance(inner, ast.stmt) and leaves(inner)):
                return True
    return False
