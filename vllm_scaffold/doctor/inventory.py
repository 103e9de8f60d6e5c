"""The plugin's coupling surface to vLLM, in `doctor --json`: the inventory teams write by hand before an upgrade.

Four lists, each entry one vLLM name with every place the plugin couples to it: `bases` (vLLM classes its
classes derive from, with the members the plugin's classes of that family define), `configs_built` (vLLM
config classes it constructs, with the keywords of each construction), `patch_targets` (vLLM names it assigns:
`X.attr = ...`, `setattr(X, "attr", ...)`, a decorator naming `"vllm.x.Y.method"`, a declared `patch`
component) and `imports` (vLLM names it imports, at any depth; those under `if TYPE_CHECKING:` never run and
are left out, as are the modules the plugin installs inside vLLM's namespace). The package is read as the
release check reads it (`PluginClasses`, `replacements`, `walk`): no second reading of the source.

With two or more releases, each entry says how it changed between each release and the next (oldest first),
from their indexes: `{"0.32.0->0.34.0": "signature: (self, x) -> (self, x, *, y)"}`, empty when unchanged.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from vllm_scaffold.doctor.checks.config_keywords import CONFIG_MODULES, accepted_keywords
from vllm_scaffold.doctor.proof.provided import installer, provided_names
from vllm_scaffold.doctor.reading.package import Module, PluginPackage
from vllm_scaffold.doctor.reading.source import class_body_names, qualified
from vllm_scaffold.doctor.releases.classes import PluginClasses
from vllm_scaffold.doctor.releases.patches import MANIFEST, declared_patches
from vllm_scaffold.doctor.releases.places import walk
from vllm_scaffold.doctor.releases.release import Release
from vllm_scaffold.doctor.releases.replacements import patch_replacements, replacements
from vllm_scaffold.vllm_facts import ReleaseIndex, Signature, Symbol
from vllm_scaffold.vllm_facts.store import version_key

KINDS = ("bases", "configs_built", "patch_targets", "imports")


@dataclass
class Entry:
    """One vLLM name the plugin couples to: every place it does, and (bases, configs) what it uses of it."""

    name: str
    places: list[dict[str, object]] = field(default_factory=list)
    uses: set[str] = field(default_factory=set)  # members a base's subclasses define; keywords a config is given
    changed: dict[str, str] | None = None  # "old->new" -> how; None with one release

    def as_json(self, kind: str) -> dict[str, object]:
        data: dict[str, object] = {"name": self.name, "at": self.places}
        if kind == "bases":
            data["overrides"] = sorted(self.uses)
        if self.changed is not None:
            data["changed"] = self.changed
        return data


@dataclass
class Inventory:
    releases: list[str]  # the versions the names were read against, oldest first
    entries: dict[str, dict[str, Entry]]  # kind -> name -> entry

    def as_json(self) -> dict[str, object]:
        data: dict[str, object] = {"releases": self.releases}
        for kind in KINDS:
            data[kind] = [entry.as_json(kind) for _name, entry in sorted(self.entries[kind].items())]
        return data


def inventory(package: PluginPackage, indexes: list[ReleaseIndex]) -> Inventory:
    """The package's coupling surface, its names read through the oldest of `indexes`; with two or more, how
    each entry changed between each release and the next."""
    ordered = sorted({index.version: index for index in indexes}.values(), key=lambda i: version_key(i.version))
    classes = PluginClasses(package, Release(ordered[0], ordered[1:]))
    provided = provided_names(package)

    def vllms(name: str | None) -> bool:
        return name is not None and name.split(".")[0] == "vllm" and installer(provided, name) is None

    entries: dict[str, dict[str, Entry]] = {kind: {} for kind in KINDS}

    def add(kind: str, name: str, module: Module | None, node: ast.AST | None, **more: object) -> Entry:
        entry = entries[kind].setdefault(name, Entry(name))
        place: dict[str, object] = (
            {"module": module.name, "file": module.rel, "line": getattr(node, "lineno", None)}
            if module is not None
            else {"module": None, "file": "pyproject.toml", "line": None}
        )
        entry.places.append({**place, **more})
        return entry

    _bases(classes, vllms, add)
    for module in package.parsed():
        table = classes.tables[module.name]
        _configs(ordered, module, table, vllms, add)
        _patches(module, table, vllms, add)
        _imports(module, vllms, add)
    for component in declared_patches(package):
        target = str(component["target"]).replace(":", ".")
        add("patch_targets", target, None, None, declared=f"{MANIFEST} {component.get('name', target)}")
    if len(ordered) > 1:
        for kind, describe in _CHANGES.items():
            for entry in entries[kind].values():
                entry.changed = {}
                for old, new in zip(ordered, ordered[1:], strict=False):
                    how = describe(entry, old, new)
                    if how:
                        entry.changed[f"{old.version}->{new.version}"] = how
    return Inventory([index.version for index in ordered], entries)


Add = Callable[..., Entry]


def _bases(classes: PluginClasses, vllms: Callable[[str | None], bool], add: Add) -> None:
    for qualname, (module, node) in classes.classes.items():
        for base in classes.bases(module, node):
            if vllms(base):
                members = set().union(*(class_body_names(classes.classes[c][1]) for c in classes.family(qualname)))
                add("bases", base, module, node, **{"class": qualname}).uses |= members


def _configs(
    indexes: list[ReleaseIndex], module: Module, table: dict[str, str], vllms: Callable[[str | None], bool], add: Add
) -> None:
    """Calls of a class one of the releases defines in `vllm.config`."""
    for call in module.of_type(ast.Call):
        written = qualified(call.func, table)
        if written is not None and vllms(written) and any(_config_class(index, written) for index in indexes):
            keywords = [k.arg for k in call.keywords if k.arg is not None]
            add("configs_built", written, module, call, keywords=keywords).uses.update(keywords)


def _config_class(index: ReleaseIndex, name: str) -> bool:
    symbol = index.resolve(name)
    return symbol.kind == "class" and symbol.qualname.startswith(CONFIG_MODULES)


def _patches(module: Module, table: dict[str, str], vllms: Callable[[str | None], bool], add: Add) -> None:
    assigned: set[str] = set()
    for node, owner_expr, attr, _value in replacements(module):
        owner = qualified(owner_expr, table)
        if vllms(owner):
            assigned.add(f"{owner}.{attr}")
            add("patch_targets", f"{owner}.{attr}", module, node)
    for target, function in patch_replacements(module, table):
        if target not in assigned and vllms(target):
            add("patch_targets", target, module, function)


def _imports(module: Module, vllms: Callable[[str | None], bool], add: Add) -> None:
    for place in walk(module, ast.Import, ast.ImportFrom):
        node = place.node
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module if alias.name == "*" else f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            if vllms(name) and not place.type_checking:
                add("imports", name, module, node)


# -- how a name changed between two releases ------------------------------------------------------------------


def _shown(signature: Signature) -> str:
    """A signature as its parameters' names and kinds: `(self, x, /, y=…, *, z, **kw)`."""
    parts: list[str] = []
    for i, param in enumerate(signature.params):
        if param.kind == "kwonly" and (i == 0 or signature.params[i - 1].kind not in {"kwonly", "varargs"}):
            parts.append("*")
        prefix = {"varargs": "*", "varkw": "**"}.get(param.kind, "")
        parts.append(f"{prefix}{param.name}{'=…' if param.has_default else ''}")
        following = signature.params[i + 1].kind if i + 1 < len(signature.params) else None
        if param.kind == "posonly" and following != "posonly":
            parts.append("/")
    decorator = {"c": "@classmethod ", "s": "@staticmethod ", "p": "@property "}.get(signature.decorator, "")
    return f"{decorator}({', '.join(parts)})"


