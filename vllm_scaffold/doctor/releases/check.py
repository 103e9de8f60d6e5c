"""`doctor --vllm VERSION`: a plugin's use of vLLM checked against a release that is not installed.

The plugin's source is read as ASTs and every use of vLLM is looked up in the release's index
(`vllm_scaffold.vllm_facts`): imports at any depth (those under `if TYPE_CHECKING:` never run and are
skipped; those in `try/except ImportError` or under a version or `hasattr` test are reported as info, since
the plugin handles them but a feature silently switches off), attributes read from imported vLLM names,
classes derived from vLLM classes (abstract methods the release requires, overrides of members the release
no longer has, `super()` calls into missing members, override signatures the release cannot call), calls
into vLLM functions and constructors, and `"vllm.x.y"` strings such as class paths.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from functools import cached_property

from vllm_scaffold import vllm_facts
from vllm_scaffold.doctor.reading.callers import CallSites
from vllm_scaffold.doctor.reading.guards import dead_fallbacks
from vllm_scaffold.doctor.reading.installed import ENDPOINT
from vllm_scaffold.doctor.reading.package import Module, PluginPackage, walk_nodes
from vllm_scaffold.doctor.reading.source import aliases, class_body_names, qualified, string_constants
from vllm_scaffold.doctor.releases.override_callers import OverrideCallers
from vllm_scaffold.doctor.releases.patches import check_patches
from vllm_scaffold.doctor.releases.replacements import DOTTED, functions_by_name, replacement_function, replacements
from vllm_scaffold.doctor.releases.signatures import call_problem, override_problem
from vllm_scaffold.doctor.report.codes import severity_of
from vllm_scaffold.doctor.report.findings import Finding, Severity
from vllm_scaffold.vllm_facts import ReleaseIndex, Signature, Symbol, facts
from vllm_scaffold.vllm_facts.build import sets_computed_attributes
from vllm_scaffold.vllm_facts.routes import declared_routes

_IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError", "AttributeError", "Exception", "BaseException"}
_VERSION_WORDS = ("version", "__version__", "hasattr", "find_spec", "getattr")
# Members vLLM classes inherit from bases outside vLLM (the index lists only vLLM's own members).
_OUTSIDE_MEMBERS = {
    "abc.ABC": frozenset({"register"}),
    "enum.Enum": frozenset({"name", "value", "_member_map_", "_value2member_map_", "_missing_"}),
    "enum.IntEnum": frozenset({"name", "value", "_member_map_", "_value2member_map_", "_missing_"}),
    "enum.StrEnum": frozenset({"name", "value", "_member_map_", "_value2member_map_", "_missing_"}),
}
# Bases outside vLLM an enum may have without adding upper-case attributes.
_ENUM_BASES = frozenset({"enum.Enum", "enum.IntEnum", "enum.StrEnum", "enum.Flag", "enum.IntFlag", "str", "int"})
# Type names a string literal satisfies, or that say nothing about it.
_ACCEPTS_STR = {"str", "Any", "object", "Literal", "LiteralString", "PathLike", "StrPath", "Path"}


# The codes of this module (their severities, summaries and examples are in codes.toml, section "Across
# releases"); an import the release lacks is reported with the installed-vLLM check's codes.
SECTION = "Across releases (`--vllm`)"
_IMPORT_CODES = frozenset({"vllm-import-missing", "vllm-import-guarded"})
# Bases that give a plugin class no attribute it would read through self.
_NO_MEMBER_BASES = frozenset({"object", "abc.ABC", "typing.Generic", "typing.Protocol", "ABC", "Generic", "Protocol"})


# The logits-processor interfaces: the V1 runner's (gone in 0.34) and Model Runner V2's.
LOGITS_GROUP = "vllm.logits_processors"
V1_LOGITS_MODULE = "vllm.v1.sample.logits_processor"
V2_LOGITS_BASE = "vllm.v1.worker.gpu.sample.logits_processor.interface.LogitsProcessor"
V2_LOGITS_PUBLIC = "vllm.v1.worker.gpu.sample.logits_processor.LogitsProcessor"
_V1_LOGITS_FIX = (
    f"derive the processor from {V2_LOGITS_PUBLIC} (Model Runner V2's interface: __init__(vllm_config, req_states), "
    "add_request, apply(logits, ctx)); keep the V1 class only for releases before 0.34, behind "
    f'`importlib.util.find_spec("{V1_LOGITS_MODULE}")`'
)


def finding(code: str, where: str, message: str, fix: str) -> Finding:
    return Finding(Severity(severity_of(code)), code, where, message, fix)


_UNKNOWN = "?"


class Place:
    """A node of a module, with the guard it runs under (None, "type-checking" or "guarded"), found from the
    module's guarded blocks when first asked."""

    __slots__ = ("_guard", "module", "node")

    def __init__(self, module: Module, node: ast.AST, guard: str | None = _UNKNOWN) -> None:
        self.module = module
        self.node = node
        self._guard = guard

    @property
    def guard(self) -> str | None:
        if self._guard == _UNKNOWN:
            self._guard = guard_of(self.module, self.node)
        return self._guard

    @property
    def where(self) -> str:
        return self.module.where(self.node)


def _guards_of(handlers: list[ast.ExceptHandler]) -> bool:
    for handler in handlers:
        if handler.type is None:
            return True
        names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        if any((getattr(n, "id", None) or getattr(n, "attr", None)) in _IMPORT_ERRORS for n in names):
            return True
    return False


def _is_version_test(test: ast.expr) -> bool:
    """The test names a version, hasattr, getattr or find_spec (in a name, an attribute or a string)."""
    for node in walk_nodes(test):
        kind = node.__class__
        if kind is ast.Name:
            text = node.id
        elif kind is ast.Attribute:
            text = node.attr
        elif kind is ast.Constant and isinstance(node.value, str):
            text = node.value
        else:
            continue
        if any(word in text for word in _VERSION_WORDS):
            return True
    return False


def _is_type_checking(test: ast.expr) -> bool:
    return any(
        (n.__class__ is ast.Name and n.id == "TYPE_CHECKING")  # type: ignore[attr-defined]
        or (n.__class__ is ast.Attribute and n.attr == "TYPE_CHECKING")  # type: ignore[attr-defined]
        for n in walk_nodes(test)
    )


def _returns_unless(stmt: object, module: Module | None = None) -> bool:
    """`if <version or hasattr test>: ... return` (or raise, or a test module's `pytest.skip(...)`, or
    `sys.exit(...)`): the statements after it run only when it passed. A call of one of the module's
    capability checks (`capability_check`) is such a test too."""
    return (
        stmt.__class__ is ast.If
        and not stmt.orelse  # type: ignore[attr-defined]
        and _leaves(stmt.body[-1])  # type: ignore[attr-defined]
        and (_is_version_test(stmt.test) or _calls_capability_check(stmt.test, module))  # type: ignore[attr-defined]
    )


# Calls that never return, as written (`pytest.skip(...)`, `sys.exit(...)`): the code after them does not run.
_LEAVING_CALLS = frozenset({("pytest", "skip"), ("pytest", "fail"), ("sys", "exit"), ("os", "_exit")})


def _leaves(stmt: ast.stmt) -> bool:
    if isinstance(stmt, (ast.Return, ast.Raise)):
        return True
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        func = stmt.value.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            return (func.value.id, func.attr) in _LEAVING_CALLS
        return isinstance(func, ast.Name) and func.id in {"exit", "quit"}
    return False


def _calls_capability_check(test: ast.expr, module: Module | None) -> bool:
    if module is None:
        return False
    for node in walk_nodes(test):
        if node.__class__ is ast.Call and node.func.__class__ is ast.Name:  # type: ignore[attr-defined]
            if capability_check(module, node.func.id):  # type: ignore[attr-defined]
                return True
    return False


