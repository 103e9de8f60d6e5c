"""Abstract methods a plugin class leaves unimplemented on the release: creating one raises TypeError. Silent
for a class nothing creates (a namespace of methods, a stand-in for an in-tree class vLLM never creates) and
for methods vLLM's own leaf classes leave abstract too."""

from __future__ import annotations

import ast
from weakref import WeakKeyDictionary

from vllm_scaffold.doctor.reading.package import Module
from vllm_scaffold.doctor.reading.source import exports, qualified
from vllm_scaffold.doctor.releases.classes import PluginClasses
from vllm_scaffold.doctor.releases.findings import Findings
from vllm_scaffold.doctor.releases.places import Place, in_annotations
from vllm_scaffold.doctor.releases.replacements import replacements
from vllm_scaffold.vllm_facts import ReleaseIndex, Symbol

_LEAVES: dict[tuple[str, str, int], list[Symbol]] = {}


def declares_abstract(node: ast.ClassDef) -> bool:
    """The class body declares an abstract method itself: it is meant to be derived from, not created."""
    return any(
        isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)
        and any("abstractmethod" in ast.unparse(d) for d in s.decorator_list)
        for s in node.body
    )


def check_abstract(
    classes: PluginClasses, out: Findings, place: Place, node: ast.ClassDef, members: set[str], bases: list[Symbol]
) -> None:
    index = classes.index
    left: set[str] = set()
    concrete: set[str] = set()
    for base in bases:
        abstract = index.abstract_methods(base)
        left |= abstract
        for cls in index.mro(base)[0]:
            concrete |= set(index.methods(cls)) - abstract
    missing = sorted(left - concrete - members - _left_abstract_by_vllm(index, bases))
    if missing and _only_read_from(classes, place.module, node):
        return  # the class is a namespace of methods the plugin copies elsewhere: nothing creates one
    if missing and _replaces_abstract_layer(classes, out, node):
        return  # it replaces (register_oot) an in-tree class vLLM cannot create either: vLLM never does
    if missing:
        names = ", ".join(f"{m}()" for m in missing)
        out.report(
            "vllm-abstract-missing",
            place,
            f"{node.name} does not implement {names}, abstract in {_owner_of(index, bases, missing[0])} in "
            f"{classes.release.label}: creating a {node.name} raises TypeError",
            f"implement {names}",
        )


def _leaf_classes(index: ReleaseIndex) -> list[Symbol]:
    """Every class of the release no class of the release derives from."""
    key = (index.distribution, index.version, id(index))
    if key not in _LEAVES:
        classes = index.classes()
        derived = {(b.module, b.name) for symbol in classes for b in index.bases(symbol) if b.kind == "class"}
        _LEAVES[key] = [symbol for symbol in classes if (symbol.module, symbol.name) not in derived]
    return _LEAVES[key]


_LEFT: WeakKeyDictionary[ReleaseIndex, dict[tuple[str, str], set[str]]] = WeakKeyDictionary()


def _left_abstract_by_vllm(index: ReleaseIndex, bases: list[Symbol]) -> set[str]:
    """Abstract methods of `bases` that a class of vLLM's own deriving from them leaves unimplemented while
    no vLLM class derives from it further: vLLM uses such classes as classes, never creating one (an
    attention backend's static methods: GDNAttentionBackend has no get_impl_cls), so nothing enforces them."""
    below = _left_below(index)
    left: set[str] = set()
    for base in bases:
        left |= below.get((base.module, base.name), set())
    return left


def _left_below(index: ReleaseIndex) -> dict[tuple[str, str], set[str]]:
    """Per vLLM class (module, name): the abstract methods of the leaf classes deriving from it, and those a leaf
    class inherits and leaves unimplemented, read once per release rather than once per plugin lineage."""
    if index not in _LEFT:
        below: dict[tuple[str, str], set[str]] = {}
        for leaf in _leaf_classes(index):
            ancestors = index.mro(leaf)[0][1:]
            abstract = index.abstract_methods(leaf)
            if not ancestors or not abstract:
                continue
            for ancestor in ancestors:
                below.setdefault((ancestor.module, ancestor.name), set()).update(abstract)
            # a plugin class may derive from the leaf itself: what the leaf inherits unimplemented counts, not
            # what it declares abstract itself (a base class vLLM has no implementation of, IOProcessor)
            inherited = set().union(*(index.abstract_methods(ancestor) for ancestor in ancestors))
            below.setdefault((leaf.module, leaf.name), set()).update(abstract & inherited)
        _LEFT[index] = below
    return _LEFT[index]


