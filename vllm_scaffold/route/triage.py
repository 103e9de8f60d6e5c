"""`triage`: a vLLM fork compared with its base release, symbol by symbol, and each change routed to the
component, patch or fork that carries it.

The fork is a directory holding the `vllm/` package (a checkout); the base is a release's wheel (fetched
and cached as `doctor --vllm` does), a wheel file or a source directory. Only files whose bytes differ are
parsed. Files the base has and the fork lacks are counted, not compared: a checkout lacks what the wheel's
build generates, and a partial tree lacks the rest. Files outside `vllm/` are listed apart: the wheel holds
only the package, so they are listed, not compared.
"""

from __future__ import annotations

import ast
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from vllm_scaffold.catalog.routes import load_routes
from vllm_scaffold.errors import ScaffoldError
from vllm_scaffold.route.bases import GENERATED, differing, fork_point, nearest_release, tree_at
from vllm_scaffold.route.features import Feature, route_features, rpc_callers, rpc_route
from vllm_scaffold.route.routing import FORK, PATCH, SETTING, Route, Router, mentioned, new_names
from vllm_scaffold.vllm_facts import ReleaseIndex
from vllm_scaffold.vllm_facts.build import ModuleReader
from vllm_scaffold.vllm_facts.sources import SourceTree, open_tree, release_tree
from vllm_scaffold.vllm_facts.symbol_diff import (
    ADDED,
    CLASS,
    CODE,
    FUNCTION,
    METHOD,
    REMOVED,
    VALUE,
    Change,
    class_shell,
    compare,
    import_time_names,
    module_name,
    parse,
)

# `--base auto`: the nearest release, found by comparing files.
AUTO = "auto"
# Folders outside vllm/ listed one line each up to this many files; beyond, one line for the folder.
FOLDER_LINES = 12


@dataclass(frozen=True)
class Entry:
    """One changed symbol (or file, for non-Python files of the package) and its route."""

    symbol: str
    file: str
    change: str
    kind: str
    route: Route

    def as_json(self) -> dict[str, str]:
        return {
            "symbol": self.symbol,
            "file": self.file,
            "change": self.change,
            "route": self.route.route,
            "command": self.route.command(),
            "why": self.route.why + (f" ({self.route.note})" if self.route.note else ""),
        }


@dataclass(frozen=True)
class Outside:
    """A file of the fork outside the `vllm/` package (or a folder of them): why it matters, if at all."""

    path: str
    files: int
    why: str

    def as_json(self) -> dict[str, object]:
        return {"path": self.path, "files": self.files, "route": FORK if self.why else "", "why": self.why}


