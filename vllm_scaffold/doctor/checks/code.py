"""Static checks on the package's source (AST only, never imported): where and how it registers with vLLM."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from dataclasses import replace

from vllm_scaffold.doctor.reading import installed as vllm_facts
from vllm_scaffold.doctor.reading.context import Context
from vllm_scaffold.doctor.reading.guards import Guard, GuardKind, dead_fallbacks, guards
from vllm_scaffold.doctor.reading.package import DeclaredEntryPoint, Module, PluginPackage
from vllm_scaffold.doctor.reading.reach import FunctionNode, entry_point_reach, steps
from vllm_scaffold.doctor.reading.source import (
    Call,
    aliases,
    all_calls,
    calls,
    classes,
    function,
    qualified,
    reached_modules,
    resolve_relative,
)
from vllm_scaffold.doctor.report.findings import Finding, error, info, warning
from vllm_scaffold.vllm_facts import facts
from vllm_scaffold.vllm_facts.linear_kernels import kinds


def registration_timing(ctx: Context) -> list[Finding]:
    """register_* at import of a module no general plugin reaches only holds in the process that imported it.

    A platform plugin's modules count as reached too: vLLM imports the platform class (the path its detector
    returns) in every process, and the worker class the platform sets as `worker_cls` in every worker, so a
    registration those modules import holds where it is needed."""
    general = [ep.module for ep in ctx.package.entry_points_in(vllm_facts.GENERAL)]
    general += [ep.module for ep in ctx.package.entry_points_in(vllm_facts.PLATFORM)]
    reached = reached_modules(ctx.package, general)
    findings = []
    for module in ctx.package.parsed():
        if module.name in reached:
            continue
        for call in calls(module, at_import=True):
            findings.append(
                error(
                    "registration-outside-general-plugin",
                    call.where,
                    f"{call.api}() runs when {module.name} is imported, and no vllm.general_plugins entry point "
                    "imports it: the registration holds only in the process that imported it (the engine core "
                    "and workers never see it)",
                    "make the registration reachable from a function under [project.entry-points."
                    '"vllm.general_plugins"] (import the module there), which vLLM runs in every process',
                )
            )
    return findings


def _enum_member(expr: ast.expr | None, table: dict[str, str]) -> tuple[str, str] | None:
    if isinstance(expr, ast.Attribute):
        owner = qualified(expr.value, table)
        if owner and owner.split(".")[-1] in {"AttentionBackendEnum", "MambaAttentionBackendEnum"}:
            return owner.split(".")[-1], expr.attr
    return None


def attention(ctx: Context) -> list[Finding]:
    findings = []
    for call in all_calls(ctx.package, frozenset({"register_backend"})):
        name = call.constant(0, "backend")
        if name is not None and name != name.upper():
            findings.append(
                error(
                    "attention-lowercase-name",
                    call.where,
                    f"backend name '{name}' is not upper-case; vLLM upper-cases --attention-backend before the "
                    "lookup, so it can never be selected",
                    f"register it as '{name.upper()}'",
                )
            )
        member = _enum_member(call.argument(0, "backend"), aliases(call.module))
        if member and member[1] != "CUSTOM" and member[1] in vllm_facts.in_tree_attention_members():
            findings.append(
                warning(
                    "attention-overrides-in-tree",
                    call.where,
                    f"overrides the in-tree backend {member[0]}.{member[1]}: every model that selects "
                    f"{member[1]} (automatic selection included) gets this backend",
                    "register as CUSTOM (selected only by --attention-backend CUSTOM) unless replacing "
                    f"{member[1]} everywhere is the intent (on CPU it is the only way in)",
                )
            )
    # the plugin's own model runner may call it: then it is not dead code
    called = _calls_method(ctx, "get_kv_cache_shape")
    for module, node, _bases in classes(ctx.package):
        for stmt in node.body if not called else ():
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == "get_kv_cache_shape":
                findings.append(
                    warning(
                        "attention-kv-cache-shape",
                        module.where(stmt),
                        f"{node.name} defines get_kv_cache_shape. "
                        + facts.fact("attention-kv-cache-shape-unused").text(),
                        "delete it; declare supported_kv_cache_layouts() and get_supported_kernel_block_sizes()",
                    )
                )
    return findings


def custom_backend_claims(package: PluginPackage) -> list[tuple[Call, str]]:
    """Each `register_backend(AttentionBackendEnum.CUSTOM, class_path)` in the package, with its class path
    as written: the calls that take vLLM's single CUSTOM attention slot."""
    claims: list[tuple[Call, str]] = []
    for call in all_calls(package, frozenset({"register_backend"})):
        member = _enum_member(call.argument(0, "backend"), aliases(call.module))
        if member == ("AttentionBackendEnum", "CUSTOM"):
            target = call.argument(1, "class_path")
            claims.append((call, ast.unparse(target) if target is not None else call.where))
    return claims


