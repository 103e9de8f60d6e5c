"""Attributes the plugin reads that the release does not have: of imported vLLM names (`vllm.x.Name.attr`),
of `self` in a class deriving from vLLM classes, and of `super()` (a member no base has, or a call its
arguments cannot bind)."""

from __future__ import annotations

import ast

from vllm_scaffold.doctor.reading.package import Module, walk_nodes
from vllm_scaffold.doctor.reading.source import class_body_names, qualified
from vllm_scaffold.doctor.releases.calls import other_branch_binds
from vllm_scaffold.doctor.releases.classes import FunctionNode, PluginClasses
from vllm_scaffold.doctor.releases.findings import Findings
from vllm_scaffold.doctor.releases.places import Place, head, in_annotations, is_dunder
from vllm_scaffold.doctor.releases.signatures import call_problem
from vllm_scaffold.vllm_facts import Signature, Symbol
from vllm_scaffold.vllm_facts.build import sets_computed_attributes


def check_attributes(classes: PluginClasses, out: Findings, module: Module) -> None:
    """`vllm.x.Name.attr` read through the module's imports where the release has no `attr`."""
    release = classes.release
    table = classes.tables[module.name]
    attributes = module.of_type(ast.Attribute)
    inner = {id(n.value) for n in attributes}
    shadowed: set[int] | None = None
    for node in attributes:
        if id(node) in inner or not isinstance(node.ctx, ast.Load):
            continue  # setting an attribute never raises
        first = head(node)
        if not isinstance(first, ast.Name) or first.id not in table:
            continue
        name = qualified(node, table)
        if not name or name.split(".")[0] != "vllm" or id(node) in in_annotations(module):
            continue
        place = Place(module, node)
        if place.type_checking:
            continue
        if shadowed is None:
            shadowed = _shadowed_heads(module, table)
        if id(node) in shadowed:
            continue
        missing = release.first_missing(name)
        imported = table[first.id]
        if missing and missing in classes.set_by_package:
            continue  # the plugin puts it there itself (`Scheduler._original = Scheduler.schedule`)
        if missing and len(missing) > len(imported) and not is_dunder(missing.rsplit(".", 1)[-1]):
            out.report(
                "vllm-attribute-missing",
                place,
                f"{missing} does not exist in {release.label}{release.elsewhere(missing)}: reading it raises "
                "AttributeError",
                "use what this release offers instead, or test for it with hasattr() on the releases that lack it",
            )


def _shadowed_heads(module: Module, table: dict[str, str]) -> set[int]:
    """Attribute reads inside a function whose head name is that function's parameter or local variable,
    not the module-level vLLM import of the same name (`layer.w13_weight` with a parameter `layer`). Empty
    when no parameter or assignment anywhere in the module binds a name `table` imports from vLLM: only
    reads through those names are asked about, and most modules never rebind one."""
    vllm_names = {name for name, target in table.items() if target.split(".")[0] == "vllm"}
    rebound = any(a.arg in vllm_names for a in module.of_type(ast.arg)) or any(
        n.id in vllm_names and isinstance(n.ctx, ast.Store) for n in module.of_type(ast.Name)
    )
    return module.memoised("shadowed-heads", lambda: _locals_read(module)) if rebound else set()