@dataclass
class Triage:
    fork: str
    base: str
    base_note: str = ""  # how the base was found (the nearest release, the fork point)
    entries: list[Entry] = field(default_factory=list)
    outside: list[Outside] = field(default_factory=list)
    # symbols tied together, those a rule routed first (with its rule and evidence), then the others
    features: list[Feature] = field(default_factory=list)
    compared: int = 0  # package files whose bytes differ
    not_in_fork: int = 0  # package files of the base the fork does not have

    @property
    def components(self) -> list[tuple[str, str]]:
        found: list[tuple[str, str]] = []
        for entry in self.entries:
            component = entry.route.component
            if component and entry.route.route != PATCH and component not in found:
                found.append(component)
        return found

    @property
    def patches(self) -> list[str]:
        return list(dict.fromkeys(e.route.target for e in self.entries if e.route.route == PATCH))

    @property
    def forks(self) -> list[Entry]:
        return [e for e in self.entries if e.route.route == FORK]

    @property
    def settings(self) -> list[str]:
        """The `--additional-config` keys a plugin reads instead of the fork's new engine arguments."""
        return list(dict.fromkeys(k for e in self.entries if e.route.route == SETTING for k, _v in e.route.answers))

    def plan(self) -> str:
        def count(n: int, one: str, many: str) -> str:
            return f"{n} {one if n == 1 else many}"

        settings = f", {count(len(self.settings), 'setting', 'settings')}" if self.settings else ""
        return (
            f"{count(len(self.entries), 'changed symbol becomes', 'changed symbols become')} "
            f"{count(len(self.components), 'component', 'components')}, {count(len(self.patches), 'patch', 'patches')}"
            f"{settings} and {len(self.forks)} that {'stays' if len(self.forks) == 1 else 'stay'} a fork"
        )

    def commands(self) -> list[str]:
        """One command per component and patch, components first, each in the order of its first symbol."""
        seen: dict[tuple[str, str], str] = {}
        for entry in sorted(self.entries, key=lambda e: e.route.route == PATCH):
            component = entry.route.component
            if component and component not in seen:
                seen[component] = entry.route.command()
        return list(seen.values())

    def items(self) -> list[tuple[str, list[Entry]]]:
        """The plan's items: each component or patch with its symbols, components first."""
        groups: dict[tuple[str, str], list[Entry]] = {}
        for entry in sorted(self.entries, key=lambda e: e.route.route == PATCH):
            if entry.route.component:
                groups.setdefault(entry.route.component, []).append(entry)
        return [(entries[0].route.command(), entries) for entries in groups.values()]

    def _summary(self, entries: list[Entry]) -> list[str]:
        """What one plan item carries: the features a rule routed to it, with their evidence, else its symbols."""
        symbols = {e.symbol for e in entries}
        lines = []
        for feature in self.features:
            if feature.rule and symbols & set(feature.members):
                carried = [s for s in feature.members if s in symbols]
                lines.append(f"    {_FEATURE_TITLES[feature.rule]} {', '.join(feature.names)}: {_names(carried)}")
                lines.append(f"    evidence: {', '.join(feature.evidence)}")
                symbols -= set(carried)
        rest = [e.symbol for e in entries if e.symbol in symbols]
        if rest:
            lines.append(f"    {_names(rest)}")
        return lines

    def describe(self) -> list[str]:
        """The report: each component, patch and fork with its symbols, the files outside vllm/, the plan."""
        lines = [f"{self.fork} against {self.base}" + (f": {self.base_note}" if self.base_note else "")]
        missing = (
            f"; {self.not_in_fork} files of the base are not in the fork (not compared)" if self.not_in_fork else ""
        )
        lines.append(f"{self.compared} files of vllm/ differ{missing}")
        groups: dict[tuple[str, str], list[Entry]] = {}
        for entry in self.entries:
            groups.setdefault(entry.route.component or (entry.route.route, ""), []).append(entry)
        for (route, _), entries in sorted(groups.items(), key=lambda item: _ORDER.get(item[0][0], 0)):
            first = entries[0].route
            lines.append("")
            lines.append(_HEADINGS[route] if route in _HEADINGS else f"{route}: {first.command()}")
            if first.note:
                lines.append(f"  note: {first.note}")
            for entry in entries:
                lines.append(f"  {entry.change:<8} {entry.symbol}")
                lines.append(f"           {entry.route.why}")
        if self.outside:
            lines += ["", "outside vllm/ (the release's wheel holds only the package: listed, not compared):"]
            for item in self.outside:
                count = f" ({item.files} files)" if item.files > 1 else ""
                lines.append(f"  {item.path}{count}" + (f": if changed, stays a fork: {item.why}" if item.why else ""))
        lines += ["", f"plan: {self.plan()}"]
        for number, (command, entries) in enumerate(self.items()):
            shown = command.replace("vllm-scaffold add ", "vllm-scaffold new ", 1) if number == 0 else command
            lines.append(f"  {shown}" + ("" if number == 0 else "   (inside the new package)"))
            lines += self._summary(entries)
            if entries[0].route.note:
                lines.append(f"    note: {entries[0].route.note}")
        if self.settings:
            lines.append(f"  settings, read from --additional-config (no command): {', '.join(self.settings)}")
        if self.forks:
            lines.append(f"  stays a fork: {_names([e.symbol for e in self.forks])}")
        return lines

    def as_json(self) -> dict[str, object]:
        return {
            "fork": self.fork,
            "base": self.base,
            "base_note": self.base_note,
            "symbols": [e.as_json() for e in self.entries],
            "outside": [o.as_json() for o in self.outside],
            "not_in_fork": self.not_in_fork,
            "features": [
                {"rule": f.rule, "names": list(f.names), "symbols": list(f.members), "evidence": list(f.evidence)}
                for f in self.features
            ],
            "plan": {
                "symbols": len(self.entries),
                "components": len(self.components),
                "patches": len(self.patches),
                "settings": self.settings,
                "forks": len(self.forks),
                "commands": self.commands(),
                "line": self.plan(),
            },
        }


