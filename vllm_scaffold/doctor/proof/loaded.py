"""Which modules of the package vLLM loads, and how surely: the link "the code runs" of a finding's proof.

vLLM loads a plugin through its entry points; everything else runs only because loaded code imports it. From
the modules the package's `vllm.*` entry points name (and their parent packages), a module is reached when a
reached module imports it anywhere in its code (a function body runs when vLLM calls it, and which functions
vLLM calls is not decided here) or names it in a string (`"pkg.mod.Class"`, `"pkg.mod:func"`: the class paths a
platform returns and the registration tables general plugins loop over). An import under the importing
module's own vLLM version condition reaches its module only on the releases that condition selects, which
doctor does not evaluate: that module is reached under a condition, and so is one imported after such a
condition leaves the block (`if vllm.__version__ != "0.18.0": raise ...`); a string naming a module there
(`import_module("pkg.vllm0101")`) reaches it under that condition too. Where the condition reads vLLM's
version and `reading/versions.py` decides it on the checked release, the answer replaces the doubt: a pin that
admits the release reaches what follows it, a branch the release takes is reached, and what follows a pin that
raises on the release (or a branch it does not take) is not reached there: a module imported only from such code
is excluded on that release, and findings in it are suppressed with the pin named. Imports under
`if TYPE_CHECKING:` never run. A package without a vLLM entry point is read from the classes vLLM loads by
name (below: a KV connector users load by `kv_connector_module_path`), and what they import; one without such
classes either is loaded by whoever imports it, so every module counts as reached.

vLLM also loads classes the user names in an option (`--scheduler-cls pkg.mod.Cls`, `--worker-cls`,
`--logits-processors`, a KV connector's `kv_connector_module_path`, `--distributed-executor-backend`, the parser
plugin paths): a module that defines a subclass of one of those bases is reached too. Which bases and options
the checked release has is the release fact `classes-loaded-by-name` (facts.toml, its `loaded` table). A parser
is selected by a name registered with its manager, never by its path: a parser subclass is reached by its
option only when the package registers it (`@ToolParserManager.register_module(...)` on the class, or a
registration call naming it); an unregistered one is a copy of a parser the plugin puts somewhere else.
Where the package names classes of its own for an option in its code (a platform that sets
`parallel_config.worker_cls = "pkg.worker.Worker"`), those are what the option loads: another class for that
option, which nothing names, is not shown to be loaded by it (a user may still name it, so its findings are
warnings that say so).
"""

from __future__ import annotations

import ast
import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from vllm_scaffold.doctor.reading.guards import is_version_condition
from vllm_scaffold.doctor.reading.package import Module, PluginPackage, walk_nodes
from vllm_scaffold.doctor.reading.source import aliases, all_calls, qualified, resolve_relative
from vllm_scaffold.doctor.reading.versions import holds_on, reads_version
from vllm_scaffold.vllm_facts import ReleaseIndex, facts
from vllm_scaffold.vllm_facts.facts import LoadedByName
from vllm_scaffold.vllm_facts.parsers import REGISTRATION_METHODS
from vllm_scaffold.vllm_facts.syntax import is_type_checking

_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_VERSION_TEXT = re.compile(r"v?\d+\.\d+(?:\.\d+)?(?:[.+\w]*)")  # "0.9.2", "0.10", "v0.11.0rc1"


def _is_release_condition(test: ast.expr) -> bool:
    """A condition on a release: a version test (`vllm.__version__ >= ...`, `is_version_...`) or any test that
    compares with or passes a version literal (`is_vllm_equal("0.9.2")`, `is_torch_equal_or_newer("2.6")`)."""
    if is_version_condition(test):
        return True
    return any(
        isinstance(node, ast.Constant) and isinstance(node.value, str) and _VERSION_TEXT.fullmatch(node.value)
        for node in walk_nodes(test)
    )


class Reach(StrEnum):
    """Whether loading the plugin as vLLM does runs a module: always, only on releases that pass a version
    condition, never on the checked release (the plugin's own pin keeps it out), or never. The value is how a
    finding's chain says it."""

    REACHED = "reached"
    CONDITIONAL = "reached only under a version condition"
    EXCLUDED = "not reached on the checked release"
    UNREACHED = "not reached"