def capability_check(module: Module, name: str) -> bool:
    """Whether the module's function `name` is a small function that tests what vLLM offers (a version,
    hasattr/getattr, find_spec, or an import under try/except) and returns the answer: `if not _has_x():
    return` guards what follows as a version test does. Asked only for names such tests call."""
    memo = module.memo.setdefault("capability-checks", {})
    if name not in memo:  # type: ignore[operator]
        found = False
        for node in module.of_type(ast.FunctionDef):
            if node.name != name or len(node.body) > 8:  # type: ignore[attr-defined]
                continue
            inner = walk_nodes(node)
            if not any(n.__class__ is ast.Return and n.value is not None for n in inner):  # type: ignore[attr-defined]
                continue
            tests = any(_is_version_test(n) for n in inner if isinstance(n, ast.expr))
            found = found or tests or any(n.__class__ is ast.Try and _guards_of(n.handlers) for n in inner)  # type: ignore[attr-defined]
        memo[name] = found  # type: ignore[index]
    return memo[name]  # type: ignore[index]


# The nodes the checks read.
_KEPT = (ast.Import, ast.ImportFrom, ast.Attribute, ast.Call, ast.Constant)
_STATEMENT_LISTS = ("body", "orelse", "finalbody")


def _blocks(module: Module) -> list[tuple[tuple[int, int], tuple[int, int], str]]:
    """(start, end, guard) of every guarded run of statements: the body of `if TYPE_CHECKING:`
    ("type-checking"), of a version or hasattr test and of `try/except ImportError` ("guarded"), and what
    follows `if <version test>: return` in the same block ("guarded"). Statements only, not expressions:
    a tenth of the nodes."""
    if "release-blocks" in module.memo:
        return module.memo["release-blocks"]  # type: ignore[return-value]
    found: list[tuple[tuple[int, int], tuple[int, int], str]] = []

    def block(statements: list[ast.stmt], guard: str) -> None:
        if statements:
            first, last = statements[0], statements[-1]
            found.append(((first.lineno, first.col_offset), (last.end_lineno or 0, last.end_col_offset or 0), guard))

    def visit(statements: list[ast.stmt]) -> None:
        for position, stmt in enumerate(statements):
            if _returns_unless(stmt, module):
                block(statements[position + 1 :], "guarded")  # `if not hasattr(...): return` guards what follows
            kind = stmt.__class__
            if kind is ast.If:
                if _is_type_checking(stmt.test):  # type: ignore[attr-defined]
                    block(stmt.body, "type-checking")  # type: ignore[attr-defined]
                elif _is_version_test(stmt.test) or _calls_capability_check(stmt.test, module):  # type: ignore[attr-defined]
                    block(stmt.body, "guarded")  # type: ignore[attr-defined]
                    block(stmt.orelse, "guarded")  # type: ignore[attr-defined]
            elif kind is ast.Try and _guards_of(stmt.handlers):  # type: ignore[attr-defined]
                block(stmt.body, "guarded")  # type: ignore[attr-defined]
            for field in _STATEMENT_LISTS:
                inner = getattr(stmt, field, None)
                if inner:
                    visit(inner)
            for handler in getattr(stmt, "handlers", ()):
                visit(handler.body)
            for case in getattr(stmt, "cases", ()):
                visit(case.body)

    if module.tree is not None:
        visit(module.tree.body)
    module.memo["release-blocks"] = found
    return found