# How the report's sections are ordered and headed: components, then patches, settings and forks.
_ORDER = {PATCH: 1, SETTING: 2, FORK: 3}
_HEADINGS = {
    SETTING: "settings (a plugin reads these keys from --additional-config):",
    FORK: "stays a fork:",
}
_FEATURE_TITLES = {"request_fields": "request fields", "engine_arguments": "settings"}
# A plan item names this many of its symbols, then how many more.
_SHOWN = 4


def _names(symbols: list[str]) -> str:
    """Symbols by their last two parts (`Sampler.forward`), the first few and a count of the rest."""

    def short(symbol: str) -> str:
        if "[" in symbol:  # code run at import: the module's last part and the statement
            module, statement = symbol.split("[", 1)
            return f"{module.rsplit('.', 1)[-1]}[{statement}"
        return ".".join(symbol.split(".")[-2:])

    names = list(dict.fromkeys(short(s) for s in symbols))
    more = f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else ""
    return ", ".join(names[:_SHOWN]) + more


def declared_version(fork: SourceTree) -> str | None:
    """The release the fork says it is, from its `vllm/_version.py` (written when a checkout is built)."""
    if "vllm/_version.py" not in fork.paths:
        return None
    for node in ast.walk(ast.parse(fork.text("vllm/_version.py"))):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            if any(isinstance(t, ast.Name) and t.id in {"__version__", "version"} for t in node.targets):
                return str(node.value.value)
    return None


def base_release(fork: SourceTree, base: str | None) -> tuple[SourceTree, ReleaseIndex]:
    """The base's sources and index: `base` as given (a version, a wheel, a source directory), else the
    release the fork declares."""
    from packaging.version import InvalidVersion, Version

    from vllm_scaffold.vllm_facts.store import index_of_source, shipped, shipped_versions

    if base is None:
        declared = declared_version(fork)
        if declared is None:
            raise ScaffoldError(
                f"{fork.label} does not say which vLLM release it is (no vllm/_version.py)",
                f"name its base release with --base VERSION (e.g. --base {shipped_versions()[-1]})",
            )
        try:
            version = Version(declared)
        except InvalidVersion:
            raise ScaffoldError(
                f"the fork declares vLLM '{declared}', which is no version", "pass --base VERSION"
            ) from None
        if version.is_devrelease or version.is_prerelease:
            raise ScaffoldError(
                f"the fork declares the development version {declared}, not a release",
                "name the release it branched from with --base VERSION",
            )
        base = version.base_version
    path = Path(base)
    if path.exists():
        # The index gives class hierarchies, so it must be the whole release's: a directory of a few of a
        # shipped release's files (as it says in vllm/_version.py) is read with that release's index.
        tree = open_tree(path)
        named = declared_version(tree)
        if named in shipped_versions():
            return tree, shipped(named)
        return tree, index_of_source(path if path.is_file() else tree.root)
    try:
        Version(base)
    except InvalidVersion:
        raise ScaffoldError(
            f"--base {base} is neither a vLLM version nor an existing wheel or source directory",
            f"pass a version such as {shipped_versions()[-1]}, or a path",
        ) from None
    tree = release_tree(base)
    index = shipped(base) if base in shipped_versions() else index_of_source(tree.root, base)
    return tree, index


def triage(fork_path: Path, base: str | None = None, since: str | None = None) -> Triage:
    """The fork at `fork_path` compared with `base` (a version, a wheel, a source directory, or `auto`: the
    nearest release), or with its fork point when `since` names the upstream ref of a git checkout."""
    if not fork_path.exists():
        raise ScaffoldError(f"{fork_path} does not exist", "pass the fork's checkout (the folder holding vllm/)")
    if not fork_path.is_dir():
        raise ScaffoldError(f"{fork_path} is not a directory", "pass the fork's checkout (the folder holding vllm/)")
    fork = open_tree(fork_path)
    if since is None:
        note = ""
        if base == AUTO:
            nearest = nearest_release(fork)
            base, note = nearest.version, nearest.describe()
        base_tree, index = base_release(fork, base)
        return _compare(Triage(fork=str(fork_path), base=base_tree.label, base_note=note), fork, base_tree, index)
    from vllm_scaffold.vllm_facts.store import index_of_source

    commit = fork_point(fork.root, since)
    with tempfile.TemporaryDirectory(prefix="vllm-fork-point-") as scratch:
        point = tree_at(fork.root, commit, Path(scratch))
        note = f"git merge-base HEAD {since}: only the fork's own commits are compared"
        if base is not None:
            release = base_release(point, nearest_release(point).version if base == AUTO else base)[0]
            upstream = differing(point, release)
            note += f"; {upstream} files of vllm/ differ between {release.label} and the fork point (upstream's)"
        index = index_of_source(point.root, f"0+g{commit[:12]}")
        result = Triage(fork=str(fork_path), base=f"the fork point {commit[:12]}", base_note=note)
        return _compare(result, fork, point, index)


