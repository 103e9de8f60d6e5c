"""Features: a fork's changed symbols tied together, and the rules that route a feature as a whole.

Symbol by symbol, a feature spread over the request path is many patches and forks. Two changes are tied when
one uses a name the other adds: a new symbol, a new field or parameter, a new attribute set on `self`. The
ties make features; the rules of `catalog/routing/features.toml` route the ones whose shape a seam carries
(request fields plumbed to the sampler, code run over `collective_rpc`, new engine arguments, a router added
to the server), and the methods of one class changed alike (`forward_cuda`, `forward_native`...) are one patch.
"""

from __future__ import annotations

import ast
import re
import tomllib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

from vllm_scaffold.errors import ScaffoldError
from vllm_scaffold.route.routing import FORK, PATCH, SETTING, Route, Router, mentioned
from vllm_scaffold.vllm_facts.facts import expand
from vllm_scaffold.vllm_facts.symbol_diff import ADDED, CLASS, FUNCTION, METHOD, Change, class_shell

FEATURES_FILE = Path(__file__).parents[1] / "catalog" / "routing" / "features.toml"
# Names too short or too common to tie two changes (`self`, `cfg`, dunders).
_SHORT = 4


@dataclass(frozen=True)
class FeatureRule:
    why: str
    evidence: tuple[str, ...]
    seam: str = ""
    declared_in: tuple[str, ...] = ()
    path: tuple[str, ...] = ()
    reaches: tuple[str, ...] = ()
    calls: tuple[str, ...] = ()
    runners: tuple[str, ...] = ()
    bases: tuple[str, ...] = ()


RULES = ("request_fields", "worker_rpc", "engine_arguments", "routers", "wiring", "request_queues")


@cache
def load_rules(path: Path = FEATURES_FILE) -> dict[str, FeatureRule]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    if set(data) != set(RULES):
        odd = sorted(set(data) ^ set(RULES))[0]
        raise ScaffoldError(f"{path.name}: the rule '{odd}' is missing or unknown", f"give exactly {RULES}")
    known = set(FeatureRule.__dataclass_fields__)
    rules = {}
    for key, table in data.items():
        unknown = set(table) - known
        if unknown:
            raise ScaffoldError(f"{path.name}: [{key}] has an unknown key '{sorted(unknown)[0]}'", "remove it")
        # a `why` may state a vLLM fact as {fact:KEY} (vllm_facts/facts.toml)
        values = {k: tuple(v) if isinstance(v, list) else expand(v) if k == "why" else v for k, v in table.items()}
        rules[key] = FeatureRule(**values)
    return rules


@dataclass(frozen=True)
class Footprint:
    """What a change adds (`introduced`: its own name when new, new fields, parameters and `self.` attributes)
    and what it newly refers to (`uses`)."""

    introduced: frozenset[str]
    uses: frozenset[str]


def _distinct(names: set[str]) -> frozenset[str]:
    return frozenset(n for n in names if len(n) >= _SHORT and not n.startswith("__"))


def _fields(node: ast.AST | None) -> set[str]:
    """Names a class body binds (fields, class attributes)."""
    if not isinstance(node, ast.ClassDef):
        return set()
    found: set[str] = set()
    for stmt in class_shell(node).body:
        targets = [stmt.target] if isinstance(stmt, ast.AnnAssign) else getattr(stmt, "targets", [])
        found.update(t.id for t in targets if isinstance(t, ast.Name))
    return found


def _parameters(node: ast.AST | None) -> set[str]:
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return set()
    arguments = node.args
    return {a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]}


def _self_stores(node: ast.AST | None) -> set[str]:
    if node is None:
        return set()
    return {
        n.attr
        for n in ast.walk(node)
        if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)
        and isinstance(n.value, ast.Name) and n.value.id == "self"
    }  # fmt: skip


def _refers(node: ast.AST | None) -> set[str]:
    if node is None:
        return set()
    return mentioned(node) | {k.arg for k in ast.walk(node) if isinstance(k, ast.keyword) and k.arg}