def _symbol(
    name: str, old: ReleaseIndex, new: ReleaseIndex, *, source: bool = False, signature: bool = True
) -> str | None:
    """How the name `name` changed: removed, added, moved, of another kind, its signature (a class's: its
    constructor's; and, with `source`, its source); None when it did not, or when an index cannot tell."""
    before, after = old.resolve(name), new.resolve(name)
    if before.kind == "unknown" or after.kind == "unknown":
        return None
    if before.exists != after.exists:
        return "removed" if before.exists else "added"
    if not before.exists:
        return None
    changes = []
    if before.kind != after.kind:
        changes.append(f"kind: {before.kind} -> {after.kind}")
    elif _defined(before) != _defined(after):
        changes.append(f"moved: {_defined(before)} -> {_defined(after)}")
    was, now = (old.signature(before), new.signature(after)) if signature else (None, None)
    if was is not None and now is not None and _shown(was) != _shown(now):
        changes.append(f"signature: {_shown(was)} -> {_shown(now)}")
    if source and before.kind in {"function", "member"} and after.kind == before.kind:
        hashes = old.source_hash(before), new.source_hash(after)
        if all(hashes) and hashes[0] != hashes[1]:
            changes.append("source changed")
    return "; ".join(changes) or None


def _defined(symbol: Symbol) -> str:
    return f"{symbol.module}.{symbol.name}" if symbol.name else symbol.qualname