@dataclass(frozen=True)
class Loading:
    """How a module is reached, and the evidence: the first import or string that reaches it, or why none does."""

    reach: Reach
    evidence: str


@dataclass(frozen=True)
class _Edge:
    target: str
    where: str  # the import or string that names the target
    conditional: bool  # under the naming module's own vLLM version condition
    condition: str = "is imported only under the plugin's own vLLM version condition"
    excluded: str | None = None  # the plugin's own version pin that keeps the checked release from it


def _named_modules(package: PluginPackage, text: str) -> list[str]:
    """The package modules importing `text` runs, parents first (only those the package has)."""
    parts = text.split(".")
    return [name for i in range(len(parts)) if (name := ".".join(parts[: i + 1])) in package.modules]


def _leaves(body: list[ast.stmt]) -> bool:
    """Whether `body` ends by leaving its block: `raise`, `return`, `sys.exit(...)`."""
    last = body[-1] if body else None
    if isinstance(last, ast.Raise | ast.Return):
        return True
    return (
        isinstance(last, ast.Expr)
        and isinstance(last.value, ast.Call)
        and isinstance(last.value.func, ast.Attribute | ast.Name)
        and (last.value.func.attr if isinstance(last.value.func, ast.Attribute) else last.value.func.id) == "exit"
    )


def _exits_on_some_release(stmt: ast.stmt, module: Module) -> bool:
    """`if <release condition>: raise` (or return, exit), also as the last statement of another `if`'s body
    (`if not SKIP_CHECK: if vllm.__version__ != PIN: raise`): what follows it runs on some releases only."""
    if not isinstance(stmt, ast.If) or not stmt.body:
        return False
    if _is_release_test(stmt.test, module) and _leaves(stmt.body):
        return True
    return _exits_on_some_release(stmt.body[-1], module)


def _is_release_test(test: ast.expr, module: Module) -> bool:
    """A release condition by its words, or one that reads vLLM's version through names bound to it
    (`current = Version(vllm.__version__)` ... `if current < oldest:`). Read once per test: each `if` is asked
    about several times, for every release checked."""
    answers = module.memoised("release-tests", dict[int, bool])
    if id(test) not in answers:
        answers[id(test)] = _is_release_condition(test) or reads_version(module, test)
    return answers[id(test)]


def _exit_on(stmt: ast.If, module: Module, version: str | None) -> bool | None:
    """Whether the release condition that ends `stmt`'s block (`_exits_on_some_release`) leaves on `version`:
    False when its test is decided not to hold (what follows runs), True when it holds and nothing undecided
    stands before it (what follows does not run), None otherwise."""
    if _is_release_test(stmt.test, module) and _leaves(stmt.body):
        holds = holds_on(module, stmt.test, version)
        if holds is False and stmt.orelse and _leaves(stmt.orelse):
            return None
        return holds
    inner = stmt.body[-1]
    return False if isinstance(inner, ast.If) and _exit_on(inner, module, version) is False else None