# The calls that fill a single vLLM slot, by (seam, slot) as the catalog's `single_slot` names them: `add`
# reads them to refuse a second component on a slot that hand-written code already fills.
SLOT_CLAIMS = {("attention-backend", "CUSTOM"): custom_backend_claims}


def attention_custom_claims(ctx: Context) -> list[Finding]:
    """Two backends of one package on AttentionBackendEnum.CUSTOM: the later registration replaces the other."""
    claims = custom_backend_claims(ctx.package)
    distinct = list(dict.fromkeys(target for _call, target in claims))
    if len(distinct) < 2:
        return []
    first_call, first = claims[0]
    return [
        error(
            "attention-custom-twice",
            call.where,
            f"{target} and {first} (at {first_call.where}) both register as AttentionBackendEnum.CUSTOM; there is "
            "one CUSTOM slot, so whichever registers last replaces the other in every process",
            'register one backend as CUSTOM and the other under a dynamic upper-case name (register_backend("FX_'
            'OTHER", class_path=...)), selected with --attention-backend FX_OTHER',
        )
        for call, target in claims
        if target != first
    ]


_MAX_READERS = {"max", "amax", "argmax", "topk", "sort", "argsort", "max_"}


def logits_argmax_masks(ctx: Context) -> list[Finding]:
    """`is_argmax_invariant()` returning True tells vLLM to skip the processor for greedy requests; an apply()
    that writes into the logits without keeping the top one (as min-p does) is then silently ignored for them."""
    findings = []
    for module, node, _bases in classes(ctx.package):
        methods = {s.name: s for s in node.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
        claim, apply = methods.get("is_argmax_invariant"), methods.get("apply")
        if claim is None or apply is None or not _always_returns_true(claim):
            continue
        change = _writes_logits(ctx.package, module, apply, node)
        if change is None or _reads_maximum(apply):
            continue
        findings.append(
            warning(
                "logits-argmax-masks",
                module.where(claim),
                f"{node.name}.is_argmax_invariant() returns True, but apply() changes the logits "
                f"({module.where(change)}: {ast.unparse(change).splitlines()[0][:60]}) without keeping the highest "
                "one. " + facts.fact("argmax-invariant-skipped-greedy").text(),
                "return False from is_argmax_invariant() (or keep the top logit, as min-p does)",
            )
        )
    return findings


def _always_returns_true(method: ast.AST) -> bool:
    returns = [n for n in ast.walk(method) if isinstance(n, ast.Return)]
    return bool(returns) and all(isinstance(r.value, ast.Constant) and r.value.value is True for r in returns)


Function = ast.FunctionDef | ast.AsyncFunctionDef
# How deep _writes_logits follows the logits into the package's helpers (apply -> dispatch -> kernel launch).
_HELPER_DEPTH = 4


def _writes_logits(package: PluginPackage, module: Module, apply: Function, cls: ast.ClassDef) -> ast.AST | None:
    """The first statement or call of apply() that changes its logits argument, if any: directly, or in a
    function or method of the package it passes them to, or in a Triton kernel that stores through them."""
    params = [a.arg for a in apply.args.args]
    logits = params[1] if len(params) > 1 and params[0] == "self" else (params[0] if params else None)
    if logits is None:
        return None
    return _writes_parameter(package, module, apply, logits, cls, set(), _HELPER_DEPTH)


def _writes_parameter(
    package: PluginPackage, module: Module, func: Function, name: str, cls: ast.ClassDef | None,
    seen: set[tuple[str, str]], depth: int,
) -> ast.AST | None:  # fmt: skip
    """The node of `func` that changes the tensor its parameter `name` holds (a call passing it on, for a
    change made further in)."""

    def on_tensor(expr: ast.expr) -> bool:
        while isinstance(expr, (ast.Subscript, ast.Attribute)):
            expr = expr.value
        return isinstance(expr, ast.Name) and expr.id == name

    for node in ast.walk(func):
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Subscript) and on_tensor(t) for t in targets):
                return node
        elif isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute) and on_tensor(node.func.value):
                method = node.func.attr
                if method.endswith("_") and not method.startswith("_") or method in {"masked_fill", "index_fill"}:
                    return node
            if _is_store_through(node, name):
                return node
            if depth and _passes_on(package, module, node, name, cls, seen, depth):
                return node
    return None


def _is_store_through(call: ast.Call, pointer: str) -> bool:
    """`tl.store(pointer + offsets, ...)` (or an atomic): a Triton kernel writing through its `pointer`."""
    func = call.func
    api = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if api != "store" and not api.startswith("atomic_") or not call.args:
        return False
    return any(isinstance(n, ast.Name) and n.id == pointer for n in ast.walk(call.args[0]))