def _base(entry: Entry, old: ReleaseIndex, new: ReleaseIndex) -> str | None:
    """The class itself, then each member the plugin's classes define that either release's class has (removed,
    added, signature changed), then the abstract methods the new release adds that the plugin does not define."""
    whole = _symbol(entry.name, old, new, signature="__init__" not in entry.uses)  # else said as __init__'s
    before, after = old.resolve(entry.name), new.resolve(entry.name)
    if before.kind != "class" or after.kind != "class":
        return whole
    changes = [whole] if whole else []
    had, has = _members(old, before), _members(new, after)
    for member in sorted(entry.uses & (had | has)):
        if (member in had) != (member in has):
            changes.append(f"{member}: {'removed' if member in had else 'added'}")
            continue
        was, now = old.find_member(before, member)[1], new.find_member(after, member)[1]
        if was is not None and now is not None and _shown(Signature.parse(was)) != _shown(Signature.parse(now)):
            changes.append(f"{member}: signature {_shown(Signature.parse(was))} -> {_shown(Signature.parse(now))}")
    abstract = sorted(new.abstract_methods(after) - old.abstract_methods(before) - entry.uses)
    if abstract:
        changes.append(f"abstract methods added: {', '.join(abstract)}")
    return "; ".join(changes) or None


def _members(index: ReleaseIndex, symbol: Symbol) -> set[str]:
    """Every name the class and its vLLM ancestors define (methods, class attributes, fields)."""
    return {name for cls in index.mro(symbol)[0] for key in ("m", "v") for name in index.class_entry(cls).get(key, ())}


def _config(entry: Entry, old: ReleaseIndex, new: ReleaseIndex) -> str | None:
    """The class itself, then the keywords the plugin passes that one release accepts and the other not."""
    whole = _symbol(entry.name, old, new)
    was, now = accepted_keywords(old, entry.name, set()), accepted_keywords(new, entry.name, set())
    changes = [whole] if whole else []
    if was is not None and now is not None:
        removed, added = _among(entry.uses, was - now), _among(entry.uses, now - was)
        changes += [f"fields removed: {removed}"] if removed else []
        changes += [f"fields added: {added}"] if added else []
    return "; ".join(changes) or None


def _among(used: Iterable[str], names: set[str]) -> str:
    return ", ".join(sorted(set(used) & names))


_CHANGES: dict[str, Callable[[Entry, ReleaseIndex, ReleaseIndex], str | None]] = {
    "bases": _base,
    "configs_built": _config,
    "patch_targets": lambda entry, old, new: _symbol(entry.name, old, new, source=True),
    "imports": lambda entry, old, new: _symbol(entry.name, old, new),
}