def _edges(package: PluginPackage, module: Module, version: str | None = None) -> list[_Edge]:
    """Every package module `module` imports or names, with where and whether only under a version condition
    (or, with the checked release's `version`, kept from it by one)."""
    found: list[_Edge] = []

    def add(
        text: str, node: ast.AST, conditional: bool, condition: str = _Edge.condition, excluded: str | None = None
    ) -> None:
        for target in _named_modules(package, text):
            if target != module.name:
                found.append(_Edge(target, module.where(node), conditional, condition, excluded))

    conditional_lines: list[tuple[int, int]] = []  # the statements that run only under such a condition
    excluded_lines: list[tuple[int, int, str]] = []  # those the checked release never runs, and why

    def visit(
        statements: list[ast.stmt], conditional: bool, covered: bool = False, excluded: str | None = None
    ) -> None:
        for stmt in statements:
            if excluded is not None and not covered:
                excluded_lines.append((stmt.lineno, stmt.end_lineno or stmt.lineno, excluded))
            elif conditional and not covered:  # (a statement inside a recorded one is covered by it)
                conditional_lines.append((stmt.lineno, stmt.end_lineno or stmt.lineno))
            if isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    add(alias.name, stmt, conditional, excluded=excluded)
            elif isinstance(stmt, ast.ImportFrom):
                source = resolve_relative(module, stmt)
                add(source, stmt, conditional, excluded=excluded)
                for alias in stmt.names:
                    if alias.name != "*":
                        add(f"{source}.{alias.name}", stmt, conditional, excluded=excluded)
            elif isinstance(stmt, ast.If) and is_type_checking(stmt.test):
                visit(stmt.orelse, conditional, covered or conditional or excluded is not None, excluded)
                continue
            inside = covered or conditional or excluded is not None
            if isinstance(stmt, ast.If) and _is_release_test(stmt.test, module):
                holds = holds_on(module, stmt.test, version)
                where = f"the plugin's own vLLM version condition at {module.where(stmt)}"
                for branch, taken in ((stmt.body, holds), (stmt.orelse, None if holds is None else not holds)):
                    if taken is False:
                        visit(branch, conditional, inside, excluded or f"{where}, which vLLM {version} does not meet")
                    else:
                        visit(branch, conditional or taken is None, inside, excluded)
            else:
                for field in ("body", "orelse", "finalbody"):
                    children = getattr(stmt, field, None)
                    if isinstance(children, list):
                        visit(
                            [child for child in children if isinstance(child, ast.stmt)], conditional, inside, excluded
                        )
                for handler in getattr(stmt, "handlers", ()):
                    visit(handler.body, conditional, inside, excluded)
                for case in getattr(stmt, "cases", ()):
                    visit(case.body, conditional, inside, excluded)
            if isinstance(stmt, ast.If) and _exits_on_some_release(stmt, module):
                leaves = _exit_on(stmt, module, version)
                if leaves and excluded is None:  # `if <not the pinned release>: raise`, and this is not it
                    excluded = (
                        f"the plugin's own vLLM version pin at {module.where(stmt)}, which leaves on vLLM {version}"
                    )
                elif leaves is None:
                    conditional = True  # what follows runs on the pinned releases only

    if module.tree is not None:
        visit(module.tree.body, False)
    for node, text in _dotted_strings(module):
        line = node.lineno
        if not _named_modules(package, text):
            add(text, node, False)
        elif pin := next((why for first, last, why in excluded_lines if first <= line <= last), None):
            add(text, node, True, excluded=pin)
        elif any(first <= line <= last for first, last in conditional_lines):
            add(text, node, True, "is named only under the plugin's own vLLM version condition")
        else:
            add(text, node, False)
    return found


def loaded_bases(version: str | None) -> dict[str, LoadedByName]:
    """vLLM's base classes whose subclasses `version` loads by a name the user gives, by qualified name."""
    return {entry.base: entry for entry in facts.holding("classes-loaded-by-name", version).loaded}


def _last_name(node: ast.expr) -> str:
    """`ToolParserManager` of `ToolParserManager`, `abstract_tool_parser.ToolParserManager`."""
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""


def _registers(call: ast.expr, registry: str) -> bool:
    """`<registry>.register_module(...)` / `register_lazy_module(...)`."""
    return (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr in REGISTRATION_METHODS
        and _last_name(call.func.value) == registry
    )


class _Registered:
    """The names of the classes the package registers with each parser manager: every class a module that
    calls the manager's registration names (`register_module(module=Cls)`, `register_lazy_module(name,
    "pkg.mod", "Cls")`, a table of classes it loops over), read once, when asked."""

    def __init__(self, package: PluginPackage) -> None:
        self.package = package
        self._names: dict[str, frozenset[str]] | None = None

    def has(self, node: ast.ClassDef, registry: str) -> bool:
        if any(_registers(decorator, registry) for decorator in node.decorator_list):
            return True
        if self._names is None:
            registering: dict[str, dict[str, Module]] = {}
            for call in all_calls(self.package, frozenset(REGISTRATION_METHODS)):
                owner = (call.receiver or "").rpartition(".")[2]
                registering.setdefault(owner, {})[call.module.name] = call.module
            self._names = {owner: frozenset(_named(modules.values())) for owner, modules in registering.items()}
        return node.name in self._names.get(registry, frozenset())