def new_fields(change: Change) -> list[str]:
    """The fields a class change adds, in source order."""
    if change.kind != CLASS or change.fork is None:
        return []
    base = _fields(change.base.node) if change.base is not None else set()
    fork_node = change.fork.node
    assert isinstance(fork_node, ast.ClassDef)
    order = [
        t.id
        for stmt in class_shell(fork_node).body
        for t in ([stmt.target] if isinstance(stmt, ast.AnnAssign) else getattr(stmt, "targets", []))
        if isinstance(t, ast.Name)
    ]
    return [name for name in dict.fromkeys(order) if name not in base]


def footprint(change: Change) -> Footprint:
    fork = change.fork.node if change.fork is not None else None
    base = change.base.node if change.base is not None else None
    leaf = change.key.rsplit(".", 1)[-1]
    if change.change == ADDED:
        introduced = {leaf} | set(new_fields(change))
        uses = _refers(fork) - {leaf}
    else:
        introduced = set(new_fields(change))
        introduced |= _parameters(fork) - _parameters(base)
        introduced |= _self_stores(fork) - _refers(base) if change.kind in {METHOD, FUNCTION} else set()
        uses = _refers(fork) - _refers(base)
    if change.kind == CLASS and fork is not None:
        uses = _refers(class_shell(fork)) - _refers(class_shell(base) if isinstance(base, ast.ClassDef) else None)
    return Footprint(_distinct(introduced), _distinct(uses - introduced))


def features(changes: list[Change], router: Router) -> list[list[int]]:
    """The changes grouped by what ties them (one uses a name another adds, where its module may mean that
    one, or both add it), each group in source order."""
    prints = [footprint(change) for change in changes]
    parent = list(range(len(changes)))

    def find(n: int) -> int:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    by_name: dict[str, list[int]] = {}
    for number, found in enumerate(prints):
        for name in found.introduced:
            if name in by_name:  # a field a class declares and its method sets: one feature
                parent[find(number)] = find(by_name[name][0])
            by_name.setdefault(name, []).append(number)
    for number, found in enumerate(prints):
        for name in found.uses:
            for other in by_name.get(name, []):
                if router.may_mean(changes[number].module, changes[other].module, name):
                    parent[find(number)] = find(other)
    groups: dict[int, list[int]] = {}
    for number in range(len(changes)):
        groups.setdefault(find(number), []).append(number)
    return list(groups.values())


def _under(symbol: str, prefixes: tuple[str, ...]) -> bool:
    return any(symbol == p or symbol.startswith(p + ".") or symbol.startswith(p + "[") for p in prefixes)


