"""Static checks on the package's source (AST only, never imported): where and how it registers with vLLM, and
the names it registers. Other subjects have modules of their own: `imports.py`, `logits.py`, `side_effects.py`."""

from __future__ import annotations

import ast
import re

from vllm_scaffold.doctor.checks.target import Target, check
from vllm_scaffold.doctor.reading import installed as vllm_facts
from vllm_scaffold.doctor.reading.context import Context
from vllm_scaffold.doctor.reading.guards import guards
from vllm_scaffold.doctor.reading.package import PluginPackage
from vllm_scaffold.doctor.reading.source import (
    Call,
    aliases,
    all_calls,
    calls,
    classes,
    qualified,
    reached_modules,
)
from vllm_scaffold.doctor.report.findings import Finding
from vllm_scaffold.vllm_facts import facts
from vllm_scaffold.vllm_facts.linear_kernels import kinds


@check("registration-outside-general-plugin")
def registration_timing(target: Target) -> list[Finding]:
    """register_* at import of a module no general plugin reaches only holds in the process that imported it.

    A platform plugin's modules count as reached too: vLLM imports the platform class (the path its detector
    returns) in every process, and the worker class the platform sets as `worker_cls` in every worker, so a
    registration those modules import holds where it is needed."""
    ctx = target.environment
    general = [ep.module for ep in ctx.package.entry_points_in(vllm_facts.GENERAL)]
    general += [ep.module for ep in ctx.package.entry_points_in(vllm_facts.PLATFORM)]
    reached = reached_modules(ctx.package, general)
    findings = []
    for module in ctx.package.parsed():
        if module.name in reached:
            continue
        for call in calls(module, at_import=True):
            findings.append(
                Finding(
                    "registration-outside-general-plugin",
                    call.where,
                    f"{call.api}() runs when {module.name} is imported, and no vllm.general_plugins entry point "
                    "imports it. " + facts.fact("registration-reaches-forked-processes").text(),
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


@check("attention-kv-cache-shape", "attention-lowercase-name", "attention-overrides-in-tree")
def attention(target: Target) -> list[Finding]:
    ctx = target.environment
    findings = []
    for call in all_calls(ctx.package, frozenset({"register_backend"})):
        name = call.constant(0, "backend")
        if name is not None and name != name.upper():
            findings.append(
                Finding(
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
                Finding(
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
                    Finding(
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


@check("attention-custom-twice")
def attention_custom_claims(target: Target) -> list[Finding]:
    """Two backends of one package on AttentionBackendEnum.CUSTOM: the later registration replaces the other."""
    ctx = target.environment
    claims = custom_backend_claims(ctx.package)
    distinct = list(dict.fromkeys(target for _call, target in claims))
    if len(distinct) < 2:
        return []
    first_call, first = claims[0]
    return [
        Finding(
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


@check("linear-kernel-bad-kind", every_release=True)
def linear_kernel_kinds(target: Target) -> list[Finding]:
    return bad_linear_kernel_kinds(target.package, target.version)


def bad_linear_kernel_kinds(package: PluginPackage, version: str | None) -> list[Finding]:
    """`register_linear_kernel` calls whose `kernel_type` vLLM `version` does not accept (None: the reference
    release); `doctor --vllm` runs it for each release named."""
    accepted = kinds(version)
    calls = all_calls(package, frozenset({"register_linear_kernel"}))
    unknown = [(call, kind) for call in calls if (kind := call.constant(2, "kernel_type")) not in (None, *accepted)]
    fix = f"use one of {', '.join(accepted)}"
    release = f"vLLM {version}" if version else "vLLM"
    what = f"is not one register_linear_kernel of {release} accepts: it raises ValueError in every process"
    code = "linear-kernel-bad-kind"
    return [Finding(code, call.where, f"kernel_type '{kind}' {what}", fix) for call, kind in unknown]


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


@check("custom-op-unknown-target", "custom-ops-registry-name")
def custom_ops(target: Target) -> list[Finding]:
    ctx = target.environment
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
                Finding(
                    "custom-op-unknown-target",
                    call.where,
                    f"register_oot keys the replacement by '{name}', which is no in-tree CustomOp/PluggableLayer "
                    "class name, so nothing vLLM builds is ever replaced. "
                    + facts.fact("custom-op-registered-as-class-name").text(),
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
                        Finding(
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
# that names the entry (or the first), vLLM's names, the doctor code, what happens, the fact saying how the
# registry takes a name again, and the fix.
_SHADOWING = (
    (
        "register_quantization_config",
        "quantization",
        vllm_facts.in_tree_quantization_methods,
        "quant-shadows-in-tree",
        "'{name}' is an in-tree quantization method, and the plugin's config takes every checkpoint tagged with it",
        "quant-name-twice-debug",
        "pick a new name; to claim checkpoints tagged with the in-tree name implement override_quantization_method",
    ),
    (
        "register_model",
        "model_arch",
        vllm_facts.in_tree_model_architectures,
        "model-shadows-in-tree",
        "architecture '{name}' is in-tree, and the plugin's class takes every checkpoint that names it",
        "cite-model-overwrite",
        "register a new architecture name and set it in the checkpoint's config.json (or --hf-overrides)",
    ),
)


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
# the fact saying the factory raises, and how to select the class without a name.
_TAKEN = (
    (
        "register_connector",
        vllm_facts.in_tree_kv_connectors,
        "kv-connector-name-taken",
        "connector",
        "kv-connector-duplicate-raises",
        "register under a new name, or select the class with kv_connector_module_path instead",
    ),
    (
        "register_spec",
        vllm_facts.in_tree_offloading_specs,
        "offloading-spec-name-taken",
        "offloading spec",
        "offloading-spec-duplicate-raises",
        "register under a new name, or select the class with spec_module_path in kv_connector_extra_config",
    ),
)


@check("model-shadows-in-tree", "quant-shadows-in-tree", "kv-connector-name-taken", "offloading-spec-name-taken")
def in_tree_names_registered(target: Target) -> list[Finding]:
    """A name vLLM registers itself, registered again: a model or quantization method silently replaced
    (`_SHADOWING`), a KV connector or offloading spec whose factory raises (`_TAKEN`)."""
    ctx = target.environment
    if not ctx.vllm.present:
        return []
    findings = [
        Finding(code, call.where, f"{what.format(name=name)}. {facts.fact(replaced).text()}", fix)
        for registering, argument, in_tree, code, what, replaced, fix in _SHADOWING
        for call, name in _registered_names_in(ctx, registering, argument, in_tree())
    ]
    popped = _popped_registry_names(ctx)
    for registering, in_tree, code, what, raises, fix in _TAKEN:
        for call, name in _registered_names_in(ctx, registering, "name", in_tree() - popped):
            caught = id(call.node) in guards(call.module, catching=_VALUE_ERRORS)
            outcome = (
                f"{registering} raises ValueError, which the plugin catches: vLLM's own {what} keeps the name "
                "and this one is never registered"
                if caught
                else f"{registering} raises ValueError in every process that runs this registration"
            )
            stated = f"'{name}' is already registered in-tree: {outcome}. {facts.fact(raises).text()}"
            findings.append(Finding(code, call.where, stated, fix))
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


@check("scheduler-missing-connector", "scheduler-not-async")
def schedulers(target: Target) -> list[Finding]:
    ctx = target.environment
    found = list(classes(ctx.package))
    # A class combined with AsyncScheduler elsewhere (class XAsync(X, AsyncScheduler)) has an async variant.
    with_async_variant = {b.split(".")[-1] for _m, _n, bases in found if ASYNC_SCHEDULER in bases for b in bases}
    findings = []
    async_off = _turns_async_scheduling_off(ctx)
    for module, node, bases in found:
        if "vllm.v1.core.sched.scheduler.Scheduler" in bases and node.name not in with_async_variant and not async_off:
            findings.append(
                Finding(
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
                    Finding(
                        "scheduler-missing-connector",
                        module.where(node),
                        f"{node.name} implements SchedulerInterface but never sets {' and '.join(missing)}: "
                        "EngineCore reads scheduler.connector and scheduler.ec_connector and fails with "
                        "AttributeError",
                        "set self.connector = None and self.ec_connector = None in __init__ (or real connectors)",
                    )
                )
    return findings


@check("io-processor-name-mismatch")
def io_processor_names(target: Target) -> list[Finding]:
    """--io-processor-plugin NAME must be the entry-point name; the manifest and code should say the same."""
    ctx = target.environment
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
    return Finding(
        "io-processor-name-mismatch",
        where,
        f"IO processor '{used}' is requested, but the package's vllm.io_processor_plugins entry point is named "
        f"{', '.join(sorted(names))}. " + facts.fact("io-processor-by-entry-point-name").text(),
        f"use the entry-point name ({', '.join(sorted(names))}), or rename the entry point",
    )