def _named(modules: Iterable[Module]) -> set[str]:
    """Every name the modules' code mentions: names, attributes, and the last part of dotted strings."""
    names: set[str] = set()
    for module in modules:
        for part in walk_nodes(module.tree) if module.tree is not None else ():
            if isinstance(part, ast.Name | ast.Attribute):
                names.add(_last_name(part))
            elif isinstance(part, ast.Constant) and isinstance(part.value, str) and len(part.value) < 300:
                names.add(re.split(r"[.:]", part.value)[-1])
    return names


def _classes_by_option(
    package: PluginPackage, index: ReleaseIndex | None, registered: _Registered
) -> dict[str, list[tuple[str, str, LoadedByName]]]:
    """Module name -> (class, the vLLM ancestor it is loaded by, how) for each class of the module that a
    loaded base of the release (registered, where vLLM selects it by a registered name) has among its
    ancestors: the first such ancestor per class."""
    bases = loaded_bases(index.version if index is not None else None)
    found: dict[str, list[tuple[str, str, LoadedByName]]] = {}
    for name, module in package.modules.items():
        if module.tree is None:
            continue
        table = aliases(module)
        for node in module.of_type(ast.ClassDef):
            for ancestor, entry in _loaded_ancestors(node, table, index, bases):
                # a parser is selected by the name it is registered under; any other class by its own path
                if entry.registry:
                    selected = registered.has(node, entry.registry)
                else:
                    selected = not _copies_vllm_class(name, node.name, index)
                if selected:
                    found.setdefault(name, []).append((node.name, ancestor, entry))
                    break
    return found


def _copies_vllm_class(module: str, cls: str, index: ReleaseIndex | None) -> bool:
    """The class is the plugin's copy of one of vLLM's, kept at a path that mirrors vLLM's own (`Scheduler` in
    `pkg.patch.v1.core.sched.scheduler`, vLLM's `vllm.v1.core.sched.scheduler.Scheduler`): the plugin puts it in
    vLLM's place itself; it is not a class of its own for a user to name in an option (one it registers with a
    parser manager is selected by that name, and counts as loaded)."""
    if index is None:
        return False
    parts = module.split(".")
    return any(
        index.resolve(".".join(["vllm", *parts[start:], cls])).kind == "class" for start in range(1, len(parts) - 1)
    )


def _loaded_ancestors(
    node: ast.ClassDef, table: dict[str, str], index: ReleaseIndex | None, bases: dict[str, LoadedByName]
) -> Iterable[tuple[str, LoadedByName]]:
    for base in node.bases:
        name = qualified(base, table) if isinstance(base, ast.Name | ast.Attribute) else None
        if name is None or not name.startswith("vllm."):
            continue
        ancestors = [name]
        if index is not None and (symbol := index.resolve(name)).kind == "class":
            ancestors += [cls.qualname for cls in index.mro(symbol)[0]]
        yield from ((ancestor, bases[ancestor]) for ancestor in ancestors if ancestor in bases)


def _loaded_by_name(
    package: PluginPackage, index: ReleaseIndex | None, registered: _Registered
) -> dict[str, tuple[str, bool]]:
    """Module name -> (the evidence that vLLM loads it by a class the user names in an option, whether vLLM imports
    it by its module name, its parent packages first: a parser plugin is a file vLLM imports by its path alone),
    for each module defining such a class. Where the package itself names classes of its own for an option (a
    platform that sets `parallel_config.worker_cls = "pkg.worker.Worker"`), those are the ones the option loads:
    another class for that option, which nothing names, is not shown to be loaded by it."""
    by_option = _classes_by_option(package, index, registered)
    written = _package_strings(package)
    chosen = {
        entry.option
        for name, classes in by_option.items()
        for cls, _ancestor, entry in classes
        if f"{name}.{cls}" in written
    }
    loaded = facts.fact("classes-loaded-by-name").text()
    found: dict[str, tuple[str, bool]] = {}
    for name, classes in by_option.items():
        for cls, ancestor, entry in classes:
            if entry.option in chosen and f"{name}.{cls}" not in written:
                continue
            evidence = f"{name}.{cls} subclasses {ancestor}, named with {entry.option}: {loaded}"
            found[name] = (evidence, not entry.registry)
            break
    return found