def _compare(result: Triage, fork: SourceTree, base_tree: SourceTree, index: ReleaseIndex) -> Triage:
    package = sorted(fork.package - GENERATED)
    result.not_in_fork = len(base_tree.package - fork.package - GENERATED)
    changed: list[tuple[str, ast.Module | None, ast.Module | None]] = []
    for path in package:
        fork_bytes = fork.read(path)
        if path in base_tree.paths and base_tree.read(path) == fork_bytes:
            continue
        result.compared += 1
        if not path.endswith(".py"):
            why = _path_rule(path) or load_routes().reason("data_file")
            change = "changed" if path in base_tree.paths else ADDED
            result.entries.append(Entry(path, path, change, "file", Route(FORK, why)))
            continue
        fork_tree = parse(fork_bytes.decode("utf-8", "replace"))
        if fork_tree is None:
            result.entries.append(
                Entry(module_name(path), path, "changed", "file", Route(FORK, load_routes().reason("syntax")))
            )
            continue
        base_ast = parse(base_tree.text(path)) if path in base_tree.paths else None
        changed.append((path, base_ast, fork_tree))
    router = Router(_overlay(index, [(p, f) for p, _b, f in changed if f is not None]), release=index)
    changes: list[tuple[str, Change, ast.Module | None]] = []
    for path, base_ast, fork_ast in changed:
        for change in compare(module_name(path), base_ast, fork_ast):
            if base_ast is None and change.kind == VALUE:
                continue  # a new module's values come with its classes and functions
            changes.append((path, change, base_ast))
    routed, result.features = _route_all(router, changes)
    result.entries.extend(routed)
    result.outside = _outside(sorted(p for p in fork.paths if not p.startswith("vllm/")))
    return result


def _overlay(index: ReleaseIndex, modules: list[tuple[str, ast.Module]]) -> ReleaseIndex:
    """The base release's index with the fork's versions of `modules`: class hierarchies as the fork has them."""
    data = dict(index.data)
    data["modules"] = dict(index.modules)
    for path, tree in modules:
        name = module_name(path)
        data["modules"][name] = ModuleReader(name, path.endswith("/__init__.py")).read(tree)
    return ReleaseIndex(data)


def _path_rule(path: str) -> str:
    rule = load_routes().fork_rule(path=path)
    return rule.why if rule else ""


def _route_all(
    router: Router, changes: list[tuple[str, Change, ast.Module | None]]
) -> tuple[list[Entry], list[Feature]]:
    """Every change with its route: first what each says about itself, then new code that only serves
    other changes takes their route, then what is left."""
    routes: dict[int, Route | None] = {}
    callers = rpc_callers([change for _p, change, _b in changes])
    for number, (_path, change, base_ast) in enumerate(changes):
        routes[number] = rpc_route(router, change, callers) or _direct(router, change, base_ast)
    users: dict[str, list[int]] = {}  # name -> the changes that mention it
    for number, (_path, change, _b) in enumerate(changes):
        if change.fork is not None:
            for name in mentioned(change.fork.node):
                users.setdefault(name, []).append(number)
    progress = True
    while progress:
        progress = False
        for number, (_path, change, _b) in enumerate(changes):
            if routes[number] is not None:
                continue
            placed = [n for n in users.get(change.key.rsplit(".", 1)[-1], []) if n != number and routes[n] is not None]
            # code a component or patch uses moves with it; code only forked code uses stays with the fork
            placed.sort(key=lambda n: routes[n].route == FORK)  # type: ignore[union-attr]
            if placed:
                found = routes[placed[0]]
                assert found is not None
                why = router.routes.reason("goes_with", user=changes[placed[0]][1].symbol, route=found.route)
                routes[number] = Route(
                    found.route, why, found.name, found.answers, found.target, found.note, found.joins
                )
                progress = True
    placed = [routes[n] or router.fork_route(router.routes.reason("unreferenced")) for n in range(len(changes))]
    final, found = route_features(router, [change for _p, change, _b in changes], placed)
    entries = [
        Entry(change.symbol, path, change.change, change.kind, route)
        for (path, change, _b), route in zip(changes, final, strict=True)
    ]
    symbols = [change.symbol for _p, change, _b in changes]
    named = [Feature(tuple(symbols[n] for n in f.members), f.rule, f.evidence, f.names) for f in found if f.members]
    return _merge_components(entries), named


