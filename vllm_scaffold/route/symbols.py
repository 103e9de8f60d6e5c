"""Each changed symbol of a fork routed: first by what the change says about itself (a registration, a route
it declares, the class it is on, the function it is), then new code takes the route of the changes that use it,
then the feature rules route what ties symbols together, and the symbols of one component are merged.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from vllm_scaffold.catalog.routes import SeamRoute
from vllm_scaffold.route.bases import History
from vllm_scaffold.route.features import Feature, route_features, rpc_callers, rpc_route
from vllm_scaffold.route.routing import FORK, PATCH, SETTING, Route, Router, mentioned, new_names
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
    import_time_names,
)
from vllm_scaffold.wording import a


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


def route_all(
    router: Router,
    changes: list[tuple[str, Change, ast.Module | None]],
    history: History | None = None,
    fork_trees: dict[str, ast.Module] | None = None,
) -> tuple[list[Entry], list[Feature]]:
    """Every change with its route: first what each says about itself, then new code that only serves
    other changes takes their route, then what is left. `fork_trees` holds the fork's modules by path (the
    `APIRouter(prefix=...)` a route is declared on)."""
    routes: dict[int, Route | None] = {}
    callers = rpc_callers([change for _p, change, _b in changes])
    trees = fork_trees or {}
    for number, (path, change, base_ast) in enumerate(changes):
        routes[number] = rpc_route(router, change, callers) or _direct(router, change, base_ast, trees.get(path))
    _bring_named_classes(router, changes, routes, trees)
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
            leaf = change.key.rsplit(".", 1)[-1]
            placed = [
                n
                for n in users.get(leaf, [])
                if n != number and routes[n] is not None and router.may_mean(changes[n][1].module, change.module, leaf)
            ]
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

    def made_by(numbers: list[int]) -> list[frozenset[str]]:
        """The fork's own commits that made each function or method of `numbers` (none without its history)."""
        functions = [(changes[n][0], changes[n][1].fork) for n in numbers]
        spans = [
            (p, f.node) if f and isinstance(f.node, ast.FunctionDef | ast.AsyncFunctionDef) else None
            for p, f in functions
        ]
        if history is None:
            return [frozenset()] * len(numbers)
        history.read({span[0] for span in spans if span is not None})
        return [
            history.commits(span[0], span[1].lineno, span[1].end_lineno or span[1].lineno) if span else frozenset()
            for span in spans
        ]

    final, found = route_features(router, [change for _p, change, _b in changes], placed, made_by)
    entries = [
        Entry(change.symbol, path, change.change, change.kind, route)
        for (path, change, _b), route in zip(changes, final, strict=True)
    ]
    symbols = [change.symbol for _p, change, _b in changes]
    named = [Feature(tuple(symbols[n] for n in f.members), f.rule, f.evidence, f.names) for f in found if f.members]
    return _merge_components(entries), named


def _bring_named_classes(
    router: Router,
    changes: list[tuple[str, Change, ast.Module | None]],
    routes: dict[int, Route | None],
    trees: dict[str, ast.Module],
) -> None:
    """A changed vLLM class that a component's class names by its path (a platform's `worker_cls =
    "vllm.worker.neuron_worker.NeuronWorker"`) goes with that component, methods, class and all: the plugin
    holds its own copy of it and names that one, instead of patching vLLM's method by method. So does a changed
    or new class that only the classes it brings use (the worker's model runner, and that runner's inputs)."""
    owners = [f"{c.module}.{c.key.split('.')[0]}" if c.kind in {CLASS, METHOD} else c.symbol for _p, c, _b in changes]

    def movable(number: int) -> bool:
        route = routes[number]
        return changes[number][1].kind in {CLASS, METHOD} and (route is None or route.route in {PATCH, FORK})

    brought: dict[str, tuple[int, str]] = {}  # class -> (the component's change, why it goes there)
    for number, (path, change, _b) in enumerate(changes):
        route = routes[number]
        if route is None or route.route in {PATCH, FORK, SETTING} or change.kind not in {CLASS, METHOD}:
            continue
        owner = change.key.split(".")[0]
        tree = trees.get(path)
        node = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == owner), None) if tree else None
        for text in _dotted_strings(node if node is not None else change.fork.node if change.fork else None):
            if text not in brought and any(owners[n] == text and movable(n) for n in range(len(changes))):
                why = router.routes.reason(
                    "named_by", user=owners[number], owner=text, route=route.route, name=text.rsplit(".")[-1]
                )
                brought[text] = (number, why)
    if not brought:
        return
    users: dict[str, set[str]] = {}  # a name -> the classes (or functions) whose changed code mentions it
    for number, (_p, change, _b) in enumerate(changes):
        if change.fork is not None:
            for name in mentioned(change.fork.node):
                users.setdefault(name, set()).add(owners[number])
    candidates = {owners[n] for n in range(len(changes)) if movable(n)} - brought.keys()
    progress = True
    while progress:
        progress = False
        for cls in sorted(candidates - brought.keys()):
            using = users.get(cls.rsplit(".", 1)[-1], set()) - {cls}
            if using and using <= brought.keys():
                user = sorted(using)[0]
                component = brought[user][0]
                route = routes[component]
                assert route is not None
                why = router.routes.reason("held_with", user=user, owner=cls, route=route.route)
                brought[cls] = (component, why)
                progress = True
    for number, owner in enumerate(owners):
        if owner in brought and movable(number):
            component, why = brought[owner]
            found = routes[component]
            assert found is not None
            routes[number] = Route(found.route, why, found.name, found.answers, found.target, found.note, True)


