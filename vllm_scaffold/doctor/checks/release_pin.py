"""A general plugin that raises, by the plugin's own vLLM version pin, on the release checked.

Plugins written for a range of vLLM releases often refuse the others in `register()`: `if Version(vllm.__version__)
< MIN or Version(vllm.__version__) >= MAX: raise RuntimeError(...)`. vLLM calls every general plugin without
catching what it raises, so on a release outside the pin every vLLM process stops at start-up. The pin is
evaluated against the release checked (the installed vLLM, or each `--vllm` release) by `reading/versions.py`;
the raise counts only when every call of the entry point reaches it: it stands in the function's own body, and
nothing before it returns or raises on a test that cannot be decided. A platform detector that raises is logged
and skipped by vLLM, which `version-range-excludes-release` and the live probe cover.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from vllm_scaffold.doctor.checks.target import Target, check
from vllm_scaffold.doctor.reading.guards import leaves
from vllm_scaffold.doctor.reading.installed import GENERAL
from vllm_scaffold.doctor.reading.package import PluginPackage, walk_nodes
from vllm_scaffold.doctor.reading.versions import VersionReader, entry_point_readers
from vllm_scaffold.doctor.report.findings import Finding
from vllm_scaffold.vllm_facts import facts

CODE = "general-plugin-refuses-release"


@check(CODE, every_release=True)
def refuses_release(target: Target) -> list[Finding]:
    if target.index is None or not target.version:
        return []
    return refusals(target.package, target.version)


def refusals(package: PluginPackage, version: str) -> list[Finding]:
    """Each general plugin of `package` whose own version pin raises on vLLM `version` on every call."""
    findings = []
    for ep, module, node, reader in entry_point_readers(package, GENERAL):
        for test, raises_when in _pins(node, reader, version):
            written = ast.unparse(reader.spelled(test))
            condition = written if raises_when else f"not ({written})"
            findings.append(
                Finding(
                    CODE,
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