def guard_of(module: Module, node: ast.AST) -> str | None:
    """The guard `node` runs under: "type-checking" inside any `if TYPE_CHECKING:` body, else "guarded"
    inside any guarded block, else None."""
    start = (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
    end = (getattr(node, "end_lineno", 0) or 0, getattr(node, "end_col_offset", 0) or 0)
    guard = None
    for first, last, kind in _blocks(module):
        if first <= start and end <= last:
            if kind == "type-checking":
                return kind
            guard = kind
    return guard


def _in_annotations(module: Module) -> set[int]:
    """id() of every node inside an annotation: never evaluated under `from __future__ import annotations`,
    and only type checkers read them."""
    if "release-annotations" in module.memo:
        return module.memo["release-annotations"]  # type: ignore[return-value]
    found: set[int] = set()
    for node in module.of_type(ast.arg, ast.AnnAssign, ast.FunctionDef, ast.AsyncFunctionDef):
        annotation = getattr(node, "annotation", None) or getattr(node, "returns", None)
        if annotation is not None:
            found.update(id(n) for n in walk_nodes(annotation))
    module.memo["release-annotations"] = found
    return found


def walk(module: Module, *kinds: type[ast.AST]) -> Iterator[Place]:
    """The module's nodes of `kinds` (imports, attributes, calls and constants by default) outside
    annotations, each with the guard it runs under (found when asked)."""
    skipped = _in_annotations(module)
    for kind in kinds or _KEPT:
        for node in module.of_type(kind):
            if id(node) not in skipped:
                yield Place(module, node)


class ReleaseCheck:
    """Every check of one plugin package against one release; `others` are the other indexed releases, to
    tell an override of a removed member from a method of the plugin's own."""

    def __init__(
        self,
        package: PluginPackage,
        index: ReleaseIndex,
        others: list[ReleaseIndex] | Callable[[], list[ReleaseIndex]],
        sites: CallSites | None = None,
    ) -> None:
        self.package = package
        self.index = index
        self._others = others  # a callable loads them when first needed (the plain run's shipped indexes)
        self.findings: list[Finding] = []
        self.tables = {name: self._bound_by_try(module, _runtime_aliases(module)) for name, module in self._modules()}
        self.plugin_classes = self._plugin_classes()
        self.callers = OverrideCallers(self, sites)
        self.sites = sites
        self._set_by_package: frozenset[str] | None = None

    def _bound_by_try(self, module: Module, table: dict[str, str]) -> dict[str, str]:
        """`table` with each name imported both in a `try:` block and in its `except ImportError:` fallback bound
        to the try block's import when that import succeeds: a module of the package itself, or a vLLM name
        the release has (`try: from pkg.adapter import X` / `except ImportError: from vllm.x import X`)."""
        tries = module.of_type(ast.Try)
        if not tries:
            return table
        table = dict(table)
        for node in tries:
            if not _guards_of(node.handlers):  # type: ignore[attr-defined]
                continue
            fallback = {
                alias.asname or alias.name
                for handler in node.handlers  # type: ignore[attr-defined]
                for stmt in handler.body
                for n in walk_nodes(stmt)
                if n.__class__ is ast.ImportFrom
                for alias in n.names  # type: ignore[attr-defined]
            }
            for stmt in node.body:  # type: ignore[attr-defined]
                if stmt.__class__ is not ast.ImportFrom or stmt.level or not stmt.module:  # type: ignore[attr-defined]
                    continue
                source = stmt.module  # type: ignore[attr-defined]
                for alias in stmt.names:  # type: ignore[attr-defined]
                    bound = alias.asname or alias.name
                    if bound in fallback and self._import_succeeds(source, alias.name):
                        table[bound] = f"{source}.{alias.name}"
        return table

    def _import_succeeds(self, source: str, name: str) -> bool:
        if source.split(".")[0] == "vllm":
            return not self._first_missing(f"{source}.{name}")
        return source in self.package.modules

    @cached_property
    def others(self) -> list[ReleaseIndex]:
        """The other indexed releases, newest first."""
        others = self._others() if callable(self._others) else self._others
        unique = {o.version: o for o in others if o.version != self.index.version}
        return sorted(unique.values(), key=lambda o: _version(o.version), reverse=True)

    @cached_property
    def groups(self) -> set[str]:
        """The entry-point groups of this release and the others: names, not paths."""
        return {group for release in [self.index, *self.others] for group in release.entry_point_groups}

    def _modules(self) -> Iterator[tuple[str, Module]]:
        for module in self.package.parsed():
            yield module.name, module

    def run(self) -> list[Finding]:
        for _name, module in self._modules():
            self.imports(module)
            self.attributes(module)
            self.calls(module)
            self.dotted_strings(module)
            self.environment_variables(module)
            self.patches(module)
        self.subclasses()
        self.logits_processor_interfaces()
        self.endpoint_routes()
        self.findings += check_patches(self.package, self.index, self.sites)
        return self.findings

    def report(self, code: str, place: Place, message: str, fix: str) -> None:
        if id(place.node) in self._dead(place.module):
            return  # code that never runs on this release: the fallback of a test the release passes
        if code not in _IMPORT_CODES and self.callers.other_release_adapter(place.module):
            return  # a module written for another release (`connector_085`) that nothing imports
        if place.guard == "guarded":
            if code != "vllm-import-missing":
                return  # a use the plugin tests for (hasattr, a version check, try/except) before making it
            code = "vllm-import-guarded"
            message += "; the plugin guards this import, so what depends on it silently switches off on this release"
            fix = f"nothing to do if the plugin does without it on this release; otherwise: {fix}"
        self.findings.append(finding(code, place.where, message, fix))

    @property
    def release(self) -> str:
        return f"vLLM {self.index.version}"

    def _dead(self, module: Module) -> set[int]:
        """id() of the nodes of `module` that never run on this release: the `except ImportError:` branch of a
        try block whose imports the release has, and what follows `getattr(m, "New", None) or` in an `or`
        chain when the release has m.New (`getattr(base, "TransferJob", None) or base.JobMetadata`)."""
        memo = self.__dict__.setdefault("_dead_memo", {})
        if module.name not in memo:
            dead = dead_fallbacks(
                module, lambda source, name: not self._first_missing(f"{source}.{name}" if name else source)
            )
            table = self.tables[module.name]
            for node in module.of_type(ast.Try):
                if self._binding_try(module, node):  # type: ignore[arg-type]
                    for handler in node.handlers:  # type: ignore[attr-defined]
                        dead.update(id(n) for stmt in handler.body for n in walk_nodes(stmt))
            for node in module.of_type(ast.BoolOp):
                if node.op.__class__ is not ast.Or:  # type: ignore[attr-defined]
                    continue
                values = node.values  # type: ignore[attr-defined]
                for position, value in enumerate(values[:-1]):
                    if self._getattr_exists(value, table):
                        dead.update(id(n) for later in values[position + 1 :] for n in walk_nodes(later))
                        break
            memo[module.name] = dead
        return memo[module.name]

    def _binding_try(self, module: Module, node: ast.Try) -> bool:
        """`try: vllm_function(new_kwarg=...)` / `except TypeError: vllm_function(old_kwarg=...)` where every
        vLLM call of the try block binds to the release's signature: the fallback never runs there."""
        if not any(
            h.type is not None and "TypeError" in {getattr(n, "id", None) for n in walk_nodes(h.type)}
            for h in node.handlers
        ):
            return False
        calls = [n for stmt in node.body for n in walk_nodes(stmt) if n.__class__ is ast.Call]
        found = [(call, self.callee(module, call.func)) for call in calls]  # type: ignore[attr-defined]
        checked = [(call, f) for call, f in found if f is not None]
        if not checked:
            return False
        for call, (_symbol, signature) in checked:
            if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):  # type: ignore[attr-defined]
                return False
            if call_problem(signature, len(call.args), [k.arg for k in call.keywords if k.arg]) is not None:  # type: ignore[attr-defined]
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
        return self.index.resolve(f"{owner}.{node.args[1].value}").kind not in {"missing", "unknown"}

    def _elsewhere(self, qualname: str) -> str:
        found = sorted((o.version for o in self.others if o.resolve(qualname).exists), key=_version)
        return f" (it exists in {', '.join(found)})" if found else ""

    # -- endpoint routes -----------------------------------------------------------------------------------

    def endpoint_routes(self) -> None:
        """A route of an endpoint plugin on one of vLLM's own paths, on a release where vLLM's route wins."""
        core = set(self.index.registry("http_routes"))
        if not core or vllm_facts.endpoint_routes_replace_core(self.index.version):
            return
        if not self.package.entry_points_in(ENDPOINT):
            return
        for _name, module in self._modules():
            if module.tree is None or module.rel.startswith("tests/"):
                continue
            for route, node in declared_routes(module.tree):
                if route in core:
                    self.report(
                        "vllm-endpoint-route-shadowed",
                        Place(module, node, None),
                        f"{route} is also a route of {self.release}'s own server. "
                        + facts.fact("endpoint-route-order").text(),
                        "serve it under a path of the plugin's own, or declare a vLLM range from 0.32.0",
                    )

    # -- imports -------------------------------------------------------------------------------------------

    def imports(self, module: Module) -> None:
        for place in walk(module, ast.Import, ast.ImportFrom):
            node = place.node
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                targets = [f"{node.module}.{alias.name}" if alias.name != "*" else node.module for alias in node.names]
            else:
                continue
            if place.guard == "type-checking":
                continue
            for target in targets:
                if target.split(".")[0] != "vllm":
                    continue
                missing = self._first_missing(target)
                if missing:
                    self.report(
                        "vllm-import-missing",
                        place,
                        f"{missing} does not exist in {self.release}{self._elsewhere(missing)}",
                        _V1_LOGITS_FIX
                        if missing.startswith(V1_LOGITS_MODULE)
                        else "import it from where this release defines it, or guard the import for the releases "
                        "that have it",
                    )

    def _first_missing(self, qualname: str) -> str | None:
        """The shortest prefix of `qualname` the release does not have, or None when all of it resolves."""
        parts = qualname.split(".")
        for cut in range(2, len(parts) + 1):
            prefix = ".".join(parts[:cut])
            symbol = self.index.resolve(prefix)
            if symbol.kind == "missing":
                if self._inherited_from_outside(".".join(parts[: cut - 1]), parts[cut - 1]):
                    return None
                return prefix
            if symbol.kind == "unknown":
                return prefix if self._enum_member_missing(".".join(parts[: cut - 1]), parts[cut - 1]) else None
        return None

    def _enum_member_missing(self, owner: str, name: str) -> bool:
        """`owner` is one of vLLM's enums and has no member or attribute `name`. The index marks a class with a
        metaclass as having generated attributes, but an enum's members are the names its body binds
        (`AttentionBackendEnum.TURBO_ATTN` on a release without that backend raises AttributeError)."""
        symbol = self.index.resolve(owner)
        if symbol.kind != "class" or not name.isupper():
            return False
        order = self.index.mro(symbol)[0]
        outside = {b for cls in order for b in self.index.class_entry(cls).get("b", ()) if b.split(".")[0] != "vllm"}
        if not any(b.startswith("enum.") for b in outside) or outside - _ENUM_BASES:
            return False  # not an enum, or a base outside vLLM and the standard enums may give it the name
        return self.index.find_member(symbol, name)[0] is None

    def _inherited_from_outside(self, owner: str, name: str) -> bool:
        """`name` is what a vLLM class gets from a base outside vLLM the index does not list members of:
        `register` of an `abc.ABC` class (a virtual subclass), an Enum's `__members__`."""
        symbol = self.index.resolve(owner)
        if symbol.kind != "class":
            return False
        for cls in self.index.mro(symbol)[0]:
            for base in self.index.class_entry(cls).get("b", ()):
                if name in _OUTSIDE_MEMBERS.get(base, ()):
                    return True
        return False

    # -- attributes ----------------------------------------------------------------------------------------

    def attributes(self, module: Module) -> None:
        table = self.tables[module.name]
        attributes = module.of_type(ast.Attribute)
        inner = {id(n.value) for n in attributes}  # type: ignore[attr-defined]
        shadowed: set[int] | None = None
        for node in attributes:
            if id(node) in inner or node.ctx.__class__ is not ast.Load:  # type: ignore[attr-defined]
                continue  # setting an attribute never raises
            head = _head(node)  # type: ignore[arg-type]
            if head.__class__ is not ast.Name or head.id not in table:  # type: ignore[attr-defined]
                continue
            name = qualified(node, table)  # type: ignore[arg-type]
            if not name or name.split(".")[0] != "vllm" or id(node) in _in_annotations(module):
                continue
            place = Place(module, node)
            if place.guard == "type-checking":
                continue
            if shadowed is None:
                shadowed = _shadowed_heads(module)
            if id(node) in shadowed:
                continue
            missing = self._first_missing(name)
            imported = table[head.id]  # type: ignore[attr-defined]
            if missing and missing in self.set_by_package():
                continue  # the plugin puts it there itself (`Scheduler._original = Scheduler.schedule`)
            if missing and len(missing) > len(imported) and not _is_dunder(missing.rsplit(".", 1)[-1]):
                self.report(
                    "vllm-attribute-missing",
                    place,
                    f"{missing} does not exist in {self.release}{self._elsewhere(missing)}: reading it raises "
                    "AttributeError",
                    "use what this release offers instead, or test for it with hasattr() on the releases that lack it",
                )

    def _attribute_stores(self) -> Iterator[tuple[str, ast.expr, str]]:
        """Every attribute the package assigns: (module, the owner's expression, the attribute's name), from
        `owner.name = ...` and `setattr(owner, "name", ...)`."""
        for name, module in self._modules():
            for node in module.of_type(ast.Attribute, ast.Call):
                if node.__class__ is ast.Attribute and node.ctx.__class__ is ast.Store:  # type: ignore[attr-defined]
                    yield name, node.value, node.attr  # type: ignore[attr-defined]
                elif (
                    node.__class__ is ast.Call
                    and isinstance(node.func, ast.Name)  # type: ignore[attr-defined]
                    and node.func.id == "setattr"  # type: ignore[attr-defined]
                    and len(node.args) >= 2  # type: ignore[attr-defined]
                    and isinstance(node.args[1], ast.Constant)  # type: ignore[attr-defined]
                    and isinstance(node.args[1].value, str)  # type: ignore[attr-defined]
                ):
                    yield name, node.args[0], node.args[1].value  # type: ignore[attr-defined]

    def set_by_package(self) -> frozenset[str]:
        """The vllm.* attributes the package assigns anywhere: `vllm.X.attr = ...` and `setattr(vllm.X, "attr",
        ...)`, by qualified name. Reading one is reading what the plugin itself stored."""
        if self._set_by_package is None:
            found: set[str] = set()
            for name, owner, attr in self._attribute_stores():
                qualified_owner = qualified(owner, self.tables[name])
                if qualified_owner and qualified_owner.split(".")[0] == "vllm":
                    found.add(f"{qualified_owner}.{attr}")
            self._set_by_package = frozenset(found)
        return self._set_by_package

    # -- calls ---------------------------------------------------------------------------------------------

    def callee(self, module: Module, func: ast.expr) -> tuple[Symbol, Signature] | None:
        head = _head(func)
        if head.__class__ is not ast.Name or head.id not in self.tables[module.name]:  # type: ignore[attr-defined]
            return None
        name = qualified(func, self.tables[module.name])
        if not name or name.split(".")[0] != "vllm":
            return None
        symbol = self.index.resolve(name)
        signature = self.index.signature(symbol)
        if signature is None:
            return None
        if symbol.kind == "member":
            if signature.decorator in {"", "p"}:
                return None  # an instance method read through the class: called on an instance elsewhere
            signature = signature.bound()
        return symbol, signature

    def calls(self, module: Module) -> None:
        for node in module.of_type(ast.Call):
            if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):  # type: ignore[attr-defined]
                continue
            found = self.callee(module, node.func)  # type: ignore[attr-defined]
            if found is None or id(node) in _in_annotations(module):
                continue
            place = Place(module, node)
            if place.guard == "type-checking":
                continue
            symbol, signature = found
            problem = call_problem(signature, len(node.args), [k.arg for k in node.keywords if k.arg])
            label = symbol.qualname if symbol.kind != "member" else f"{symbol.module}.{symbol.name}"
            if problem and _other_branch_binds(module, node, signature):  # type: ignore[arg-type]
                continue  # the other branch of an if/else makes the call this release takes
            if problem:
                self.report(
                    "vllm-call-signature",
                    place,
                    f"{label}{signature.text()} in {self.release}: {problem}",
                    "pass the arguments this release's signature takes",
                )
                continue
            constants = string_constants(module)
            for param, argument in _bind(signature, node):
                if isinstance(argument, ast.Name) and argument.id in constants:
                    argument = ast.Constant(constants[argument.id])  # BACKEND_NAME = "MY_ATTN"
                wrong = self._wrong_literal(symbol, param, argument)
                if wrong:
                    self.report(
                        "vllm-argument-type",
                        place,
                        f"{label} takes {param.name} as {' | '.join(param.types)} in {self.release}, not {wrong}",
                        f"pass a {' | '.join(t for t in param.types if t != 'None')} on this release",
                    )

    def _wrong_literal(self, symbol: Symbol, param, argument: ast.expr) -> str | None:
        if not (isinstance(argument, ast.Constant) and isinstance(argument.value, str)) or not param.types:
            return None
        if _ACCEPTS_STR & set(param.types):
            return None
        for type_name in param.types:
            if type_name == "None":
                continue
            resolved = self.index.resolve(f"{symbol.module}.{type_name}")
            if resolved.kind != "class":
                return None  # a type alias or a name the index cannot see: say nothing
        return f"a string ('{argument.value}')"

    # -- patches -------------------------------------------------------------------------------------------

    def patches(self, module: Module) -> None:
        """Replacements of vLLM's functions and methods (`Cls.method = fn`, `setattr(module, "f", fn)`),
        compared with what they replace in this release: the target must exist, and the replacement must
        take the arguments vLLM's own calls of the original pass."""
        table = self.tables[module.name]
        functions: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda]] = {}
        for assignment in replacements(module):
            node, owner_expr, attr, value = assignment
            owner = qualified(owner_expr, table) if isinstance(owner_expr, ast.Name | ast.Attribute) else None
            if not owner or owner.split(".")[0] != "vllm" or _is_dunder(attr):
                continue
            owner_symbol = self.index.resolve(owner)
            if owner_symbol.kind not in {"class", "module"}:
                continue
            if not functions:
                functions = functions_by_name(module)
            replacement = replacement_function(value, node, functions)
            if replacement is None:
                continue  # a value (a flag, a setting) or a wrapper's result: nothing to compare
            target = self.index.resolve(f"{owner}.{attr}")
            place = Place(module, node)
            label = f"{owner}.{attr}"
            if target.kind == "missing":
                self.report(
                    "monkeypatch-target-missing",
                    place,
                    f"the plugin replaces {label}, which {self.release} does not have{self._elsewhere(label)}: "
                    "vLLM never calls the replacement, so what it adds does not happen",
                    f"patch what this release calls instead; {_PATCH_FIX}",
                )
                continue
            original = self.index.signature(target) if target.kind in {"member", "function"} else None
            if original is None or original.decorator == "p":
                continue
            is_method = target.kind == "member"
            mine = Signature.parse(
                _plugin_signature(replacement)
                if not isinstance(replacement, ast.Lambda)
                else _lambda_signature(replacement)
            )
            if is_method and original.decorator in {"c", "s"} and not mine.decorator:
                mine = Signature(mine.params, original.decorator)  # wrapped in classmethod()/staticmethod()
            base = original if is_method else Signature.parse("__f," + _signature_text(original))
            theirs = mine if is_method else Signature.parse("__f," + _signature_text(mine))
            problem = override_problem(base, theirs)
            if problem is None:
                continue
            breaking = self._breaking_site(owner_symbol, attr, theirs.bound(), is_method)
            if breaking is not None:
                site, why = breaking
                self.report(
                    "monkeypatch-call-signature",
                    place,
                    f"the replacement of {label} cannot be called as {self.release} calls the original "
                    f"{attr}{original.text()}: at {site.where} {why}: TypeError",
                    f"take the parameters {label} has in this release (or *args, **kwargs, handed to the "
                    f"original); {_PATCH_FIX}",
                )
            else:
                self.report(
                    "monkeypatch-signature-changed",
                    place,
                    f"the replacement of {label} does not match the original {attr}{original.text()} of "
                    f"{self.release}: {problem}",
                    f"take the parameters {label} has in this release; {_PATCH_FIX}",
                )

    def _breaking_site(self, owner: Symbol, attr: str, replacement: Signature, is_method: bool):
        """A call of the original in the installed vLLM that the replacement cannot bind and that surely
        reaches it: `self.attr(...)` written in the patched class or one deriving from it, or, for a module
        function, a call written in its own module. None without the installed vLLM's call sites."""
        sites = self.callers.sites
        if sites is None:
            return None
        for site in sites.of(attr):
            why = None if site.spread else call_problem(replacement, site.positional, list(site.keywords))
            if why is None:
                continue
            if is_method:
                if not (site.on_self and site.cls):
                    continue
                cls = self.index.resolve(site.cls)
                if cls.kind == "class" and owner.qualname in {c.qualname for c in self.index.mro(cls)[0]}:
                    return site, why
            elif site.module == owner.qualname and not site.on_self and sites.bare(site, attr):
                return site, why
        return None

    # -- dotted strings ------------------------------------------------------------------------------------

    def dotted_strings(self, module: Module) -> None:
        loggers: set[int] | None = None
        for node in module.of_type(ast.Constant):
            value = node.value  # type: ignore[attr-defined]
            if not isinstance(value, str) or not value.startswith("vllm.") or not DOTTED.fullmatch(value):
                continue
            if value in self.groups or id(node) in _in_annotations(module):
                continue  # an entry-point group ("vllm.general_plugins") is a name, not a path
            if loggers is None:
                loggers = _logger_names(module) | _probed_modules(module)
            if id(node) in loggers:
                continue  # a logger's name ("vllm.plugins.fx"), or a module asked whether it exists
            place = Place(module, node)
            if place.guard == "type-checking":
                continue
            missing = self._first_missing(node.value.replace(":", "."))
            if missing:
                self.report(
                    "vllm-dotted-path-missing",
                    place,
                    f"'{node.value}' names {missing}, which does not exist in {self.release}{self._elsewhere(missing)}",
                    "point it at where this release defines it",
                )

    # -- environment variables ---------------------------------------------------------------------------

    def environment_variables(self, module: Module) -> None:
        """A `VLLM_*` variable the plugin reads or sets (`os.environ[...]`, `os.getenv`, `os.environ.get`,
        `setdefault`, `pop`, `os.putenv`) that the release does not define: vLLM's environment check logs it in
        every engine, and refuses it under `--fail-on-environ-validation`."""
        known = self.index.environment_variables
        if not known:
            return
        for node in module.of_type(ast.Call, ast.Subscript):
            key = _environment_key(node)
            if key is None or not _VLLM_VARIABLE.fullmatch(key) or key in known:
                continue
            self.report(
                "env-unknown-vllm-variable",
                Place(module, node),
                f"{key} is in vLLM's VLLM_ namespace, which {self.release} does not define: wherever it is set, "
                f'every engine logs "Unknown vLLM environment variable detected: {key}", and refuses to start '
                "under --fail-on-environ-validation",
                "name the plugin's own variables outside the VLLM_ prefix (the package's name in capitals, for "
                "example), reading the old name for a release with a deprecation warning",
            )

    # -- subclasses ----------------------------------------------------------------------------------------

    def _plugin_classes(self) -> dict[str, tuple[Module, ast.ClassDef]]:
        found = {}
        for _name, module in self._modules():
            for node in module.of_type(ast.ClassDef):
                found[f"{module.name}.{node.name}"] = (module, node)  # type: ignore[attr-defined]
        return found

    def bases(self, module: Module, node: ast.ClassDef) -> list[str]:
        memo = self.__dict__.setdefault("_bases_memo", {})
        if id(node) not in memo:
            table = self._class_tables.get(module.name) or self.tables[module.name]
            bases = (qualified(b.value if isinstance(b, ast.Subscript) else b, table) for b in node.bases)
            memo[id(node)] = [q for q in bases if q]
        return memo[id(node)]

    @property
    def _class_tables(self) -> dict[str, dict[str, str]]:
        """Per module: its import table plus its own classes, the names a class statement's bases use."""
        if "_class_tables_memo" not in self.__dict__:
            own: dict[str, dict[str, str]] = {}
            for qualname in self.plugin_classes:
                module_name, _, name = qualname.rpartition(".")
                own.setdefault(module_name, {})[name] = qualname
            self.__dict__["_class_tables_memo"] = {m: {**self.tables[m], **names} for m, names in own.items()}
        return self.__dict__["_class_tables_memo"]

    def lineage(self, qualname: str, seen: frozenset[str] = frozenset()) -> tuple[set[str], list[Symbol]]:
        """(members the plugin's classes in this lineage define, the vLLM classes they derive from)."""
        module, node = self.plugin_classes[qualname]
        members = class_body_names(node)
        vllm_bases: list[Symbol] = []
        for base in self.bases(module, node):
            if base in self.plugin_classes and base not in seen:
                more, bases = self.lineage(base, seen | {qualname})
                members |= more
                vllm_bases += bases
            elif base.split(".")[0] == "vllm":
                symbol = self.index.resolve(base)
                if symbol.kind == "class":
                    vllm_bases.append(symbol)
        return members, vllm_bases

    def subclasses(self) -> None:
        subclassed = {b for q, (m, n) in self.plugin_classes.items() for b in self.bases(m, n)}
        for qualname, (module, node) in self.plugin_classes.items():
            members, bases = self.lineage(qualname)
            if not bases:
                continue
            place = Place(module, node, None)
            abstract_here = any(
                isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
                and any("abstractmethod" in ast.unparse(d) for d in s.decorator_list)
                for s in node.body
            )
            if qualname not in subclassed and not abstract_here:
                self._abstract(place, node, members, bases)
            self._overrides(module, node, bases)
            self._super_calls(module, node, bases)
            self._self_attributes(module, node, qualname)

    def logits_processor_interfaces(self) -> None:
        """On a release whose only runner is Model Runner V2, an entry point of `vllm.logits_processors` whose class
        does not derive from V2's `LogitsProcessor`: the loader refuses it and no engine starts. (Where the V1
        runner exists too, which of the two loads the class depends on the platform: the live probe checks it.)"""
        if self.index.has_module(V1_LOGITS_MODULE) or not self.index.resolve(V2_LOGITS_BASE).exists:
            return
        for ep in self.package.entry_points_in(LOGITS_GROUP):
            qualname = self._entry_class(ep.value)
            if qualname is None:
                continue  # not a class of the plugin's own: nothing proves what it derives from
            module, node = self.plugin_classes[qualname]
            names = self._base_names(qualname)
            if names is None or any(self._is_v2_logits(name) for name in names):
                continue
            v1 = [name for name in names if name.startswith(V1_LOGITS_MODULE)]
            derives = (
                f"derives from {v1[0]}, the V1 runner's interface, which {self.release} removed"
                if v1
                else ("derives from no LogitsProcessor base")
            )
            self.report(
                "logits-processor-not-v2",
                Place(module, node, None),
                f"{node.name}, the `{ep.name}` entry point of {LOGITS_GROUP}, {derives}: Model Runner V2 is "
                f"{self.release}'s only runner, and its loader refuses a class that is not a subclass of "
                f"{V2_LOGITS_PUBLIC} with ValueError when the front end starts, so no engine of a generation "
                "model starts in the environment",
                _V1_LOGITS_FIX,
            )

    def _entry_class(self, value: str) -> str | None:
        """The plugin class an entry point's `module:attr` names (through one re-export), or None."""
        module_name, _, attr = value.partition(":")
        module_name, attr = module_name.strip(), attr.strip()
        if not attr or "." in attr:
            return None
        direct = f"{module_name}.{attr}"
        if direct in self.plugin_classes:
            return direct
        exported = self.tables.get(module_name, {}).get(attr)
        return exported if exported in self.plugin_classes else None

    def _base_names(self, qualname: str) -> list[str] | None:
        """Every base named in the plugin's lineage of `qualname` that is not a plugin class, dotted; None when
        one of them is neither vLLM's nor a builtin (another library's class could derive from anything)."""
        found: list[str] = []
        for module, node, outside in self._walk_lineage(qualname):
            if len(node.bases) != len(self.bases(module, node)):
                return None  # a base written as an expression the import table cannot name
            for base in outside:
                if base.split(".")[0] != "vllm" and base not in _NO_MEMBER_BASES:
                    return None
                found.append(base)
        return found

    def _walk_lineage(self, qualname: str) -> Iterator[tuple[Module, ast.ClassDef, list[str]]]:
        """Each plugin class in `qualname`'s lineage, with the bases it names that are not plugin classes."""
        pending, seen = [qualname], set()
        while pending:
            current = pending.pop()
            if current in seen:
                continue
            seen.add(current)
            module, node = self.plugin_classes[current]
            bases = self.bases(module, node)
            pending += [base for base in bases if base in self.plugin_classes]
            yield module, node, [base for base in bases if base not in self.plugin_classes]

    def _is_v2_logits(self, name: str) -> bool:
        symbol = self.index.resolve(name)
        if symbol.kind != "class":
            return False
        return any(cls.qualname == V2_LOGITS_BASE for cls in self.index.mro(symbol)[0])

    def _plugin_lineage(self, qualname: str) -> tuple[list[ast.ClassDef], list[Symbol]] | None:
        """(the plugin's classes in `qualname`'s lineage, the vLLM classes they derive from), or None when a
        base is neither (a class of torch or another library, a name the index cannot resolve to a class)."""
        classes: list[ast.ClassDef] = []
        vllm_bases: list[Symbol] = []
        for _module, node, outside in self._walk_lineage(qualname):
            classes.append(node)
            for base in outside:
                if base.split(".")[0] == "vllm" and (symbol := self.index.resolve(base)).kind == "class":
                    vllm_bases.append(symbol)
                elif base not in _NO_MEMBER_BASES:
                    return None
        return classes, vllm_bases

    @cached_property
    def _children(self) -> dict[str, list[str]]:
        """Plugin class -> the plugin's classes that name it as a base."""
        children: dict[str, list[str]] = {}
        for name, (module, node) in self.plugin_classes.items():
            for base in self.bases(module, node):
                if base in self.plugin_classes:
                    children.setdefault(base, []).append(name)
        return children

    def _descendants(self, qualname: str) -> list[str]:
        """The plugin's classes deriving from `qualname`, at any depth."""
        found: list[str] = []
        pending = list(self._children.get(qualname, ()))
        while pending:
            current = pending.pop()
            if current not in found and current != qualname:
                found.append(current)
                pending += self._children.get(current, ())
        return found

    @cached_property
    def _stored_by_package(self) -> frozenset[str]:
        """Every attribute name the package assigns on any object (`x.name = ...`, `setattr(x, "name", ...)`)."""
        return frozenset(attr for _module, _owner, attr in self._attribute_stores())

    def _self_attributes(self, module: Module, node: ast.ClassDef, qualname: str) -> None:
        """`self.X` read in a method of a class deriving from vLLM classes where nothing defines X: not the
        plugin's classes of the lineage (members, class attributes, anything the package assigns), not any
        vLLM ancestor in this release (`ReleaseIndex.instance_attribute`). Silent whenever a base is outside
        the index, or a class of the lineage has a `__getattr__` or sets attributes by computed name."""
        lineage = self._plugin_lineage(qualname)
        if lineage is None or not lineage[1]:
            return
        classes, bases = list(lineage[0]), list(lineage[1])
        for descendant in self._descendants(qualname):  # what a subclass defines, a read in the base may mean
            more = self._plugin_lineage(descendant)
            if more is None:
                return
            classes += more[0]
            bases += more[1]
        defined = set(self._stored_by_package)
        for cls in classes:
            defined |= class_body_names(cls)
            for stmt in cls.body:
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and sets_computed_attributes(stmt):
                    return
        if defined & {"__getattr__", "__getattribute__", "__slots__"}:
            return
        reported: set[str] = set()
        for method in node.body:
            if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) or not method.args.args:
                continue
            if method.args.args[0].arg != "self" or any(
                getattr(d, "id", None) in {"staticmethod", "classmethod"} for d in method.decorator_list
            ):
                continue
            for read in walk_nodes(method):
                if not (
                    isinstance(read, ast.Attribute)
                    and isinstance(read.ctx, ast.Load)
                    and isinstance(read.value, ast.Name)
                    and read.value.id == "self"
                ):
                    continue
                name = read.attr
                if name in defined or name in reported or _is_dunder(name):
                    continue
                if any(self.index.instance_attribute(base, name) is not False for base in bases):
                    continue
                reported.add(name)
                owners = ", ".join(dict.fromkeys(base.name for base in bases))
                self.report(
                    "vllm-self-attribute-missing",
                    Place(module, read),
                    f"{node.name}.{method.name} reads self.{name}, which neither the plugin's classes nor "
                    f"{owners} define in {self.release}{self._elsewhere_on(bases, name)}: reading it raises "
                    "AttributeError",
                    f"read what {owners} has in this release instead (renamed?), or assign self.{name} yourself",
                )

    def _elsewhere_on(self, bases: list[Symbol], name: str) -> str:
        """ " (0.31.0 has it)" when another indexed release's version of the bases defines `name`."""
        for other in self.others:
            for base in bases:
                symbol = other.resolve(base.qualname)
                if symbol.kind == "class" and other.instance_attribute(symbol, name):
                    return f" ({other.version} has it)"
        return ""

    def _abstract(self, place: Place, node: ast.ClassDef, members: set[str], bases: list[Symbol]) -> None:
        left: set[str] = set()
        concrete: set[str] = set()
        for base in bases:
            abstract = self.index.abstract_methods(base)
            left |= abstract
            for cls in self.index.mro(base)[0]:
                concrete |= set(self.index.class_entry(cls).get("m", {})) - abstract
        missing = sorted(left - concrete - members - self._left_abstract_by_vllm(bases))
        if missing and self._only_read_from(place.module, node):
            return  # the class is a namespace of methods the plugin copies elsewhere: nothing creates one
        if missing and self._replaces_abstract_layer(node):
            return  # it replaces (register_oot) an in-tree class vLLM cannot create either: vLLM never does
        if missing:
            names = ", ".join(f"{m}()" for m in missing)
            self.report(
                "vllm-abstract-missing",
                place,
                f"{node.name} does not implement {names}, abstract in {self._owner_of(bases, missing[0])} in "
                f"{self.release}: creating a {node.name} raises TypeError",
                f"implement {names}",
            )

    def _left_abstract_by_vllm(self, bases: list[Symbol]) -> set[str]:
        """Abstract methods of `bases` that a class of vLLM's own deriving from them leaves unimplemented while
        no vLLM class derives from it further: vLLM uses such classes as classes, never creating one (an
        attention backend's static methods: GDNAttentionBackend has no get_impl_cls), so nothing enforces them."""
        memo = self.__dict__.setdefault("_left_memo", {})
        key = tuple(b.qualname for b in bases)
        if key not in memo:
            leaves = _leaf_classes(self.index)
            wanted = {(b.module, b.name) for b in bases}
            left: set[str] = set()
            for leaf in leaves:
                order = self.index.mro(leaf)[0]
                if wanted & {(c.module, c.name) for c in order[1:]}:
                    left |= self.index.abstract_methods(leaf)
            memo[key] = left
        return memo[key]

    def _replaces_abstract_layer(self, node: ast.ClassDef) -> bool:
        """The class stands in for the in-tree class `Name` (registered with `register_oot`, directly or
        through a `{"Name": Cls}` table, or assigned over it: `vllm_module.Name = Cls`), and the release leaves
        that class abstract: vLLM uses the stand-in where it would use `Name` itself, which it never creates
        (a layer's subclasses are looked up under their own names: QwenGatedDeltaNetAttention, not
        GatedDeltaNetAttention; a factory class is asked for its get_moe_method, never instantiated)."""
        names: set[str] = set()
        for module in self.package.parsed():
            for _statement, owner, attr, value in replacements(module):
                if isinstance(value, ast.Name) and value.id == node.name and attr[:1].isupper():
                    qualname = qualified(owner, self.tables[module.name]) if isinstance(owner, ast.Name) else None
                    if qualname and qualname.split(".")[0] == "vllm":
                        names.add(attr)
            for n in module.of_type(ast.Dict, ast.Call):
                if n.__class__ is ast.Dict:
                    for key, value in zip(n.keys, n.values, strict=True):  # type: ignore[attr-defined]
                        if isinstance(key, ast.Constant) and isinstance(value, ast.Name) and value.id == node.name:
                            names.add(str(key.value))
                elif getattr(n.func, "attr", None) == "register_oot":  # type: ignore[attr-defined]
                    given = {k.arg: k.value for k in n.keywords}  # type: ignore[attr-defined]
                    target = given.get("name")
                    values = [*n.args, *given.values()]  # type: ignore[attr-defined]
                    if isinstance(target, ast.Constant) and any(
                        isinstance(v, ast.Name) and v.id == node.name for v in values
                    ):
                        names.add(str(target.value))
        if not names:
            return False
        classes = self.callers.vllm_classes
        return all(any(self.index.abstract_methods(symbol) for symbol in classes.get(name, ())) for name in names)

    def _only_read_from(self, module: Module, node: ast.ClassDef) -> bool:
        """Whether the package reads attributes of the class (`Cls.method`) and otherwise only names it as a
        base or in an annotation: it never calls, passes, returns or stores it, nor names it in a string or an
        entry point, so nothing creates an instance. A class the package never names at all may be named from
        outside (`--scheduler-cls pkg.mod.Cls`), and is not one."""
        name = node.name
        qualname = f"{module.name}.{name}"
        if any(name in ep.value for ep in self.package.entry_points):
            return False
        read = False
        for other in self.package.modules.values():
            if other.tree is None:
                continue
            names = {name}
            names |= {
                a.asname
                for n in other.of_type(ast.ImportFrom)
                for a in n.names  # type: ignore[attr-defined]
                if a.name == name and a.asname
            }
            skipped = _in_annotations(other)
            attribute_heads = {
                id(n.value)  # type: ignore[attr-defined]
                for n in other.of_type(ast.Attribute)
                if n.value.__class__ is ast.Name  # type: ignore[attr-defined]
            }
            allowed = set(attribute_heads)
            for n in other.of_type(ast.ClassDef):
                allowed.update(id(b) for b in n.bases)  # type: ignore[attr-defined]
            for n in walk_nodes(other.tree):
                if n.__class__ is ast.Name and n.id in names:  # type: ignore[attr-defined]
                    if id(n) not in allowed | skipped:
                        return False
                    read = read or (n.__class__ is ast.Name and id(n) in attribute_heads)
                if (
                    n.__class__ is ast.Constant
                    and isinstance(n.value, str)  # type: ignore[attr-defined]
                    and name in n.value  # type: ignore[attr-defined]
                    and (qualname in n.value.replace(":", ".") or n.value == name)  # type: ignore[attr-defined]
                ):
                    return False
        return read

    def _owner_of(self, bases: list[Symbol], member: str) -> str:
        for base in bases:
            owner, _sig = self.index.find_member(base, member)
            if owner is not None:
                return owner.name
        return bases[0].name

    def _overrides(self, module: Module, node: ast.ClassDef, bases: list[Symbol]) -> None:
        for stmt in node.body:
            if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if stmt.name.startswith("__") and stmt.name.endswith("__"):
                continue
            place = Place(module, stmt, None)
            owner, text = self._find(bases, stmt.name)
            if owner is None:
                self._orphaned(place, node, stmt.name, bases)
                continue
            self._moved(place, node, stmt.name, bases)
            if text is not None and not text.startswith("@p"):
                base, mine = Signature.parse(text), Signature.parse(_plugin_signature(stmt))
                problem = override_problem(base, mine)
                if problem and self.callers.can_call(f"{module.name}.{node.name}", stmt.name, mine, base):
                    self.report(
                        "vllm-override-signature",
                        place,
                        f"{node.name}.{stmt.name} overrides {owner.name}.{stmt.name}"
                        f"{Signature.parse(text).text()} of {self.release}: {problem}",
                        f"take the parameters {owner.name}.{stmt.name} has in this release",
                    )

    def _find(self, bases: list[Symbol], name: str) -> tuple[Symbol | None, str | None]:
        for base in bases:
            owner, text = self.index.find_member(base, name)
            if owner is not None:
                return owner, text
        return None, None

    def _orphaned(self, place: Place, node: ast.ClassDef, member: str, bases: list[Symbol]) -> None:
        if not all(self.index.mro(base)[1] for base in bases):
            return  # a base outside vLLM may define it
        for other in self.others:
            for base in bases:
                there = other.resolve(base.qualname)
                if there.kind == "class" and other.find_member(there, member)[0] is not None:
                    newer = _version(other.version) > _version(self.index.version)
                    code = "vllm-override-not-yet" if newer else "vllm-override-orphaned"
                    when = f"added in {other.version}" if newer else f"still there in {other.version}"
                    self.report(
                        code,
                        place,
                        f"{node.name}.{member} overrides {base.name}.{member}, which {self.release} does not have "
                        f"({when}): vLLM {self.index.version} never calls it",
                        "move what it does to where this release calls it"
                        if not newer
                        else "nothing to do if the plugin works without it on this release",
                    )
                    return

    def _moved(self, place: Place, node: ast.ClassDef, member: str, bases: list[Symbol]) -> None:
        """The overridden member was defined by another class of the hierarchy in an earlier release."""
        for other in self.others:
            if _version(other.version) > _version(self.index.version):
                continue
            for base in bases:
                owner = self.index.find_member(base, member)[0]
                there = other.resolve(base.qualname)
                if owner is None or there.kind != "class":
                    continue
                previous = other.find_member(there, member)[0]
                if previous is not None and previous.qualname != owner.qualname:
                    self.report(
                        "vllm-override-moved",
                        place,
                        f"{node.name}.{member} overrides {owner.name}.{member} in {self.release}; in vLLM "
                        f"{other.version} it overrides {previous.name}.{member}: the override still runs, and "
                        f"super().{member} reaches {owner.name}'s version",
                        f"check that the override does what it did with {previous.name}'s version",
                    )
                    return

    def _super_calls(self, module: Module, node: ast.ClassDef, bases: list[Symbol]) -> None:
        if not all(self.index.mro(base)[1] for base in bases):
            return
        own = {b for b in self.bases(module, node) if b in self.plugin_classes}
        if own:
            return  # super() may land in the plugin's own class first
        for stmt in node.body:
            if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for call in ast.walk(stmt):
                if (
                    isinstance(call, ast.Attribute)
                    and isinstance(call.value, ast.Call)
                    and isinstance(call.value.func, ast.Name)
                    and call.value.func.id == "super"
                    and not (call.attr.startswith("__") and call.attr.endswith("__"))
                    and self._find(bases, call.attr)[0] is None
                ):
                    self.report(
                        "vllm-super-missing",
                        Place(module, call, None),
                        f"super().{call.attr} in {node.name}.{stmt.name}: no base of {node.name} has {call.attr} in "
                        f"{self.release}{self._elsewhere(f'{bases[0].qualname}.{call.attr}')}: the call raises "
                        "AttributeError",
                        "do on this release what the removed member did, or skip the call where it is missing",
                    )
            for call in ast.walk(stmt):
                self._super_call_arguments(module, node, stmt, call, bases)

    def _super_call_arguments(
        self, module: Module, node: ast.ClassDef, method: ast.AST, call: ast.AST, bases: list[Symbol]
    ) -> None:
        """`super().name(...)` whose arguments the vLLM base's `name` cannot take on this release: a TypeError
        each time the method runs (`super().__init__(num_blocks=...)` where the base takes `num_chunks`)."""
        if not (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and isinstance(call.func.value, ast.Call)
            and isinstance(call.func.value.func, ast.Name)
            and call.func.value.func.id == "super"
        ):
            return
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            return  # *args / **kwargs pass through whatever the caller gave
        owner, text = self._find(bases, call.func.attr)
        if owner is None or text is None:
            return
        signature = Signature.parse(text)
        if signature.decorator == "s":
            return
        signature = signature.bound()
        problem = call_problem(signature, len(call.args), [k.arg for k in call.keywords if k.arg])
        if problem and _other_branch_binds(module, call, signature):
            return  # `if x is not None: super().f(a, x=x)` / `else: super().f(a)`: one branch per release
        if problem:
            self.report(
                "vllm-super-call-signature",
                Place(module, call),
                f"super().{call.func.attr}(...) in {node.name}.{getattr(method, 'name', '?')} reaches "
                f"{owner.qualname}.{call.func.attr}{signature.text()} in {self.release}: {problem}, so the call "
                "raises TypeError",
                "pass the arguments this release's base method takes",
            )


