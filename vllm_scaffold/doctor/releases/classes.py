"""The plugin's classes and the names its modules bind, read once per package and release: every check of the
release check and the question of which overrides vLLM can call (`override_callers`) share this one graph.

A module's names are its imports, less those made only under `if TYPE_CHECKING:`, with a name imported both
in a `try:` block and in its `except ImportError:` fallback bound to the try block's import when that import
succeeds on the release. A class's bases are qualified through them and through the module's own classes.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cached_property

from vllm_scaffold.doctor.reading.guards import RELEASE_GUARD_ERRORS, catches
from vllm_scaffold.doctor.reading.package import Module, PluginPackage, walk_nodes
from vllm_scaffold.doctor.reading.source import class_body_names, qualified
from vllm_scaffold.doctor.releases.places import head, runtime_aliases
from vllm_scaffold.doctor.releases.release import Release
from vllm_scaffold.vllm_facts import Signature, Symbol

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
# Bases that give a plugin class no attribute it would read through self.
NO_MEMBER_BASES = frozenset({"object", "abc.ABC", "typing.Generic", "typing.Protocol", "ABC", "Generic", "Protocol"})


class PluginClasses:
    """The plugin package's classes (by qualified name), their bases, and each module's names, on one release."""

    def __init__(self, package: PluginPackage, release: Release) -> None:
        self.package = package
        self.release = release
        self.index = release.index
        self.tables = {module.name: self._bound_by_try(module, runtime_aliases(module)) for module in package.parsed()}
        self.classes: dict[str, tuple[Module, ast.ClassDef]] = {
            f"{module.name}.{node.name}": (module, node)
            for module in package.parsed()
            for node in module.of_type(ast.ClassDef)
        }
        self._bases: dict[int, list[str]] = {}

    def __contains__(self, qualname: str) -> bool:
        return qualname in self.classes

    # -- names ---------------------------------------------------------------------------------------------

    def _bound_by_try(self, module: Module, table: dict[str, str]) -> dict[str, str]:
        """`table` with each name imported both in a `try:` block and in its `except ImportError:` fallback bound
        to the try block's import when that import succeeds: a module of the package itself, or a vLLM name
        the release has (`try: from pkg.adapter import X` / `except ImportError: from vllm.x import X`)."""
        tries = module.of_type(ast.Try)
        if not tries:
            return table
        table = dict(table)
        for node in tries:
            if not catches(node.handlers, RELEASE_GUARD_ERRORS):
                continue
            fallback = {
                alias.asname or alias.name
                for handler in node.handlers
                for stmt in handler.body
                for n in walk_nodes(stmt)
                if isinstance(n, ast.ImportFrom)
                for alias in n.names
            }
            for stmt in node.body:
                if not isinstance(stmt, ast.ImportFrom) or stmt.level or not stmt.module:
                    continue
                for alias in stmt.names:
                    bound = alias.asname or alias.name
                    if bound in fallback and self._import_succeeds(stmt.module, alias.name):
                        table[bound] = f"{stmt.module}.{alias.name}"
        return table

    def _import_succeeds(self, source: str, name: str) -> bool:
        if source.split(".")[0] == "vllm":
            return not self.release.first_missing(f"{source}.{name}")
        return source in self.package.modules

    def callee(self, module: Module, func: ast.expr) -> tuple[Symbol, Signature] | None:
        """The vLLM function, class or class-level method a call's function expression names, with the
        signature the call binds to; None for anything else."""
        table = self.tables[module.name]
        first = head(func)
        if not isinstance(first, ast.Name) or first.id not in table:
            return None
        name = qualified(func, table)
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

    # -- the class graph -----------------------------------------------------------------------------------

    def bases(self, module: Module, node: ast.ClassDef) -> list[str]:
        """The qualified names of the class's bases (`Base[T]` as `Base`), those that can be named."""
        if id(node) not in self._bases:
            table = self._class_tables.get(module.name) or self.tables[module.name]
            bases = (qualified(b.value if isinstance(b, ast.Subscript) else b, table) for b in node.bases)
            self._bases[id(node)] = [q for q in bases if q]
        return self._bases[id(node)]

    @cached_property
    def _class_tables(self) -> dict[str, dict[str, str]]:
        """Per module: its import table plus its own classes, the names a class statement's bases use."""
        own: dict[str, dict[str, str]] = {}
        for qualname in self.classes:
            module_name, _, name = qualname.rpartition(".")
            own.setdefault(module_name, {})[name] = qualname
        return {m: {**self.tables[m], **names} for m, names in own.items()}

    @cached_property
    def children(self) -> dict[str, list[str]]:
        """Plugin class -> the plugin's classes that name it as a base."""
        children: dict[str, list[str]] = {}
        for name, (module, node) in self.classes.items():
            for base in self.bases(module, node):
                if base in self.classes:
                    children.setdefault(base, []).append(name)
        return children

    @cached_property
    def subclassed(self) -> set[str]:
        """Every name a plugin class derives from."""
        return {b for module, node in self.classes.values() for b in self.bases(module, node)}

    def descendants(self, qualname: str) -> list[str]:
        """The plugin's classes deriving from `qualname`, at any depth (depth first)."""
        found: list[str] = []
        pending = list(self.children.get(qualname, ()))
        while pending:
            current = pending.pop()
            if current not in found and current != qualname:
                found.append(current)
                pending += self.children.get(current, ())
        return found

    def family(self, qualname: str) -> list[str]:
        """The plugin class and every plugin class deriving from it (breadth first)."""
        found = [qualname]
        for current in found:
            found += [c for c in self.children.get(current, ()) if c not in found]
        return found

    def lineage(self, qualname: str, seen: frozenset[str] = frozenset()) -> tuple[set[str], list[Symbol]]:
        """(members the plugin's classes in this lineage define, the vLLM classes they derive from)."""
        module, node = self.classes[qualname]
        members = class_body_names(node)
        vllm_bases: list[Symbol] = []
        for base in self.bases(module, node):
            if base in self.classes and base not in seen:
                more, bases = self.lineage(base, seen | {qualname})
                members |= more
                vllm_bases += bases
            elif base.split(".")[0] == "vllm":
                symbol = self.index.resolve(base)
                if symbol.kind == "class":
                    vllm_bases.append(symbol)
        return members, vllm_bases

    def walk_lineage(self, qualname: str) -> Iterator[tuple[Module, ast.ClassDef, list[str]]]:
        """Each plugin class in `qualname`'s lineage, with the bases it names that are not plugin classes."""
        pending, seen = [qualname], set()
        while pending:
            current = pending.pop()
            if current in seen:
                continue
            seen.add(current)
            module, node = self.classes[current]
            bases = self.bases(module, node)
            pending += [base for base in bases if base in self.classes]
            yield module, node, [base for base in bases if base not in self.classes]

    def plugin_lineage(self, qualname: str) -> tuple[list[ast.ClassDef], list[Symbol]] | None:
        """(the plugin's classes in `qualname`'s lineage, the vLLM classes they derive from), or None when a
        base is neither (a class of torch or another library, a name the index cannot resolve to a class)."""
        classes: list[ast.ClassDef] = []
        vllm_bases: list[Symbol] = []
        for _module, node, outside in self.walk_lineage(qualname):
            classes.append(node)
            for base in outside:
                if base.split(".")[0] == "vllm" and (symbol := self.index.resolve(base)).kind == "class":
                    vllm_bases.append(symbol)
                elif base not in NO_MEMBER_BASES:
                    return None
        return classes, vllm_bases

    def base_names(self, qualname: str) -> list[str] | None:
        """Every base named in the plugin's lineage of `qualname` that is not a plugin class, dotted; None when
        one of them is neither vLLM's nor a builtin (another library's class could derive from anything)."""
        found: list[str] = []
        for module, node, outside in self.walk_lineage(qualname):
            if len(node.bases) != len(self.bases(module, node)):
                return None  # a base written as an expression the import table cannot name
            for base in outside:
                if base.split(".")[0] != "vllm" and base not in NO_MEMBER_BASES:
                    return None
                found.append(base)
        return found

    def vllm_mro(self, qualname: str) -> set[str]:
        """The vLLM classes the plugin class derives from, at any depth, by defining module and name."""
        memo = self.__dict__.setdefault("_vllm_mro", {})
        if qualname not in memo:
            bases = self.lineage(qualname)[1]
            memo[qualname] = {f"{s.module}.{s.name}" for b in bases for s in self.index.mro(b)[0]}
        return memo[qualname]

    def entry_class(self, value: str) -> str | None:
        """The plugin class an entry point's `module:attr` names (through one re-export), or None."""
        module_name, _, attr = value.partition(":")
        module_name, attr = module_name.strip(), attr.strip()
        if not attr or "." in attr:
            return None
        direct = f"{module_name}.{attr}"
        if direct in self.classes:
            return direct
        exported = self.tables.get(module_name, {}).get(attr)
        return exported if exported in self.classes else None

    def functions(self, qualname: str, seen: frozenset[str] = frozenset()) -> dict[str, FunctionNode]:
        """Methods the plugin class defines or inherits from the plugin's own classes, nearest first."""
        module, node = self.classes[qualname]
        found: dict[str, FunctionNode] = {}
        for base in reversed(self.bases(module, node)):
            if base in self.classes and base not in seen:
                found.update(self.functions(base, seen | {qualname}))
        found.update({s.name: s for s in node.body if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)})
        return found

    # -- what the package stores ---------------------------------------------------------------------------

    def attribute_stores(self) -> Iterator[tuple[str, ast.expr, str]]:
        """Every attribute the package assigns: (module, the owner's expression, the attribute's name), from
        `owner.name = ...` and `setattr(owner, "name", ...)`."""
        for module in self.package.parsed():
            for node in module.of_type(ast.Attribute, ast.Call):
                if isinstance(node, ast.Attribute):
                    if isinstance(node.ctx, ast.Store):
                        yield module.name, node.value, node.attr
                elif (
                    isinstance(node.func, ast.Name)
                    and node.func.id == "setattr"
                    and len(node.args) >= 2
                    and isinstance(node.args[1], ast.Constant)
                    and isinstance(node.args[1].value, str)
                ):
                    yield module.name, node.args[0], node.args[1].value

    @cached_property
    def set_by_package(self) -> frozenset[str]:
        """The vllm.* attributes the package assigns anywhere: `vllm.X.attr = ...` and `setattr(vllm.X, "attr",
        ...)`, by qualified name. Reading one is reading what the plugin itself stored."""
        found: set[str] = set()
        for name, owner, attr in self.attribute_stores():
            qualified_owner = qualified(owner, self.tables[name])
            if qualified_owner and qualified_owner.split(".")[0] == "vllm":
                found.add(f"{qualified_owner}.{attr}")
        return frozenset(found)

    @cached_property
    def stored_by_package(self) -> frozenset[str]:
        """Every attribute name the package assigns on any object (`x.name = ...`, `setattr(x, "name", ...)`)."""
        return frozenset(attr for _module, _owner, attr in self.attribute_stores())