def _direct(router: Router, change: Change, base_ast: ast.Module | None) -> Route | None:
    """The route a change has by itself; None for new code whose route is that of the code using it."""
    reasons = router.routes
    module, key, kind = change.module, change.key, change.kind
    node = change.fork.node if change.fork is not None else None
    base_node = change.base.node if change.base is not None else None
    # A class's own statements only: its methods are symbols of their own.
    searched = class_shell(node) if isinstance(node, ast.ClassDef) else node
    registrations = router.registrations_in(searched) if searched is not None else []
    if registrations:
        seam, name = registrations[0]
        cls = key.split(".")[0] if kind in {CLASS, METHOD} else ""
        if len(registrations) > 1 and cls:
            # a call several seams' registries have, made on no named registry: the class's base decides
            owner = router.index.resolve(f"{module}.{cls}")
            by_base = router.seam_of_class(owner) if owner.kind == "class" else None
            seam, name = next((r for r in registrations if by_base and r[0] == by_base[0]), registrations[0])
        return router.seam_route(
            seam, reasons.reason("registered", name=name or key, seam=seam.key), cls=cls, answer=name
        )
    if node is not None and kind in {FUNCTION, METHOD} and change.change != REMOVED:
        # a route vLLM's server already has, changed, is vLLM's handler: a patch, not a route of the plugin's
        known = set(_declared_routes(base_node)) if base_node is not None else set()
        routes = [route for route in _declared_routes(node) if route not in known]
        if routes:
            endpoint = router.routes.seam_for("http_routes")
            prefix = "/" + routes[0].split(" ", 1)[1].strip("/").split("/")[0]
            why = f"declares the HTTP route {routes[0]}: an endpoint component adds it to vLLM's server"
            return router.seam_route(endpoint, why, answer=prefix)
    registering = router.registering_seam(change.symbol) or (
        router.registering_seam(f"{module}.{key.split('.')[0]}") if kind == METHOD else None
    )
    if registering is not None and node is not None:
        added = new_names(node, base_node)
        answer = added[0] if added and registering.answer else ""
        why = reasons.reason("registered", name=answer or (added[0] if added else key), seam=registering.key)
        return router.seam_route(registering, why, answer=answer, joins=True)
    if kind in {CLASS, METHOD}:
        owner = key.split(".")[0]
        symbol = router.index.resolve(f"{module}.{owner}")
        found = router.seam_of_class(symbol) if symbol.kind == "class" else None
        is_base = found is not None and found[1] == f"{module}.{owner}" and found[1] in found[0].bases
        if found is not None and is_base and kind == METHOD and change.change == ADDED:
            # vLLM's own code calls what its base class declares, on every implementation
            return router.fork_route(reasons.reason("base_extended", owner=f"{module}.{owner}", seam=found[0].key))
        if found is not None:
            seam, base = found
            why = reasons.reason("covered", owner=f"{module}.{owner}", seam=seam.key)
            if base.endswith(f".{owner}") and change.change == ADDED and kind == CLASS:
                why = f"a new {base.rsplit('.', 1)[-1]}: a {seam.key} component holds it"
            elif change.change == ADDED and kind == CLASS:
                why = f"a new subclass of {base}: a {seam.key} component holds it"
            return router.seam_route(seam, why, cls=owner, symbol=symbol)
        parts = key.split(".")
        method = parts[1] if kind == METHOD and len(parts) == 2 else ""
        extending = router.extending_seam(f"{module}.{owner}", method) if change.change == ADDED and method else None
        if extending is not None:
            why = reasons.reason("extended", owner=f"{module}.{owner}", method=method, seam=extending.key)
            # the class vLLM mixes in is one per engine, whichever class it extends: every method joins it
            return router.seam_route(extending, why, cls=method if extending.name == "method" else owner, joins=True)
    if kind in {FUNCTION, METHOD}:
        covering = router.covering_seam(change.symbol)
        if covering is not None:
            why = reasons.reason("covered", owner=change.symbol, seam=covering.key)
            return router.seam_route(covering, why, joins=True)
    rule = router.routes.fork_rule(symbol=change.symbol, kind=kind)
    if rule is not None:
        return router.fork_route(rule.why)
    if change.change == REMOVED:
        return router.fork_route(reasons.reason("removed"))
    if change.change == ADDED and kind in {FUNCTION, METHOD, CLASS, VALUE}:
        return None
    if kind in {FUNCTION, METHOD}:
        return router.patch_route(module, key, "method" if kind == METHOD else "function")
    if kind == CLASS:
        return router.fork_route(reasons.reason("class_shell"))
    if kind == VALUE:
        importers = router.importers(module, key)
        if importers:
            users = ", ".join(importers[:3]) + (f" and {len(importers) - 3} more" if len(importers) > 3 else "")
            return router.fork_route(reasons.reason("copied_at_import", users=users, module=module, name=key))
        if base_ast is not None and key in import_time_names(base_ast):
            return router.fork_route(reasons.reason("read_at_import", module=module, name=key))
        general = router.routes.seam_for("process_wide")
        return router.seam_route(general, reasons.reason("settable", module=module, name=key), joins=True)
    assert kind == CODE
    general = router.routes.seam_for("process_wide")
    return router.seam_route(general, reasons.reason("code_at_import", module=module), joins=True)


