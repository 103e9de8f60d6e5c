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
from vllm_scaffold.route.bases import GENERATED, History, base_release, differing, fork_point, nearest_release, tree_at
from vllm_scaffold.route.features import Feature
from vllm_scaffold.route.routing import FORK, PATCH, SETTING, Route, Router
from vllm_scaffold.route.symbols import Entry, route_all
from vllm_scaffold.vllm_facts import ReleaseIndex
from vllm_scaffold.vllm_facts.build import ModuleReader
from vllm_scaffold.vllm_facts.sources import SourceTree, open_tree
from vllm_scaffold.vllm_facts.symbol_diff import ADDED, VALUE, Change, compare, module_name, parse

# `--base auto`: the nearest release, found by comparing files.
AUTO = "auto"
# Folders outside vllm/ listed one line each up to this many files; beyond, one line for the folder.
FOLDER_LINES = 12


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
_FEATURE_TITLES = {
    "request_fields": "request fields",
    "engine_arguments": "settings",
    "wiring": "wiring of",
    "request_queues": "request queues",
}
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
        return _compare(result, fork, point, index, History(fork.root, commit))


def _compare(
    result: Triage, fork: SourceTree, base_tree: SourceTree, index: ReleaseIndex, history: History | None = None
) -> Triage:
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
    fork_trees = {p: f for p, _b, f in changed if f is not None}
    routed, result.features = route_all(router, changes, history, fork_trees)
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
