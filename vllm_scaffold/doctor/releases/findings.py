"""Where the release checks' findings are collected, and what is said of a place before it is reported: code
that never runs on the release (a fallback of a test the release passes, a module written for another
release) is not reported, and a guarded import is reported as guarded."""

from __future__ import annotations

import ast

from vllm_scaffold.doctor.reading.guards import GuardKind, dead_fallbacks, untaken_branches
from vllm_scaffold.doctor.reading.package import Module, walk_nodes
from vllm_scaffold.doctor.reading.source import qualified
from vllm_scaffold.doctor.releases.classes import PluginClasses
from vllm_scaffold.doctor.releases.override_callers import OverrideCallers
from vllm_scaffold.doctor.releases.places import Place
from vllm_scaffold.doctor.releases.signatures import call_problem
from vllm_scaffold.doctor.report.codes import severity_of
from vllm_scaffold.doctor.report.findings import Finding, Link, Severity

# An import the release lacks is reported with the installed-vLLM check's codes.
IMPORT_CODES = frozenset({"vllm-import-missing", "vllm-import-guarded"})


def finding(code: str, where: str, message: str, fix: str) -> Finding:
    return Finding(Severity(severity_of(code)), code, where, message, fix)


class Findings:
    """The findings of one package against one release, in the order they are reported."""

    def __init__(self, classes: PluginClasses, callers: OverrideCallers) -> None:
        self.classes = classes
        self.callers = callers
        self.release = classes.release
        self.found: list[Finding] = []
        self._dead_memo: dict[str, set[int]] = {}

    def report(self, code: str, place: Place, message: str, fix: str, chain: tuple[Link, ...] = ()) -> None:
        """Report `code` at `place`; `chain`: links of its proof the check itself judged."""
        if id(place.node) in self._dead(place.module):
            return  # code that never runs on this release: the fallback of a test the release passes
        if code not in IMPORT_CODES and self.callers.other_release_adapter(place.module):
            return  # a module written for another release (`connector_085`) that nothing imports
        guard = place.guard
        if guard is not None and guard is not GuardKind.TYPE_CHECKING:
            if code != "vllm-import-missing":
                return  # a use the plugin tests for (hasattr, a version check, try/except) before making it
            code = "vllm-import-guarded"
            message += "; the plugin guards this import, so what depends on it silently switches off on this release"
            fix = f"nothing to do if the plugin does without it on this release; otherwise: {fix}"
        self.found.append(Finding(code, place.where, message, fix, chain=chain))

    def _dead(self, module: Module) -> set[int]:
        """id() of the nodes of `module` that never run on this release: the `except ImportError:` branch of a
        try block whose imports the release has, a branch of a version condition the release does not take, and
        what follows `getattr(m, "New", None) or` in an `or` chain when the release has m.New
        (`getattr(base, "TransferJob", None) or base.JobMetadata`)."""
        if module.name not in self._dead_memo:
            missing = self.release.first_missing
            dead = dead_fallbacks(module, lambda source, name: not missing(f"{source}.{name}" if name else source))
            dead |= untaken_branches(module, self.release.index.version)  # a version branch for other releases
            table = self.classes.tables[module.name]
            for node in module.of_type(ast.Try):
                if self._binding_try(module, node):
                    for handler in node.handlers:
                        dead.update(id(n) for stmt in handler.body for n in walk_nodes(stmt))
            for chain in module.of_type(ast.BoolOp):
                if not isinstance(chain.op, ast.Or):
                    continue
                values = chain.values
                for position, value in enumerate(values[:-1]):
                    if self._getattr_exists(value, table):
                        dead.update(id(n) for later in values[position + 1 :] for n in walk_nodes(later))
                        break
            self._dead_memo[module.name] = dead
        return self._dead_memo[module.name]

    def _binding_try(self, module: Module, node: ast.Try) -> bool:
        """`try: vllm_function(new_kwarg=...)` / `except TypeError: vllm_function(old_kwarg=...)` where every
        vLLM call of the try block binds to the release's signature: the fallback never runs there."""
        if not any(
            h.type is not None and "TypeError" in {getattr(n, "id", None) for n in walk_nodes(h.type)}
            for h in node.handlers
        ):
            return False
        calls = [n for stmt in node.body for n in walk_nodes(stmt) if isinstance(n, ast.Call)]
        checked = [(call, found) for call in calls if (found := self.classes.callee(module, call.func)) is not None]
        if not checked:
            return False
        for call, (_symbol, signature) in checked:
            if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
                return False
            if call_problem(signature, len(call.args), [k.arg for k in call.keywords if k.arg]) is not None:
                return False
        return True

    def _getattr_exists(self, node: ast.expr, table: dict[str, str]) -> bool:
        """`getattr(X, "name", ...)` where X is a vLLM name the release has with that attribute."""
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        ):
            return False
        owner = qualified(node.args[0], table) if isinstance(node.args[0], ast.Name | ast.Attribute) else None
        if not owner or owner.split(".")[0] != "vllm":
            return False
        return self.release.index.resolve(f"{owner}.{node.args[1].value}").kind not in {"missing", "unknown"}