_PATCH_FIX = "or manage it as a patch: vllm-scaffold add patch NAME --data target=vllm.module:Qualname"


def _lambda_signature(node: ast.Lambda) -> str:
    args = node.args
    parts = [a.arg for a in [*args.posonlyargs, *args.args]]
    defaults = len(args.defaults)
    if defaults:
        parts[-defaults:] = [p + "=" for p in parts[-defaults:]]
    if args.vararg:
        parts.append("*" + args.vararg.arg)
    elif args.kwonlyargs:
        parts.append("*")
    parts += [a.arg + ("=" if d is not None else "") for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)]
    if args.kwarg:
        parts.append("**" + args.kwarg.arg)
    return ",".join(parts)


def _signature_text(signature: Signature) -> str:
    """The index's text of a signature, without its decorator mark."""
    parts = []
    for p in signature.params:
        prefix = {"varargs": "*", "varkw": "**"}.get(p.kind, "")
        parts.append(prefix + p.name + ("=" if p.has_default else ""))
    kwonly = [i for i, p in enumerate(signature.params) if p.kind == "kwonly"]
    if kwonly and not signature.varargs:
        parts.insert(kwonly[0], "*")
    return ",".join(parts)


_LOGGER_FACTORIES = frozenset({"getLogger", "init_logger", "Logger", "getChild"})