def _passes_on(
    package: PluginPackage, module: Module, call: ast.Call, name: str, cls: ast.ClassDef | None,
    seen: set[tuple[str, str]], depth: int,
) -> bool:  # fmt: skip
    """Whether `call` hands the tensor `name` to a function of the package (a Triton launch `kernel[grid](...)`
    included) that changes it."""
    launched = call.func.value if isinstance(call.func, ast.Subscript) else call.func
    found = _package_function(package, module, launched, cls)
    if found is None:
        return False
    target_module, target, target_cls = found
    key = (target_module.name, f"{target.name}:{name}")
    if key in seen:
        return False
    seen.add(key)
    params = [a.arg for a in (*target.args.posonlyargs, *target.args.args)]
    if isinstance(launched, ast.Attribute) and params and params[0] in ("self", "cls"):
        params = params[1:]
    received = [params[i] for i, arg in enumerate(call.args) if i < len(params) and _is_name(arg, name)]
    received += [kw.arg for kw in call.keywords if kw.arg and _is_name(kw.value, name)]
    return any(
        _writes_parameter(package, target_module, target, param, target_cls, seen, depth - 1) is not None
        for param in received
    )


def _is_name(expr: ast.expr, name: str) -> bool:
    return isinstance(expr, ast.Name) and expr.id == name


def _package_function(
    package: PluginPackage, module: Module, callee: ast.expr, cls: ast.ClassDef | None
) -> tuple[Module, Function, ast.ClassDef | None] | None:
    """The package's function that `callee` names: `self.method` of `cls`, a function of `module`, or one
    it imports from another module of the package."""
    if isinstance(callee, ast.Attribute) and isinstance(callee.value, ast.Name) and callee.value.id == "self":
        methods = [s for s in (cls.body if cls else []) if isinstance(s, Function) and s.name == callee.attr]
        return (module, methods[0], cls) if methods else None
    if not isinstance(callee, ast.Name):
        return None
    local = _module_function(module, callee.id)
    if local is not None:
        return module, local, None
    imported = aliases(module).get(callee.id)
    if imported is None or not package.owns(imported):
        return None
    source, _, attr = imported.rpartition(".")
    other = package.modules.get(source)
    found = _module_function(other, attr) if other is not None else None
    return (other, found, None) if other is not None and found is not None else None


def _module_function(module: Module, name: str) -> Function | None:
    """A function the module defines at its top level, also inside an `if` or `try` there (`if triton:`)."""
    pending = list(module.tree.body if module.tree else ())
    while pending:
        stmt = pending.pop(0)
        if isinstance(stmt, Function) and stmt.name == name:
            return stmt
        if isinstance(stmt, (ast.If, ast.Try)):
            pending += [*stmt.body, *stmt.orelse, *getattr(stmt, "finalbody", [])]
    return None


def _reads_maximum(apply: ast.AST) -> bool:
    return any(
        isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Attribute) and node.func.attr in _MAX_READERS)
            or (isinstance(node.func, ast.Name) and node.func.id in _MAX_READERS)
        )
        for node in ast.walk(apply)
    )


def _calls_method(ctx: Context, name: str) -> bool:
    """Whether the package itself calls a method or function called `name` anywhere."""
    return any(
        isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Attribute) and node.func.attr == name)
            or (isinstance(node.func, ast.Name) and node.func.id == name)
        )
        for module in ctx.package.parsed()
        for node in module.of_type(ast.Call)
    )


def linear_kernel_kinds(ctx: Context) -> list[Finding]:
    return bad_linear_kernel_kinds(ctx.package, ctx.vllm.version)


def bad_linear_kernel_kinds(package: PluginPackage, version: str | None) -> list[Finding]:
    """`register_linear_kernel` calls whose `kernel_type` vLLM `version` does not accept (None: the reference
    release); `doctor --vllm` runs it for each release named."""
    accepted = kinds(version)
    calls = all_calls(package, frozenset({"register_linear_kernel"}))
    unknown = [(call, kind) for call in calls if (kind := call.constant(2, "kernel_type")) not in (None, *accepted)]
    fix = f"use one of {', '.join(accepted)}"
    release = f"vLLM {version}" if version else "vLLM"
    what = f"is not one register_linear_kernel of {release} accepts: it raises ValueError in every process"
    return [error("linear-kernel-bad-kind", call.where, f"kernel_type '{kind}' {what}", fix) for call, kind in unknown]


def _oot_targets(ctx: Context) -> list[tuple[Call, str | None]]:
    """(call, the in-tree class name the replacement is keyed by, None when it cannot be told statically)."""
    targets = []
    for call in all_calls(ctx.package, frozenset({"register_oot"})):
        if "name" in call.keywords:
            name = call.constant(None, "name")
        else:
            name = call.receiver.split(".")[-1] if call.receiver else None
            if name is not None and not name[:1].isupper():
                name = None  # `base_cls.register_oot(...)`: a variable holding some class, not a class name
        targets.append((call, name))
    return targets