def _replaces_abstract_layer(classes: PluginClasses, out: Findings, node: ast.ClassDef) -> bool:
    """The class stands in for the in-tree class `Name` (registered with `register_oot`, directly or
    through a `{"Name": Cls}` table, or assigned over it: `vllm_module.Name = Cls`), and the release leaves
    that class abstract: vLLM uses the stand-in where it would use `Name` itself, which it never creates
    (a layer's subclasses are looked up under their own names: QwenGatedDeltaNetAttention, not
    GatedDeltaNetAttention; a factory class is asked for its get_moe_method, never instantiated)."""
    names = _stand_ins(classes).get(node.name, set())
    if not names:
        return False
    by_name = out.callers.vllm_classes
    index = classes.index
    return all(any(index.abstract_methods(symbol) for symbol in by_name.get(name, ())) for name in names)


def _stand_ins(classes: PluginClasses) -> dict[str, set[str]]:
    """Plugin class name -> the in-tree names it stands in for (see `_replaces_abstract_layer`), read in one
    pass over the package whichever class asks."""
    memo: dict[str, set[str]] | None = classes.__dict__.get("_stand_ins")
    if memo is not None:
        return memo
    found: dict[str, set[str]] = {}
    for module in classes.package.parsed():
        for _statement, owner, attr, value in replacements(module):
            if isinstance(value, ast.Name) and attr[:1].isupper():
                qualname = qualified(owner, classes.tables[module.name]) if isinstance(owner, ast.Name) else None
                if qualname and qualname.split(".")[0] == "vllm":
                    found.setdefault(value.id, set()).add(attr)
        for n in module.of_type(ast.Dict, ast.Call):
            if isinstance(n, ast.Dict):
                for key, value in zip(n.keys, n.values, strict=True):
                    if isinstance(key, ast.Constant) and isinstance(value, ast.Name):
                        found.setdefault(value.id, set()).add(str(key.value))
            elif getattr(n.func, "attr", None) == "register_oot":
                given = {k.arg: k.value for k in n.keywords}
                target = given.get("name")
                if isinstance(target, ast.Constant):
                    for v in [*n.args, *given.values()]:
                        if isinstance(v, ast.Name):
                            found.setdefault(v.id, set()).add(str(target.value))
    classes.__dict__["_stand_ins"] = found
    return found


def _only_read_from(classes: PluginClasses, module: Module, node: ast.ClassDef) -> bool:
    """Whether the package reads attributes of the class (`Cls.method`) and otherwise only names it as a
    base or in an annotation: it never calls, passes, returns or stores it, nor names it in a string or an
    entry point, so nothing creates an instance. A class the package never names at all may be named from
    outside (`--scheduler-cls pkg.mod.Cls`), and is not one."""
    name = node.name
    qualname = f"{module.name}.{name}"
    if any(name in ep.value for ep in classes.package.entry_points):
        return False
    read = False
    for other in classes.package.modules.values():
        if other.tree is None:
            continue
        names = {name}
        names |= {a.asname for n in other.of_type(ast.ImportFrom) for a in n.names if a.name == name and a.asname}
        by_id, strings = _names_and_strings(other)
        found = [n for used in names for n in by_id.get(used, ())]
        if found:
            heads, allowed = _name_uses(other)
            skipped = in_annotations(other)
            for n in found:
                if id(n) not in allowed and id(n) not in skipped:
                    return False
                read = read or id(n) in heads
        for text in strings:
            if name in text and (qualname in text.replace(":", ".") or text == name):
                return False
    return read


def _names_and_strings(module: Module) -> tuple[dict[str, list[ast.Name]], list[str]]:
    """The module's Name nodes by identifier, and its string constants that may name a class to load or build:
    not a forward reference in an annotation (`-> type["Backend"]`) nor an export name in `__all__`. Listed once
    per module."""

    def gather() -> tuple[dict[str, list[ast.Name]], list[str]]:
        by_id: dict[str, list[ast.Name]] = {}
        for n in module.of_type(ast.Name):
            by_id.setdefault(n.id, []).append(n)
        skipped = in_annotations(module) | {id(constant) for constant in exports(module)}
        strings = [n.value for n in module.of_type(ast.Constant) if isinstance(n.value, str) and id(n) not in skipped]
        return by_id, strings

    return module.memoised("abstract-names", gather)


def _name_uses(module: Module) -> tuple[set[int], set[int]]:
    """id() of each Name an attribute is read from (`Name.attr`), and of those and the Names class statements
    list as bases: the uses `_only_read_from` allows, asked only of modules that name the class."""

    def gather() -> tuple[set[int], set[int]]:
        heads = {id(n.value) for n in module.of_type(ast.Attribute) if isinstance(n.value, ast.Name)}
        return heads, heads | {id(b) for cls in module.of_type(ast.ClassDef) for b in cls.bases}

    return module.memoised("abstract-name-uses", gather)


def _owner_of(index: ReleaseIndex, bases: list[Symbol], member: str) -> str:
    for base in bases:
        owner, _sig = index.find_member(base, member)
        if owner is not None:
            return owner.name
    return bases[0].name