def _logger_names(module: Module) -> set[int]:
    """id() of the string constants that name loggers: the argument of `logging.getLogger("vllm.x")` or
    vLLM's `init_logger`, and the keys of a logging config's "loggers" table."""
    found: set[int] = set()
    for node in module.of_type(ast.Call):
        func = node.func  # type: ignore[attr-defined]
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name in _LOGGER_FACTORIES:
            found.update(id(a) for a in [*node.args[:1], *(k.value for k in node.keywords if k.arg == "name")])  # type: ignore[attr-defined]
    for node in module.of_type(ast.Dict):
        for key, value in zip(node.keys, node.values, strict=True):  # type: ignore[attr-defined]
            if isinstance(key, ast.Constant) and key.value == "loggers" and isinstance(value, ast.Dict):
                found.update(id(k) for k in value.keys if k is not None)
    return found


_VLLM_VARIABLE = re.compile(r"VLLM_[A-Z0-9_]+")
_ENVIRON_METHODS = frozenset({"get", "setdefault", "pop"})


def _environment_key(node: ast.AST) -> str | None:
    """The literal variable name `node` reads or sets in the process environment, or None."""
    if isinstance(node, ast.Subscript):
        target, key = node.value, node.slice
        if not (isinstance(target, ast.Attribute) and target.attr == "environ") and not (
            isinstance(target, ast.Name) and target.id == "environ"
        ):
            return None
    elif isinstance(node, ast.Call) and node.args:
        func, key = node.func, node.args[0]
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        owner = func.value if isinstance(func, ast.Attribute) else None
        on_environ = (isinstance(owner, ast.Attribute) and owner.attr == "environ") or (
            isinstance(owner, ast.Name) and owner.id == "environ"
        )
        if not (name in {"getenv", "putenv"} or (name in _ENVIRON_METHODS and on_environ)):
            return None
    else:
        return None
    return key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else None