def custom_ops(ctx: Context) -> list[Finding]:
    targets = _oot_targets(ctx)
    if not targets or not ctx.vllm.present:
        return []
    in_tree = vllm_facts.in_tree_custom_ops()
    findings = []
    replaced: dict[str, str] = {}
    for call, name in targets:
        if name is None:
            continue
        if name in {"CustomOp", "PluggableLayer"} or name not in in_tree:
            findings.append(
                error(
                    "custom-op-unknown-target",
                    call.where,
                    f"register_oot keys the replacement by '{name}', which is no in-tree CustomOp/PluggableLayer "
                    "class name: nothing vLLM builds is ever replaced",
                    "decorate with @InTreeClass.register_oot (e.g. @RMSNorm.register_oot) or pass name= the "
                    "in-tree class name",
                )
            )
        elif in_tree[name]:
            replaced[in_tree[name]] = name
    for module in ctx.package.parsed():
        for node in module.of_type(ast.Constant):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                match = re.fullmatch(r"([+-])(\w+)", node.value)
                if match and match[2] in replaced:
                    findings.append(
                        warning(
                            "custom-ops-registry-name",
                            module.where(node),
                            f"custom_ops entry '{node.value}' uses the registry name; the replacement registered "
                            f"with register_oot is enabled by its class name, so this entry has no effect on it",
                            f"write '{match[1]}{replaced[match[2]]}'",
                        )
                    )
    return findings


def _registered_names_in(ctx: Context, function: str, argument: str, in_tree: frozenset[str]) -> list[tuple[Call, str]]:
    """(call, name) for each `function(...)` call whose first (or `argument`) constant names an in-tree entry."""
    return [
        (call, name)
        for call in all_calls(ctx.package, frozenset({function}))
        if (name := call.constant(0, argument)) is not None and name in in_tree
    ]


# Registrations that silently replace one of vLLM's own entries: the registering function, the argument
# that names the entry (or the first), vLLM's names, the doctor code, what happens, and the fix.
_SHADOWING = (
    (
        "register_quantization_config",
        "quantization",
        vllm_facts.in_tree_quantization_methods,
        "quant-shadows-in-tree",
        "'{name}' is an in-tree quantization method: the plugin's config silently replaces vLLM's for every "
        "checkpoint tagged with it",
        "pick a new name; to claim checkpoints tagged with the in-tree name implement override_quantization_method",
    ),
    (
        "register_model",
        "model_arch",
        vllm_facts.in_tree_model_architectures,
        "model-shadows-in-tree",
        "architecture '{name}' is in-tree: the plugin silently replaces vLLM's implementation for every "
        "checkpoint that names it",
        "register a new architecture name and set it in the checkpoint's config.json (or --hf-overrides)",
    ),
)


def in_tree_names_shadowed(ctx: Context) -> list[Finding]:
    if not ctx.vllm.present:
        return []
    return [
        warning(code, call.where, what.format(name=name), fix)
        for registering, argument, in_tree, code, what, fix in _SHADOWING
        for call, name in _registered_names_in(ctx, registering, argument, in_tree())
    ]


def _popped_registry_names(ctx: Context) -> set[str]:
    """Names the package removes from a registry (`X._registry.pop("Name")`, `del X._registry["Name"]`), which
    makes registering the same name again legitimate."""
    names: set[str] = set()
    for module in ctx.package.parsed():
        for node in module.of_type(ast.Call, ast.Delete):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "pop"
                and isinstance(node.func.value, ast.Attribute)
                and node.func.value.attr.endswith("registry")
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                names.add(str(node.args[0].value))
            elif isinstance(node, ast.Delete):
                names.update(
                    str(t.slice.value)
                    for t in node.targets
                    if isinstance(t, ast.Subscript)
                    and isinstance(t.slice, ast.Constant)
                    and isinstance(t.value, ast.Attribute)
                    and t.value.attr.endswith("registry")
                )
    return names


# Factories whose `register_*` raises ValueError for a name already registered, and which register vLLM's own
# names when their module is imported: the registering function, vLLM's names, the code, what the entry is,
# and how to select the class without a name.
_TAKEN = (
    (
        "register_connector",
        vllm_facts.in_tree_kv_connectors,
        "kv-connector-name-taken",
        "connector",
        "register under a new name, or select the class with kv_connector_module_path instead",
    ),
    (
        "register_spec",
        vllm_facts.in_tree_offloading_specs,
        "offloading-spec-name-taken",
        "offloading spec",
        "register under a new name, or select the class with spec_module_path in kv_connector_extra_config",
    ),
)


def registered_names_taken(ctx: Context) -> list[Finding]:
    """A KV connector or offloading spec registered under a name vLLM registers itself: the factory raises."""
    if not ctx.vllm.present:
        return []
    popped = _popped_registry_names(ctx)
    findings = []
    for registering, in_tree, code, what, fix in _TAKEN:
        for call, name in _registered_names_in(ctx, registering, "name", in_tree() - popped):
            caught = id(call.node) in guards(call.module, catching=_VALUE_ERRORS)
            outcome = (
                f"{registering} raises ValueError, which the plugin catches: vLLM's own {what} keeps the name "
                "and this one is never registered"
                if caught
                else f"{registering} raises ValueError in every process that runs this registration"
            )
            findings.append(error(code, call.where, f"'{name}' is already registered in-tree: {outcome}", fix))
    return findings