def _locals_read(module: Module) -> set[int]:
    shadowed: set[int] = set()
    for function in module.of_type(ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda):
        args = function.args
        local = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg] if a}
        inside = walk_nodes(function)
        local |= {n.id for n in inside if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        local -= {name for n in inside if isinstance(n, ast.Global | ast.Nonlocal) for name in n.names}
        shadowed |= {id(n) for n in inside if isinstance(n, ast.Attribute) and getattr(head(n), "id", None) in local}
    return shadowed


def check_self_attributes(classes: PluginClasses, out: Findings, module: Module, node: ast.ClassDef) -> None:
    """`self.X` read in a method of a class deriving from vLLM classes where nothing defines X: not the
    plugin's classes of the lineage (members, class attributes, anything the package assigns), not any
    vLLM ancestor in this release (`ReleaseIndex.instance_attribute`). Silent whenever a base is outside
    the index, or a class of the lineage has a `__getattr__` or sets attributes by computed name."""
    release = classes.release
    qualname = f"{module.name}.{node.name}"
    lineage = classes.plugin_lineage(qualname)
    if lineage is None or not lineage[1]:
        return
    lineage_classes, bases = list(lineage[0]), list(lineage[1])
    for descendant in classes.descendants(qualname):  # what a subclass defines, a read in the base may mean
        more = classes.plugin_lineage(descendant)
        if more is None:
            return
        lineage_classes += more[0]
        bases += more[1]
    if any(_sets_computed_attributes(classes, cls) for cls in lineage_classes):
        return
    stored = classes.stored_by_package  # anything the package assigns anywhere, looked up rather than copied
    defined: set[str] = set()
    for cls in lineage_classes:
        defined |= class_body_names(cls)
    if any(n in defined or n in stored for n in ("__getattr__", "__getattribute__", "__slots__")):
        return
    reported: set[str] = set()
    for method in node.body:
        if not isinstance(method, ast.FunctionDef | ast.AsyncFunctionDef) or not method.args.args:
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
            if name in defined or name in stored or name in reported or is_dunder(name):
                continue
            if any(classes.index.instance_attribute(base, name) is not False for base in bases):
                continue
            reported.add(name)
            owners = ", ".join(dict.fromkeys(base.name for base in bases))
            out.report(
                "vllm-self-attribute-missing",
                Place(module, read),
                f"{node.name}.{method.name} reads self.{name}, which neither the plugin's classes nor "
                f"{owners} define in {release.label}{release.elsewhere_on(bases, name)}: reading it raises "
                "AttributeError",
                f"read what {owners} has in this release instead (renamed?), or assign self.{name} yourself",
            )


def _sets_computed_attributes(classes: PluginClasses, node: ast.ClassDef) -> bool:
    """Whether a method of the class sets attributes by computed name; asked once per class and package, since
    every class of a lineage asks about its bases again, and only of classes whose module has such a node."""
    memo: dict[int, bool] | None = classes.__dict__.get("_sets_computed_attributes")
    if memo is None:
        quiet = {m.name for m in classes.package.parsed() if not _may_compute_attributes(m)}
        memo = {id(cls): False for module, cls in classes.classes.values() if module.name in quiet}
        classes.__dict__["_sets_computed_attributes"] = memo
    if id(node) not in memo:
        memo[id(node)] = any(
            isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and sets_computed_attributes(stmt)
            for stmt in node.body
        )
    return memo[id(node)]


def _may_compute_attributes(module: Module) -> bool:
    """Whether the module holds anything `sets_computed_attributes` looks for: a `setattr` whose name is not
    a constant, a `vars(...)` call, or `__dict__`."""
    for call in module.of_type(ast.Call):
        called = getattr(call.func, "id", None)
        if called == "vars" or (
            called == "setattr" and len(call.args) >= 2 and not isinstance(call.args[1], ast.Constant)
        ):
            return True
    return any(n.attr == "__dict__" for n in module.of_type(ast.Attribute))


def starts_after(call: ast.Call, node: ast.ClassDef) -> bool:
    """Whether `call` is `super()` or `super(Cls, self)` naming `node` itself: the lookup starts after the
    plugin's class, at the vLLM bases the check reads. `super(Base, self)` starts after Base instead, skipping
    it (`super(vllm_Fp8MoEMethod, self).__init__(...)` reaches Base's own bases)."""
    if not (isinstance(call.func, ast.Name) and call.func.id == "super"):
        return False
    return not call.args or (isinstance(call.args[0], ast.Name) and call.args[0].id == node.name)


def check_super_calls(
    classes: PluginClasses, out: Findings, module: Module, node: ast.ClassDef, bases: list[Symbol]
) -> None:
    """`super().name` where no vLLM base has `name` on the release, and `super().name(...)` whose arguments the
    base's `name` cannot take."""
    release = classes.release
    if not all(classes.index.mro(base)[1] for base in bases):
        return
    if any(b in classes for b in classes.bases(module, node)):
        return  # super() may land in the plugin's own class first
    if _first_base_outside(classes, module, node):
        return  # super() reaches a class outside vLLM first (torch's nn.Module): whether it passes the call on
        # to the vLLM base is that class's own affair
    if not any(node.lineno <= line <= (node.end_lineno or line) for line in _super_lines(module)):
        return  # no super() call within the class's lines
    for stmt in node.body:
        if not isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        inside = walk_nodes(stmt)
        for read in inside:
            if (
                isinstance(read, ast.Attribute)
                and isinstance(read.value, ast.Call)
                and starts_after(read.value, node)
                and not is_dunder(read.attr)
                and release.find(bases, read.attr)[0] is None
            ):
                out.report(
                    "vllm-super-missing",
                    Place.unguarded(module, read),
                    f"super().{read.attr} in {node.name}.{stmt.name}: no base of {node.name} has {read.attr} in "
                    f"{release.label}{release.elsewhere(f'{bases[0].qualname}.{read.attr}')}: the call raises "
                    "AttributeError",
                    "do on this release what the removed member did, or skip the call where it is missing",
                )
        for call in inside:
            if isinstance(call, ast.Call):
                _super_call_arguments(classes, out, module, node, stmt, call, bases)


# Libraries whose classes define no `__init__` of their own (`Generic`, `Protocol`, `ABC`): super() passes
# through them to the next base.
_PASS_THROUGH = frozenset({"abc", "typing", "typing_extensions", "builtins"})


def _first_base_outside(classes: PluginClasses, module: Module, node: ast.ClassDef) -> bool:
    """The class's first base, where `super()` looks first, is a class of another library (neither vLLM's nor
    the plugin's own, nor a typing or abc base that passes the call on): `class Model(nn.Module, VllmModel)`."""
    first = node.bases[0] if node.bases else None
    if isinstance(first, ast.Subscript):
        first = first.value
    name = qualified(first, classes.tables[module.name]) if isinstance(first, ast.Name | ast.Attribute) else None
    top = name.split(".")[0] if name else None
    return top is not None and top not in {"vllm", *_PASS_THROUGH} and top not in classes.package.project.packages


def _super_lines(module: Module) -> list[int]:
    """The lines of the module's `super(...)` calls: a class with none within its lines has nothing to check."""
    return module.memoised(
        "super-lines",
        lambda: [c.lineno for c in module.of_type(ast.Call) if isinstance(c.func, ast.Name) and c.func.id == "super"],
    )


def _super_call_arguments(
    classes: PluginClasses,
    out: Findings,
    module: Module,
    node: ast.ClassDef,
    method: FunctionNode,
    call: ast.Call,
    bases: list[Symbol],
) -> None:
    """`super().name(...)` whose arguments the vLLM base's `name` cannot take on this release: a TypeError
    each time the method runs (`super().__init__(num_blocks=...)` where the base takes `num_chunks`)."""
    if not (isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Call)):
        return
    if not starts_after(call.func.value, node):
        return
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return  # *args / **kwargs pass through whatever the caller gave
    owner, text = classes.release.find(bases, call.func.attr)
    if owner is None or text is None:
        return
    signature = Signature.parse(text)
    if signature.decorator == "s":
        return
    signature = signature.bound()
    problem = call_problem(signature, len(call.args), [k.arg for k in call.keywords if k.arg])
    if problem and other_branch_binds(module, call, signature):
        return  # `if x is not None: super().f(a, x=x)` / `else: super().f(a)`: one branch per release
    if problem:
        out.report(
            "vllm-super-call-signature",
            Place(module, call),
            f"super().{call.func.attr}(...) in {node.name}.{method.name} reaches "
            f"{owner.qualname}.{call.func.attr}{signature.text()} in {classes.release.label}: {problem}, so the "
            "call raises TypeError",
            "pass the arguments this release's base method takes",
        )