def _package_strings(package: PluginPackage) -> frozenset[str]:
    """Every dotted name the package's code writes in a string."""
    return frozenset(text for module in package.modules.values() for _node, text in _dotted_strings(module))


def _dotted_strings(module: Module) -> list[tuple[ast.Constant, str]]:
    """Each string of the module that is a dotted name (`pkg.mod.Cls`; `pkg.mod:Cls` read as `pkg.mod.Cls`), with
    its node; read once per module."""

    def read() -> list[tuple[ast.Constant, str]]:
        return [
            (node, text)
            for node in module.of_type(ast.Constant)
            if isinstance(node.value, str)
            and len(node.value) < 300
            and _DOTTED.fullmatch(text := node.value.strip().replace(":", "."))
        ]

    return module.memoised("dotted-strings", read)


def loading(
    package: PluginPackage, vllm_imports: frozenset[str] = frozenset(), index: ReleaseIndex | None = None
) -> dict[str, Loading]:
    """Module name -> how vLLM reaches it, for every module of the package. `vllm_imports`: the names outside
    vLLM that the checked release's own modules import (`tpu_inference.platforms.TpuPlatform`): vLLM loads
    those modules itself. `index`: the checked release, for the ancestry of the classes the modules define."""
    roots = {ep.module for ep in package.project.vllm_entry_points}
    by_name = _loaded_by_name(package, index, _Registered(package))
    if not roots and not by_name:
        return {name: Loading(Reach.REACHED, "the package has no vLLM entry point") for name in package.modules}
    roots |= {name for name in vllm_imports if name.split(".")[0] in package.project.packages}
    version = index.version if index is not None else None
    edges = {
        name: _edges(package, module, version) for name, module in package.modules.items() if module.tree is not None
    }
    found: dict[str, Loading] = {}
    queue: deque[str] = deque()
    for name, (evidence, by_module_name) in by_name.items():
        # importing a module by its name imports its parent packages first
        for module in _named_modules(package, name) if by_module_name else [name]:
            if module not in found:
                found[module] = Loading(
                    Reach.REACHED, evidence if module == name else f"{name} is imported: {evidence}"
                )
                queue.append(module)
    for root in sorted(roots):
        for name in _named_modules(package, root):
            if name not in found:
                found[name] = Loading(Reach.REACHED, f"vLLM loads {root} (an entry point, or vLLM's own import)")
                queue.append(name)
    for conditional_pass in (False, True):  # first what runs on every release, then what a condition selects
        if conditional_pass:
            queue.extend(found)
        while queue:
            current = queue.popleft()
            for edge in edges.get(current, ()):
                if edge.target in found or edge.excluded is not None or (edge.conditional and not conditional_pass):
                    continue
                conditional = conditional_pass and (edge.conditional or found[current].reach is Reach.CONDITIONAL)
                if conditional:
                    how = Loading(
                        Reach.CONDITIONAL,
                        f"{edge.target} {edge.condition} ({edge.where})",
                    )
                else:
                    how = Loading(Reach.REACHED, f"{edge.where} imports or names {edge.target}")
                for name in _named_modules(package, edge.target):
                    if name not in found:
                        found[name] = how
                        queue.append(name)
    for current in list(found):  # what only code the checked release never runs imports or names
        for edge in edges.get(current, ()):
            if edge.excluded is not None and edge.target not in found:
                how = Loading(
                    Reach.EXCLUDED, f"{edge.target} is imported or named only behind {edge.excluded} ({edge.where})"
                )
                for name in _named_modules(package, edge.target):
                    found.setdefault(name, how)
    for name in package.modules:
        if package.project.vllm_entry_points:
            unreached = f"nothing the package's vLLM entry points load imports or names {name}"
        else:
            unreached = (
                f"the package has no vLLM entry point, and nothing its classes named in options load imports or "
                f"names {name}"
            )
        found.setdefault(name, Loading(Reach.UNREACHED, unreached))
    return found