_VALUE_ERRORS = frozenset({"ValueError", "Exception", "BaseException"})


def _assigns_attribute(node: ast.ClassDef, attribute: str) -> bool:
    for child in ast.walk(node):
        targets = child.targets if isinstance(child, ast.Assign) else [getattr(child, "target", None)]
        for target in targets:
            if isinstance(target, ast.Attribute) and target.attr == attribute:
                return True
            if isinstance(target, ast.Name) and target.id == attribute and child in node.body:
                return True
    return False


def _turns_async_scheduling_off(ctx: Context) -> bool:
    """Whether the package sets `...async_scheduling = False` (a platform's check_and_update_config does)."""
    for module in ctx.package.parsed():
        for node in module.of_type(ast.Assign):
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Constant)
                and node.value.value is False
                and any(isinstance(t, ast.Attribute) and t.attr == "async_scheduling" for t in node.targets)
            ):
                return True
    return False


ASYNC_SCHEDULER = "vllm.v1.core.sched.async_scheduler.AsyncScheduler"


def schedulers(ctx: Context) -> list[Finding]:
    found = list(classes(ctx.package))
    # A class combined with AsyncScheduler elsewhere (class XAsync(X, AsyncScheduler)) has an async variant.
    with_async_variant = {b.split(".")[-1] for _m, _n, bases in found if ASYNC_SCHEDULER in bases for b in bases}
    findings = []
    async_off = _turns_async_scheduling_off(ctx)
    for module, node, bases in found:
        if "vllm.v1.core.sched.scheduler.Scheduler" in bases and node.name not in with_async_variant and not async_off:
            findings.append(
                warning(
                    "scheduler-not-async",
                    module.where(node),
                    f"{node.name} subclasses Scheduler and has no AsyncScheduler variant. "
                    + facts.fact("async-scheduling-default").text(),
                    f"subclass {ASYNC_SCHEDULER} (or add class {node.name}Async({node.name}, AsyncScheduler) and "
                    "pick it when scheduler_config.async_scheduling is on), or run with --no-async-scheduling",
                )
            )
        if "vllm.v1.core.sched.interface.SchedulerInterface" in bases:
            missing = [a for a in ("connector", "ec_connector") if not _assigns_attribute(node, a)]
            if missing:
                findings.append(
                    error(
                        "scheduler-missing-connector",
                        module.where(node),
                        f"{node.name} implements SchedulerInterface but never sets {' and '.join(missing)}: "
                        "EngineCore reads scheduler.connector and scheduler.ec_connector and fails with "
                        "AttributeError",
                        "set self.connector = None and self.ec_connector = None in __init__ (or real connectors)",
                    )
                )
    return findings


_SIDE_EFFECT_CALLS = {
    "os.putenv",
    "os.environ.update",
    "os.environ.setdefault",
    "os.environ.pop",
    "os.environ.clear",
    "torch.cuda.init",
    "torch.cuda.set_device",
    "logging.basicConfig",
    "print",
    "subprocess.run",
    "subprocess.check_call",
    "subprocess.check_output",
    "subprocess.Popen",
    "os.system",
}
_ENVIRON_CALLS = {name for name in _SIDE_EFFECT_CALLS if name.startswith(("os.environ", "os.putenv"))}


def _patched(name: str | None) -> bool:
    return bool(name) and name.split(".")[0] in {"torch", "vllm"} and "." in name  # type: ignore[union-attr]