def _declared_routes(node: ast.AST) -> list[str]:
    from vllm_scaffold.vllm_facts.routes import declared_routes

    module = ast.Module(body=[node], type_ignores=[])  # type: ignore[list-item]
    return [route for route, _ in declared_routes(module)]


def _merge_components(entries: list[Entry]) -> list[Entry]:
    """One component per thing a plugin registers: the symbols of one seam and one module, or one
    registered name, are one component; a symbol of a seam that names no component of its own joins the
    seam's only one. The component keeps the first name and gathers every inferred answer."""
    groups: list[tuple[str, set[str], set[str], list[int]]] = []  # seam, names, files, entry numbers
    order = sorted(range(len(entries)), key=lambda n: entries[n].route.joins)
    for number in order:
        entry, route = entries[number], entries[number].route
        if route.route in {FORK, PATCH, SETTING}:
            continue
        matching = [
            group
            for group in groups
            if group[0] == route.route and (route.joins or route.name in group[1] or entry.file in group[2])
        ]
        if route.joins and matching:
            matching = matching[:1]
        if not matching:
            groups.append((route.route, {route.name}, {entry.file}, [number]))
            continue
        # a symbol that shares a name with one group and a file with another makes them one
        seam, names, files, members = matching[0]
        for other in matching[1:]:
            names |= other[1]
            files |= other[2]
            members += other[3]
            groups.remove(other)
        names.add(route.name)
        files.add(entry.file)
        members.append(number)
    merged = list(entries)
    for seam, _names, _files, members in groups:
        answers: dict[str, str] = {}
        note = ""
        for number in members:
            for key, value in entries[number].route.answers:
                answers.setdefault(key, value)
            note = note or entries[number].route.note
        members.sort()
        anchored = [n for n in members if not entries[n].route.joins] or members
        name = entries[anchored[0]].route.name
        for number in members:
            old = entries[number]
            route = Route(seam, old.route.why, name, tuple(answers.items()), old.route.target, note)
            merged[number] = Entry(old.symbol, old.file, old.change, old.kind, route)
    return merged


def _outside(paths: list[str]) -> list[Outside]:
    """Files outside vllm/, one line each, a folder with many files in one line; a fork rule gives the why."""
    by_folder: dict[str, list[str]] = {}
    for path in paths:
        by_folder.setdefault(path.split("/")[0] if "/" in path else "", []).append(path)
    found: list[Outside] = []
    for folder, files in sorted(by_folder.items()):
        if folder and len(files) > FOLDER_LINES:
            found.append(Outside(f"{folder}/", len(files), _path_rule(f"{folder}/") or _path_rule(files[0])))
        else:
            found.extend(Outside(path, 1, _path_rule(path)) for path in files)
    return found