def _called_with(node: ast.AST, calls: tuple[str, ...]) -> list[str]:
    """The first arguments of the calls `calls` in `node`: a function's name, or a method's (a string)."""
    found = []
    for inner in ast.walk(node):
        if not isinstance(inner, ast.Call) or not inner.args:
            continue
        called = inner.func.attr if isinstance(inner.func, ast.Attribute) else getattr(inner.func, "id", "")
        if called not in calls:
            continue
        first = inner.args[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            found.append(first.value)
        elif isinstance(first, ast.Name | ast.Attribute):
            found.append(first.id if isinstance(first, ast.Name) else first.attr)
    return found


def _new_code(change: Change) -> list[ast.AST]:
    """The statements of the fork's version its base does not have (all of it for new code)."""
    if change.fork is None:
        return []
    if change.base is None:
        return [change.fork.node]
    base_dumps = {ast.dump(stmt) for stmt in ast.walk(change.base.node) if isinstance(stmt, ast.stmt)}
    return [
        stmt for stmt in ast.walk(change.fork.node) if isinstance(stmt, ast.stmt) and ast.dump(stmt) not in base_dumps
    ]


def rpc_callers(changes: list[Change]) -> dict[str, str]:
    """The functions and methods the fork's new code runs over `collective_rpc`, each with the first caller."""
    calls = load_rules()["worker_rpc"].calls
    callers: dict[str, str] = {}
    for change in changes:
        for statement in _new_code(change):
            for name in _called_with(statement, calls):
                callers.setdefault(name, change.symbol)
    return callers


def rpc_route(router: Router, change: Change, callers: dict[str, str]) -> Route | None:
    """The worker-extension route of new code run over `collective_rpc`: a function (it takes the worker as its
    first argument) or a method of a worker or model runner class."""
    rule = load_rules()["worker_rpc"]
    leaf = change.key.rsplit(".", 1)[-1]
    if change.change != ADDED or change.kind not in {FUNCTION, METHOD} or leaf not in callers:
        return None
    worker = router.routes.seam(rule.seam)
    assert worker is not None
    if change.kind == METHOD:
        # the fork's own classes count too: a runner the fork adds subclasses vLLM's
        owner = router.index.resolve(f"{change.module}.{change.key.split('.')[0]}")
        ancestors = {f"{c.module}.{c.name}" for c in router.index.mro(owner)[0]} if owner.kind == "class" else set()
        if not ancestors & (set(rule.runners) | set(worker.extends)):
            return None
    return router.seam_route(worker, rule.why.format(caller=callers[leaf]), cls=leaf, joins=True)


@dataclass(frozen=True)
class Feature:
    """Changed symbols tied together, and the rule that routed them as one (empty when none did)."""

    members: tuple[int, ...]
    rule: str = ""
    evidence: tuple[str, ...] = ()
    names: tuple[str, ...] = ()  # the request fields or settings it carries


def route_features(
    router: Router,
    changes: list[Change],
    routes: list[Route],
    made_by: Callable[[list[int]], list[frozenset[str]]] | None = None,
) -> tuple[list[Route], list[Feature]]:
    """The routes with the feature rules applied, and the features: those a rule routed, then the others, each
    largest first. `made_by` gives the fork's own commits that made each of some changes, where the fork's
    history is known."""
    rules = load_rules()
    routes = list(routes)
    groups = features(changes, router)
    found: list[Feature] = []
    # a router added to vLLM's server joins the endpoint component
    routers = rules["routers"]
    endpoint = router.routes.seam(routers.seam)
    assert endpoint is not None
    for number, change in enumerate(changes):
        if routes[number].route in {PATCH, FORK} and any(_called_with(s, routers.calls) for s in _new_code(change)):
            routes[number] = router.seam_route(endpoint, routers.why, joins=True)
    for group in groups:
        found.append(_request_fields(router, changes, routes, group, rules["request_fields"]))
        found.append(_settings(changes, routes, group, rules["engine_arguments"]))
    found += _request_queues(router, changes, routes, rules["request_queues"])
    found += _wiring(changes, routes, rules["wiring"], router, rules["worker_rpc"])
    _alike(changes, routes, list(range(len(changes))), made_by or (lambda numbers: [frozenset()] * len(numbers)))
    plain = [Feature(tuple(g)) for g in groups]
    named = [f for f in found if f.rule]
    claimed = {n for f in named for n in f.members}
    rest = [f for f in plain if not set(f.members) <= claimed]
    return routes, sorted(named, key=lambda f: -len(f.members)) + sorted(rest, key=lambda f: -len(f.members))


def _request_fields(
    router: Router, changes: list[Change], routes: list[Route], group: list[int], rule: FeatureRule
) -> Feature:
    fields: list[str] = []
    for number in group:
        if changes[number].symbol in rule.declared_in and changes[number].kind == CLASS:
            fields += new_fields(changes[number])
    if not fields or not any(_under(changes[n].symbol, rule.reaches) for n in group):
        return Feature(tuple(group))
    seam = router.routes.seam(rule.seam)
    assert seam is not None
    why = rule.why.format(fields=", ".join(fields))
    name = re.sub(r"_ids?$", "", fields[0])
    members = []
    for number in group:
        if _under(changes[number].symbol, rule.path) and routes[number].route in {PATCH, FORK}:
            routes[number] = router.seam_route(seam, why, cls=name)
            members.append(number)
    return Feature(tuple(members), "request_fields", rule.evidence, tuple(fields))


def _settings(changes: list[Change], routes: list[Route], group: list[int], rule: FeatureRule) -> Feature:
    keys: list[str] = []
    for number in group:
        change = changes[number]
        if change.kind == CLASS and _under(change.symbol, rule.declared_in) and routes[number].route == FORK:
            keys += new_fields(change)
    if not keys:
        return Feature(tuple(group))
    why = rule.why.format(keys=", ".join(keys))
    members = []
    for number in group:
        change = changes[number]
        if not _under(change.symbol, rule.declared_in) or routes[number].route not in {FORK, PATCH}:
            continue
        if change.kind == CLASS and not new_fields(change):
            continue  # a changed default, not a new key
        touched = footprint(change)
        if change.kind != CLASS and not (touched.uses | touched.introduced) & set(keys):
            continue  # neither reads nor sets a new key
        routes[number] = Route(SETTING, why, answers=tuple((key, "") for key in keys))
        members.append(number)
    return Feature(tuple(members), "engine_arguments", rule.evidence, tuple(keys))


def _alike(
    changes: list[Change],
    routes: list[Route],
    group: list[int],
    made_by: Callable[[list[int]], list[frozenset[str]]],
) -> None:
    """The patches changed alike become one patch: functions and methods of one module whose changes touch a
    new name in common (a new field they all read or set, a new hook they all call), methods of one class named
    alike (`forward_cuda`, `forward_native`) changed the same way, methods of one class that call new functions
    of one other module (its new helpers), functions or methods anywhere whose new statements are mostly the
    same (one check added to several handlers), and those the same commits of the fork made (one fix). The
    patch is named after the first, with the common stem when its methods share one; new code that went with
    one of them goes with the patch."""
    patches = [
        n
        for n in group
        if routes[n].route == PATCH and changes[n].kind in {METHOD, FUNCTION} and changes[n].change != ADDED
    ]
    if len(patches) < 2:
        return
    prints = {n: footprint(changes[n]) for n in group}
    new = {name for n in group for name in prints[n].introduced}
    touched = {n: (prints[n].uses | prints[n].introduced) & new for n in patches}
    owners = {n: f"{changes[n].module}.{changes[n].key.rsplit('.', 1)[0]}" for n in patches}
    stems = {n: changes[n].key.rsplit(".", 1)[-1].rsplit("_", 1)[0] for n in patches}
    statements = {n: {ast.dump(s) for s in _new_code(changes[n])} for n in patches}
    # the other modules whose new functions and classes each patch calls: one new helper module, one feature
    defined_in: dict[str, set[str]] = {}
    for n in group:
        if changes[n].change == ADDED and changes[n].kind in {FUNCTION, CLASS}:
            defined_in.setdefault(changes[n].key.rsplit(".", 1)[-1], set()).add(changes[n].module)
    helpers = {
        n: {m for name in prints[n].uses for m in defined_in.get(name, ()) if m != changes[n].module} for n in patches
    }

    # the same commits made them: one fix, unless they made most patches (a squashed fork says nothing)
    commits = dict(zip(patches, made_by(patches), strict=True))
    made = Counter(commits.values())
    one_fix = {n: bool(commits[n]) and made[commits[n]] * 2 <= len(patches) for n in patches}

    def alike(one: int, other: int) -> bool:
        if one_fix[one] and commits[one] == commits[other]:
            return True
        same_class = changes[one].kind == METHOD and owners[one] == owners[other]
        if changes[one].module == changes[other].module and (touched[one] & touched[other]):
            return True
        if same_class and helpers[one] & helpers[other]:
            return True
        if same_class and stems[one] == stems[other] and prints[one] == prints[other] and "_" in changes[one].key:
            return True
        shared, either = statements[one] & statements[other], statements[one] | statements[other]
        return bool(either) and len(shared) * 2 >= len(either)

    families: list[list[int]] = []
    for number in patches:
        joined = [family for family in families if any(alike(number, other) for other in family)]
        merged = sorted([number] + [n for family in joined for n in family])
        families = [f for f in families if f not in joined] + [merged]
    for family in families:
        targets = list(dict.fromkeys(routes[n].target for n in family))
        if len(targets) < 2:
            continue
        first = routes[family[0]]
        module = first.target.split(":")[0]
        shown = [t.split(":")[1] if t.split(":")[0] == module else t for t in targets[1:]]
        note = (
            f"also wraps {', '.join(shown)}: changed alike, around the same new names or by the same commits, "
            "one wrapper each"
        )
        stem = {f"{owners[n]}.{stems[n]}" for n in family}
        name = first.name
        if len(stem) == 1:
            method = first.target.rsplit(".", 1)[-1].strip("_")
            name = first.name.removesuffix(method) + stems[family[0]].strip("_")
        for number, route in enumerate(routes):
            if route.route == PATCH and route.target in targets:
                routes[number] = replace(route, name=name.strip("_"), target=first.target, note=note)


def _wiring(
    changes: list[Change], routes: list[Route], rule: FeatureRule, router: Router, worker: FeatureRule
) -> list[Feature]:
    """vLLM code changed only to plug in new code a seam component carries (a hook appending a new stat
    logger, a call attaching a new router, a caller of a new worker method over `collective_rpc`): the
    component's own loading replaces it, so it goes with the component. The new symbols it refers to must all
    be one seam's. A worker method's caller has the evidence of `worker` (the worker_rpc rule)."""
    added: dict[str, list[int]] = {}
    for number, change in enumerate(changes):
        if change.change == ADDED and change.kind in {CLASS, FUNCTION, METHOD}:
            added.setdefault(change.key.rsplit(".", 1)[-1], []).append(number)
    found = []
    for number, change in enumerate(changes):
        if routes[number].route not in {PATCH, FORK} or change.kind not in {FUNCTION, METHOD} or change.fork is None:
            continue
        said = set(footprint(change).uses) | set(_called_with(change.fork.node, rule.calls))
        carried = {
            other
            for name in said
            for other in added.get(name, [])
            if other != number and router.may_mean(change.module, changes[other].module, name)
        }
        # `from module import name` added to the function: that module's new `name`, whatever it is bound as
        imports = _imported(change.fork.node) - (_imported(change.base.node) if change.base is not None else set())
        carried |= {
            other for module, name in imports for other in added.get(name, []) if changes[other].module == module
        }
        carriers = sorted(carried)
        seams = {routes[n].route for n in carriers}
        if not carriers or len(seams) != 1 or seams & {PATCH, FORK, SETTING}:
            continue
        names = tuple(dict.fromkeys(changes[n].key for n in carriers))
        carrier = routes[carriers[0]]
        why = rule.why.format(names=", ".join(names), seam=carrier.route)
        routes[number] = replace(carrier, why=why, joins=True)
        evidence = worker.evidence if carrier.route == worker.seam else rule.evidence
        found.append(Feature((number,), "wiring", evidence, names))
    return found


def _imported(node: ast.AST) -> set[tuple[str, str]]:
    """The (module, name) pairs absolute `from module import name` statements in `node` import."""
    return {
        (inner.module, alias.name)
        for inner in ast.walk(node)
        if isinstance(inner, ast.ImportFrom) and inner.module and not inner.level
        for alias in inner.names
    }


def _request_queues(router: Router, changes: list[Change], routes: list[Route], rule: FeatureRule) -> list[Feature]:
    """A new request queue class with the policy that selects it: a scheduler component carries both (a
    Scheduler subclass that sets its own queue), and the changes to the policy's enum, its config Literal and
    the queue factory under `rule.path` join it."""
    seam = router.routes.seam(rule.seam)
    assert seam is not None
    queues = []
    for number, change in enumerate(changes):
        if change.change != ADDED or change.kind != CLASS or routes[number].route not in {PATCH, FORK}:
            continue
        owner = router.index.resolve(f"{change.module}.{change.key}")
        ancestors = {f"{c.module}.{c.name}" for c in router.index.mro(owner)[0]} if owner.kind == "class" else set()
        if ancestors & set(rule.bases):
            queues.append(number)
    if not queues:
        return []
    names = tuple(changes[n].key for n in queues)
    why = rule.why.format(names=", ".join(names))
    members = [
        number
        for number, change in enumerate(changes)
        if number in queues or (_under(change.symbol, rule.path) and routes[number].route in {PATCH, FORK})
    ]
    for number in members:
        routes[number] = router.seam_route(seam, why, cls=names[0], joins=number not in queues)
    return [Feature(tuple(members), "request_queues", rule.evidence, names)]