def _probed_modules(module: Module) -> set[int]:
    """id() of the string constants `find_spec` is asked about: a module that may be missing, by design."""
    found: set[int] = set()
    for node in module.of_type(ast.Call):
        func = node.func  # type: ignore[attr-defined]
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name == "find_spec":
            found.update(id(a) for a in node.args[:1])  # type: ignore[attr-defined]
    return found


def _is_dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")  # every module and class has __dict__, __name__, ...


def _shadowed_heads(module: Module) -> set[int]:
    """Attribute reads inside a function whose head name is that function's parameter or local variable,
    not the module-level vLLM import of the same name (`layer.w13_weight` with a parameter `layer`)."""
    shadowed: set[int] = set()
    for function in module.of_type(ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda):
        args = function.args
        local = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg] if a}
        inside = walk_nodes(function)
        local |= {n.id for n in inside if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        local -= {name for n in inside if isinstance(n, (ast.Global, ast.Nonlocal)) for name in n.names}
        shadowed |= {id(n) for n in inside if isinstance(n, ast.Attribute) and getattr(_head(n), "id", None) in local}
    return shadowed


def _head(node: ast.expr) -> ast.expr:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node


def _branch_calls(module: Module) -> dict[int, list[ast.Call]]:
    """id() of each call inside one branch of an `if`/`else` -> the calls of the same function (by its text)
    in the other branch: two ways of making one call, typically one per release."""
    memo = module.memo.get("release-branch-calls")
    if memo is None:
        memo = {}
        for node in module.of_type(ast.If):
            if not node.orelse:  # type: ignore[attr-defined]
                continue
            sides = []
            for branch in (node.body, node.orelse):  # type: ignore[attr-defined]
                calls: dict[str, list[ast.Call]] = {}
                for stmt in branch:
                    for n in walk_nodes(stmt):
                        if n.__class__ is ast.Call:
                            calls.setdefault(ast.unparse(n.func), []).append(n)  # type: ignore[attr-defined, arg-type]
                sides.append(calls)
            for mine, theirs in ((sides[0], sides[1]), (sides[1], sides[0])):
                for text, calls in mine.items():
                    for call in calls:
                        if text in theirs:
                            memo.setdefault(id(call), []).extend(theirs[text])
        module.memo["release-branch-calls"] = memo
    return memo  # type: ignore[return-value]


def _other_branch_binds(module: Module, call: ast.Call, signature: Signature) -> bool:
    """The call sits in one branch of an if/else whose other branch calls the same function in a way that
    binds to `signature`: the plugin picks the call per release, and this one is for another."""
    for other in _branch_calls(module).get(id(call), ()):
        if any(isinstance(a, ast.Starred) for a in other.args) or any(k.arg is None for k in other.keywords):
            continue
        if call_problem(signature, len(other.args), [k.arg for k in other.keywords if k.arg]) is None:
            return True
    return False


_LEAVES: dict[tuple[str, str, int], list[Symbol]] = {}


def _leaf_classes(index: ReleaseIndex) -> list[Symbol]:
    """Every class of the release no class of the release derives from."""
    key = (index.distribution, index.version, id(index))
    if key not in _LEAVES:
        classes = [
            Symbol("class", f"{module}.{name}", module, name)
            for module, entry in index.modules.items()
            for name in entry.get("c", {})
        ]
        derived = {(b.module, b.name) for symbol in classes for b in index.bases(symbol) if b.kind == "class"}
        _LEAVES[key] = [symbol for symbol in classes if (symbol.module, symbol.name) not in derived]
    return _LEAVES[key]


def _runtime_aliases(module: Module) -> dict[str, str]:
    """The module's import table, without names imported only under `if TYPE_CHECKING:`."""
    table = aliases(module)
    checking_only: set[str] = set()
    runtime: set[str] = set()
    for place in walk(module, ast.Import, ast.ImportFrom):
        if isinstance(place.node, (ast.Import, ast.ImportFrom)):
            bound = {(a.asname or a.name).split(".")[0] for a in place.node.names}
            (checking_only if place.guard == "type-checking" else runtime).update(bound)
    return {k: v for k, v in table.items() if k not in checking_only - runtime}


def _plugin_signature(stmt: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    from vllm_scaffold.vllm_facts.build import method_signature

    return method_signature(stmt)  # with @c / @s, as the index writes vLLM's methods


def _version(text: str) -> tuple[int, ...]:
    from vllm_scaffold.vllm_facts.store import version_key

    return version_key(text)


def _bind(signature: Signature, call: ast.Call) -> Iterator[tuple[object, ast.expr]]:
    for param, argument in zip(signature.positional, call.args, strict=False):
        yield param, argument
    for keyword in call.keywords:
        param = signature.param(keyword.arg or "")
        if param is not None:
            yield param, keyword.value


def with_tests(package: PluginPackage) -> PluginPackage:
    """The package plus its tests/ modules: generated tests reach into vLLM too, and must hold on every
    release the package declares."""
    tests = package.root / "tests"
    for path in sorted(tests.rglob("*.py")) if tests.is_dir() else ():
        rel = path.relative_to(package.root).as_posix()
        name = rel[: -len(".py")].replace("/", ".")
        try:
            tree: ast.Module | None = ast.parse(path.read_text(encoding="utf-8"))
        except SyntaxError:
            tree = None
        package.modules.setdefault(name, Module(name, path, rel, path.name == "__init__.py", tree))
    return package


def check(
    package: PluginPackage,
    index: ReleaseIndex,
    others: list[ReleaseIndex] | Callable[[], list[ReleaseIndex]],
    sites: CallSites | None = None,
) -> list[Finding]:
    """Every finding of `package` against the release `index`; with `sites` (the call sites of the installed
    vLLM that `index` is) an override vLLM cannot reach is not reported."""
    check = ReleaseCheck(package, index, others, sites)
    findings = check.run()
    if sites is not None:
        sites.save()
    return findings