def _side_effects(module: Module, nodes: Iterable[ast.AST], *, all_kinds: bool) -> list[tuple[str, ast.AST]]:
    """What running `nodes` changes outside itself, each with the node that does it: os.environ writes and
    torch/vLLM attributes replaced (monkeypatching); with `all_kinds` also global rebinding, printing,
    processes, files written, CUDA."""
    table = aliases(module)
    effects: list[tuple[str, ast.AST]] = []
    for child in nodes:
        if isinstance(child, ast.Global) and all_kinds:
            effects.append((f"rebinds global {', '.join(child.names)}", child))
        elif isinstance(child, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            for target in child.targets if isinstance(child, ast.Assign) else [child.target]:
                if isinstance(target, ast.Subscript) and qualified(target.value, table) == "os.environ":
                    effects.append(("writes os.environ", child))
                elif isinstance(target, ast.Attribute) and _patched(name := qualified(target, table)):
                    effects.append((f"replaces {name}", child))
        elif isinstance(child, ast.Call):
            name = qualified(child.func, table)
            if name in (_SIDE_EFFECT_CALLS if all_kinds else _ENVIRON_CALLS):
                effects.append((f"calls {name}()", child))
            elif name == "setattr" and len(child.args) >= 2 and _patched(owner := qualified(child.args[0], table)):
                if isinstance(child.args[1], ast.Constant):
                    effects.append((f"replaces {owner}.{child.args[1].value}", child))
                else:
                    effects.append((f"replaces attributes of {owner} named at run time (setattr)", child))
            elif (
                all_kinds
                and name == "open"
                and any(
                    isinstance(a, ast.Constant) and isinstance(a.value, str) and set(a.value) & set("wax+")
                    for a in [*child.args[1:2], *(k.value for k in child.keywords if k.arg == "mode")]
                )
            ):
                effects.append(("opens a file for writing", child))
    return effects


def _effects_through_calls(
    ctx: Context, module: Module, start: FunctionNode, *, all_kinds: bool
) -> tuple[list[str], list[str], list[str]]:
    """The side effects of loading and calling the entry point `start`, each saying through which step: those
    of the call (its own and those of every package function it reaches), those of what vLLM's import of its
    module runs (the package modules imported, their import-time code and the functions it calls), and where
    each of the latter is."""
    called: list[str] = []
    imported: list[str] = []
    places: list[str] = []
    at_load, at_call = entry_point_reach(ctx.package, module, start)
    for reached in at_load:
        for effect, node in _side_effects(reached.module, reached.running(), all_kinds=all_kinds):
            imported.append(f"{effect} (through {steps(reached.via)} at {reached.module.where(node)})")
            places.append(reached.module.where(node))
    for reached in at_call:
        for effect, node in _side_effects(reached.module, reached.running(), all_kinds=all_kinds):
            if len(reached.via) == 1:
                called.append(effect)
            else:
                at = reached.module.where(node) if reached.at_import else reached.where
                called.append(f"{effect} (through {steps(reached.via)} at {at})")
    return list(dict.fromkeys(called)), list(dict.fromkeys(imported)), list(dict.fromkeys(places))


def _entry_point_functions(ctx: Context, group: str) -> Iterator[tuple[DeclaredEntryPoint, Module, FunctionNode]]:
    for ep in ctx.package.entry_points_in(group):
        module = ctx.package.modules.get(ep.module)
        node = function(module, ep.attr or "") if module else None
        if module is not None and node is not None:
            yield ep, module, node


def _side_effect_warnings(
    ctx: Context, group: str, code: str, *, all_kinds: bool, consequence: str, fix: str
) -> Iterator[tuple[DeclaredEntryPoint, Module, ast.AST, Finding | None]]:
    """Each function an entry point of `group` names, with a `code` warning when it has side effects:
    "<what> <attr>() <effects>: <consequence>"."""
    what = "platform detector" if group == vllm_facts.PLATFORM else "general plugin"
    for ep, module, node in _entry_point_functions(ctx, group):
        called, imported, places = _effects_through_calls(ctx, module, node, all_kinds=all_kinds)
        effects = called + imported
        if not effects:
            yield ep, module, node, None
            continue
        where, subject = module.where(node), f"{what} {ep.attr}()"
        if not called:  # only the import does it: the finding points at the first line that does
            where, subject = places[0], f"importing the {what} {ep.module}:{ep.attr}"
        elif imported:
            subject += ", with the package modules vLLM imports to load it,"
        message = f"{subject} {summarise_effects(effects)}: {consequence}"
        yield ep, module, node, replace(warning(code, where, message, fix), details=tuple(effects))


# A side-effects message names at most this many attributes of one owner and this many kinds of change.
NAMES_SHOWN = 4
KINDS_SHOWN = 3


def summarise_effects(effects: list[str]) -> str:
    """The effects in a few words: attributes replaced on one owner grouped ("replaces 14 attributes of
    vllm...Scheduler: schedule, ... (+10 more)"), repeats and the calls they are reached through left to the
    finding's details."""
    groups: dict[str, list[str]] = {}
    through = False
    for effect in effects:
        base, separator, _ = effect.partition(" (through ")
        through |= bool(separator)
        if base.startswith("replaces ") and " " not in base[len("replaces ") :]:
            owner, _, attribute = base[len("replaces ") :].rpartition(".")
            groups.setdefault(f"replaces:{owner}", [])
            if attribute not in groups[f"replaces:{owner}"]:
                groups[f"replaces:{owner}"].append(attribute)
        else:
            groups.setdefault(base, [])
    parts = []
    for key, attributes in groups.items():
        if not key.startswith("replaces:"):
            parts.append(key)
            continue
        owner = key.partition(":")[2]
        if len(attributes) == 1:
            parts.append(f"replaces {owner}.{attributes[0]}")
            continue
        shown = ", ".join(attributes[:NAMES_SHOWN])
        more = f" (+{len(attributes) - NAMES_SHOWN} more)" if len(attributes) > NAMES_SHOWN else ""
        parts.append(f"replaces {len(attributes)} attributes of {owner}: {shown}{more}")
    text = "; ".join(parts[:KINDS_SHOWN])
    if len(parts) > KINDS_SHOWN:
        text += f"; and {len(parts) - KINDS_SHOWN} more"
    if through or len(parts) > KINDS_SHOWN or any(len(a) > NAMES_SHOWN for a in groups.values()):
        text += " (each one, with the calls that reach it, in --json)"
    return text


def platform_detectors(ctx: Context) -> list[Finding]:
    """vLLM calls every detector once in every process, and the winning one again (facts.toml)."""
    findings = []
    for ep, module, detector, side_effects in _side_effect_warnings(
        ctx,
        vllm_facts.PLATFORM,
        "platform-detector-side-effects",
        all_kinds=True,
        consequence=facts.fact("platform-detector-calls").text(),
        fix="only probe and return the Platform's dotted path or None; move setup into the Platform class "
        "(check_and_update_config, pre_register_and_update)",
    ):
        findings += [side_effects] if side_effects else []
        if not _can_return_none(detector):
            findings.append(
                warning(
                    "platform-detector-always-claims",
                    module.where(detector),
                    f"platform detector {ep.attr}() never returns None, so it claims the platform on every "
                    "machine: on a GPU host it replaces CUDA, and next to another out-of-tree platform vLLM "
                    "raises because two platforms are active",
                    "return the Platform's dotted path only when the device is present (a device file, a driver "
                    "library, an environment variable), and None otherwise",
                )
            )
    return findings


def _can_return_none(node: ast.AST) -> bool:
    """Whether the function can return None: `return`, `return None`, a value that may be None, or falling off
    its end. Only a function whose every exit returns a non-None literal or name-free expression claims always."""
    returns = [n for n in ast.walk(node) if isinstance(n, ast.Return)]
    for ret in returns:
        value = ret.value
        if value is None or not isinstance(value, (ast.Constant, ast.JoinedStr, ast.BinOp)):
            return True  # a bare return, a variable, a call or a conditional may be None
        if isinstance(value, ast.Constant) and value.value is None:
            return True
    return _falls_through(node.body)  # type: ignore[attr-defined]


def _falls_through(body: list[ast.stmt]) -> bool:
    if not body:
        return True
    last = body[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return False
    if isinstance(last, ast.If):
        return _falls_through(last.body) or _falls_through(last.orelse)
    if isinstance(last, (ast.Try, ast.TryStar)):
        return _falls_through(last.body + last.orelse) or any(_falls_through(h.body) for h in last.handlers)
    if isinstance(last, (ast.With, ast.AsyncWith)):
        return _falls_through(last.body)
    return True


def general_plugin_side_effects(ctx: Context) -> list[Finding]:
    """register() runs in every vLLM process: environment writes and monkeypatches there apply everywhere."""
    found = _side_effect_warnings(
        ctx,
        vllm_facts.GENERAL,
        "general-plugin-side-effects",
        all_kinds=False,
        consequence=facts.fact("general-plugins-every-process").text()
        + " The change applies there to every model, and a patched vLLM or torch attribute breaks silently when "
        "that attribute is renamed",
        fix="use vLLM's registration APIs; set environment in the launcher or the Platform class; if the patch "
        "is intended, mark it with # doctor: ignore[general-plugin-side-effects]",
    )
    return [finding for *_, finding in found if finding is not None]


def io_processor_names(ctx: Context) -> list[Finding]:
    """--io-processor-plugin NAME must be the entry-point name; the manifest and code should say the same."""
    names = {ep.name for ep in ctx.package.entry_points_in(vllm_facts.IO_PROCESSOR)}
    if not names:
        return []
    findings = []
    pattern = re.compile(r"(?:--io-processor-plugin[ =]|io_processor_plugin\s*=\s*)['\"]?([\w.-]+)")
    for component in ctx.package.manifest.get("components", []):
        for line in component.get("enable", []) if isinstance(component, dict) else []:
            for used in pattern.findall(str(line)):
                if used not in names:
                    findings.append(_io_mismatch("pyproject.toml [tool.vllm-scaffold] enable", used, names))
    for module in ctx.package.parsed():
        for node in module.of_type(ast.keyword):
            if isinstance(node, ast.keyword) and node.arg == "io_processor_plugin":
                if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                    if node.value.value not in names:
                        findings.append(_io_mismatch(module.where(node.value), node.value.value, names))
    return findings


def _io_mismatch(where: str, used: str, names: set[str]) -> Finding:
    return error(
        "io-processor-name-mismatch",
        where,
        f"IO processor '{used}' is requested, but the package's vllm.io_processor_plugins entry point is named "
        f"{', '.join(sorted(names))}: vLLM looks the name up among entry-point names and raises ValueError",
        f"use the entry-point name ({', '.join(sorted(names))}), or rename the entry point",
    )


def vllm_imports(ctx: Context) -> list[Finding]:
    """Every vllm.* import must exist in the installed vLLM: the first thing that breaks on an upgrade.

    Imports under `if TYPE_CHECKING:` never run; a guarded one (try/except ImportError, a version condition) is
    planned for, so it is reported as what silently switches off on this vLLM."""
    if not ctx.vllm.present:
        return []
    findings = []
    for module in ctx.package.parsed():
        dead: set[int] | None = None
        missing_at: dict[int, list[str]] = {}  # import node -> the names of it this vLLM lacks
        guarded: list[tuple[ast.AST, list[str], Guard]] = []
        for node in module.of_type(ast.Import, ast.ImportFrom):
            targets = _import_targets(module, node)
            if targets is None:
                continue
            absent_names = [m for source, name in targets if (m := _missing_vllm_name(source, name)) is not None]
            if absent_names:
                if dead is None:
                    dead = dead_fallbacks(module, lambda source, name: _missing_vllm_name(source, name) is None)
                if id(node) in dead:
                    continue  # the fallback of a try block whose own imports exist here: it never runs
            guard = guards(module).get(id(node)) if absent_names else None
            if guard is not None and guard.kind is GuardKind.TYPE_CHECKING:
                continue
            if not absent_names:
                continue
            if guard is None:
                missing_at[id(node)] = absent_names
            else:
                guarded.append((node, absent_names, guard))
        fallbacks = _failing_fallbacks(module, missing_at)
        for node, absent_names, guard in guarded:
            if id(guard.node) in fallbacks:
                continue  # its except branch fails too: the fallback's error says so, not an info saying it is fine
            for missing in absent_names:
                findings.append(
                    info(
                        "vllm-import-guarded",
                        module.where(node),
                        f"{missing} does not exist in the installed vLLM {ctx.vllm.version}; the import is guarded "
                        f"({guard.kind}), so on this vLLM {guard.consequence(module)}",
                        "nothing to do if that is intended here; otherwise import it from where this vLLM defines it",
                    )
                )
        tried = {id(fallback): attempt for attempt, fallback in fallbacks.values()}
        for node in module.of_type(ast.Import, ast.ImportFrom):
            for missing in missing_at.get(id(node), []):
                absent = f"{missing} does not exist in the installed vLLM {ctx.vllm.version}"
                if id(node) in tried:
                    absent += (
                        f"; it is the fallback of the import at {module.where(tried[id(node)])}, which this vLLM "
                        "lacks too, so the ImportError is raised from the except branch"
                    )
                findings.append(
                    error(
                        "vllm-import-missing",
                        module.where(node),
                        absent,
                        "import it from where this vLLM defines it (search site-packages/vllm), or guard the "
                        "import for the versions that have it",
                    )
                )
    return findings


def _failing_fallbacks(module: Module, missing_at: dict[int, list[str]]) -> dict[int, tuple[ast.AST, ast.AST]]:
    """try statements whose except branch makes an unguarded import this vLLM lacks: id(try) -> (the first
    import of its body, the failing import of the handler)."""
    found: dict[int, tuple[ast.AST, ast.AST]] = {}
    for node in module.of_type(ast.Try):
        if not isinstance(node, ast.Try):
            continue
        attempt = next((s for s in node.body if isinstance(s, (ast.Import, ast.ImportFrom))), None)
        failing = next(
            (
                s
                for h in node.handlers
                for s in h.body
                if isinstance(s, (ast.Import, ast.ImportFrom)) and id(s) in missing_at
            ),
            None,
        )
        if attempt is not None and failing is not None:
            found[id(node)] = (attempt, failing)
    return found


def fails_to_import(module: Module) -> bool:
    """Whether the module stops at one of its own top-level statements on the installed vLLM: an unguarded
    `import`/`from ... import` at module level of a vllm name this release lacks. Nothing after it runs, so no
    registration the module makes happens on this release; the import itself is what vllm-import-missing
    reports."""
    if "fails_to_import" not in module.memo:
        module.memo["fails_to_import"] = module.tree is not None and any(
            _missing_vllm_name(source, name) is not None
            for node in module.tree.body
            if isinstance(node, (ast.Import, ast.ImportFrom))
            for source, name in _import_targets(module, node) or []
        )
    return bool(module.memo["fails_to_import"])


def _import_targets(module: Module, node: ast.AST) -> list[tuple[str, str | None]] | None:
    """(module, name) pairs an import statement asks for (name None for `import x`); None for a relative
    import, which never names vllm."""
    if isinstance(node, ast.Import):
        return [(alias.name, None) for alias in node.names]
    if isinstance(node, ast.ImportFrom) and not node.level:
        return [(resolve_relative(module, node), alias.name) for alias in node.names]
    return None


def _missing_vllm_name(source: str, name: str | None) -> str | None:
    """What of `from source import name` (or `import source`) the installed vLLM lacks, or None."""
    if not (source == "vllm" or source.startswith("vllm.")):
        return None
    if not vllm_facts.vllm_module_exists(source):
        return f"module {source}"
    if name is None or name == "*" or vllm_facts.vllm_module_exists(f"{source}.{name}"):
        return None
    known = vllm_facts.vllm_module_names(source)
    return None if known is None or name in known else f"{source}.{name}"