def _dotted_strings(node: ast.AST | None) -> list[str]:
    """The `vllm.`-dotted paths a node's code writes as strings (`"vllm.mod.Cls"`, `"vllm.mod:Cls"`)."""
    if node is None:
        return []
    return [
        n.value.replace(":", ".")
        for n in ast.walk(node)
        if isinstance(n, ast.Constant)
        and isinstance(n.value, str)
        and n.value.startswith("vllm.")
        and " " not in n.value
    ]


def _direct(
    router: Router, change: Change, base_ast: ast.Module | None, fork_ast: ast.Module | None = None
) -> Route | None:
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
        known = set(_declared_routes(base_node, base_ast)) if base_node is not None else set()
        routes = [route for route in _declared_routes(node, fork_ast) if route not in known]
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
    if kind == FUNCTION and change.change != REMOVED:
        entry = _registration_entry(router, module, key, fork_ast or base_ast)
        if entry is not None:
            seam, table = entry
            why = reasons.reason("registration_entry", name=change.symbol, table=table, seam=seam.key)
            return router.seam_route(seam, why, joins=True)
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
                why = f"a new {base.rsplit('.', 1)[-1]}: {a(seam.key)} component holds it"
            elif change.change == ADDED and kind == CLASS:
                why = f"a new subclass of {base}: {a(seam.key)} component holds it"
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
    if kind == VALUE and not _binds_a_name(node):
        kind = CODE  # `torch.backends.x = True`: sets another object's attribute while the module is imported
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


def _registration_entry(
    router: Router, module: str, name: str, tree: ast.Module | None
) -> tuple[SeamRoute, str] | None:
    """(the seam, the table) where a module-level table of vLLM's that is a seam's registration point names the
    function `name` among its values (`builtin_platform_plugins = {"cpu": cpu_platform_plugin, ...}`)."""
    for stmt in tree.body if tree is not None else ():
        if not isinstance(stmt, ast.Assign) or not isinstance(stmt.value, ast.Dict):
            continue
        for target in stmt.targets:
            table = f"{module}.{target.id}" if isinstance(target, ast.Name) else ""
            seam = router.registering_seam(table) if table else None
            if seam is not None and any(isinstance(v, ast.Name) and v.id == name for v in stmt.value.values):
                return seam, table
    return None


def _binds_a_name(node: ast.AST | None) -> bool:
    """Whether a module-level assignment binds a name of its module (not only attributes or items of others)."""
    if not isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
        return True
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    unpacked = [e for t in targets if isinstance(t, ast.Tuple | ast.List) for e in t.elts]
    return any(isinstance(t, ast.Name) for t in [*targets, *unpacked])


def _declared_routes(node: ast.AST, tree: ast.Module | None) -> list[str]:
    """The routes `node` declares, prefixed as its module's routers (`APIRouter(prefix=...)`) say."""
    from vllm_scaffold.vllm_facts.routes import declared_routes

    # the module's own statements (its routers and string constants) before the function
    prelude = [s for s in tree.body if isinstance(s, ast.Assign | ast.AnnAssign)] if tree is not None else []
    module = ast.Module(body=[*prelude, node], type_ignores=[])  # type: ignore[list-item]
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
