"""Static checks on the package's source (AST only, never imported): where and how it registers with vLLM."""

from __future__ import annotations

import ast
import re

from vllm_scaffold.doctor import installed as vllm_facts
from vllm_scaffold.doctor.context import Context
from vllm_scaffold.doctor.findings import Finding, error, warning
from vllm_scaffold.doctor.source import (
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

LINEAR_KERNEL_KINDS = ("mp", "int8", "fp8", "mxfp8", "nvfp4", "mxfp4", "mxfp6")


def registration_timing(ctx: Context) -> list[Finding]:
    """register_* at import of a module no general plugin reaches only holds in the process that imported it."""
    general = [ep.module for ep in ctx.package.entry_points_in(vllm_facts.GENERAL)]
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
    for module, node, _bases in classes(ctx.package):
        for stmt in node.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == "get_kv_cache_shape":
                findings.append(
                    warning(
                        "attention-kv-cache-shape",
                        module.where(stmt),
                        f"{node.name}.get_kv_cache_shape is never called by vLLM 0.32: the KV cache layout is "
                        "negotiated through KVCacheLayout",
                        "delete it; declare supported_kv_cache_layouts() and get_supported_kernel_block_sizes()",
                    )
                )
    return findings


def linear_kernel_kinds(ctx: Context) -> list[Finding]:
    return [
        error(
            "linear-kernel-bad-kind",
            call.where,
            f"kernel_type '{kind}' is not one register_linear_kernel accepts: it raises ValueError in every process",
            f"use one of {', '.join(LINEAR_KERNEL_KINDS)}",
        )
        for call in all_calls(ctx.package, frozenset({"register_linear_kernel"}))
        if (kind := call.constant(2, "kernel_type")) is not None and kind not in LINEAR_KERNEL_KINDS
    ]


def _oot_targets(ctx: Context) -> list[tuple[Call, str | None]]:
    """(call, the in-tree class name the replacement is keyed by, None when it cannot be told statically)."""
    targets = []
    for call in all_calls(ctx.package, frozenset({"register_oot"})):
        if "name" in call.keywords:
            name = call.constant(None, "name")
        else:
            name = call.receiver.split(".")[-1] if call.receiver else None
        targets.append((call, name))
    return targets


def custom_ops(ctx: Context) -> list[Finding]:
    targets = _oot_targets(ctx)
    if not targets:
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
        for node in ast.walk(module.tree):
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


def _registered_names_in(
    ctx: Context, function: str, argument: str, in_tree: frozenset[str]
) -> list[tuple[Call, str]]:
    """(call, name) for each `function(...)` call whose first (or `argument`) constant names an in-tree entry."""
    return [
        (call, name)
        for call in all_calls(ctx.package, frozenset({function}))
        if (name := call.constant(0, argument)) is not None and name in in_tree
    ]


def quantization_names(ctx: Context) -> list[Finding]:
    in_tree = vllm_facts.in_tree_quantization_methods()
    return [
        warning(
            "quant-shadows-in-tree",
            call.where,
            f"'{name}' is an in-tree quantization method: the plugin's config silently replaces vLLM's for every "
            "checkpoint tagged with it",
            "pick a new name; to claim checkpoints tagged with the in-tree name implement override_quantization_method",
        )
        for call, name in _registered_names_in(ctx, "register_quantization_config", "quantization", in_tree)
    ]


def kv_connector_names(ctx: Context) -> list[Finding]:
    in_tree = vllm_facts.in_tree_kv_connectors()
    return [
        error(
            "kv-connector-name-taken",
            call.where,
            f"'{name}' is already registered in-tree: register_connector raises ValueError in every process",
            "register under a new name, or select the class with kv_connector_module_path instead",
        )
        for call, name in _registered_names_in(ctx, "register_connector", "name", in_tree)
    ]


def model_architectures(ctx: Context) -> list[Finding]:
    in_tree = vllm_facts.in_tree_model_architectures()
    return [
        warning(
            "model-shadows-in-tree",
            call.where,
            f"architecture '{name}' is in-tree: the plugin silently replaces vLLM's implementation for every "
            "checkpoint that names it",
            "register a new architecture name and set it in the checkpoint's config.json (or --hf-overrides)",
        )
        for call, name in _registered_names_in(ctx, "register_model", "model_arch", in_tree)
    ]


def _assigns_attribute(node: ast.ClassDef, attribute: str) -> bool:
    for child in ast.walk(node):
        targets = child.targets if isinstance(child, ast.Assign) else [getattr(child, "target", None)]
        for target in targets:
            if isinstance(target, ast.Attribute) and target.attr == attribute:
                return True
            if isinstance(target, ast.Name) and target.id == attribute and child in node.body:
                return True
    return False


ASYNC_SCHEDULER = "vllm.v1.core.sched.async_scheduler.AsyncScheduler"


def schedulers(ctx: Context) -> list[Finding]:
    found = list(classes(ctx.package))
    # A class combined with AsyncScheduler elsewhere (class XAsync(X, AsyncScheduler)) has an async variant.
    with_async_variant = {b.split(".")[-1] for _m, _n, bases in found if ASYNC_SCHEDULER in bases for b in bases}
    findings = []
    for module, node, bases in found:
        if "vllm.v1.core.sched.scheduler.Scheduler" in bases and node.name not in with_async_variant:
            findings.append(
                warning(
                    "scheduler-not-async",
                    module.where(node),
                    f"{node.name} subclasses Scheduler; vLLM turns async scheduling on by default for generative "
                    "models, and with scheduler_cls set it still sizes the batch queue for it",
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


def platform_detectors(ctx: Context) -> list[Finding]:
    """vLLM calls each detector once during detection and again for the winner, in every process."""
    findings = []
    for ep in ctx.package.entry_points_in(vllm_facts.PLATFORM):
        module = ctx.package.modules.get(ep.module)
        detector = function(module, ep.attr or "") if module else None
        if detector is None:
            continue
        table = aliases(module)
        effects = []
        for node in ast.walk(detector):
            if isinstance(node, ast.Global):
                effects.append(f"rebinds global {', '.join(node.names)}")
            elif isinstance(node, (ast.Assign, ast.AugAssign)):
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    if isinstance(target, ast.Subscript) and qualified(target.value, table) == "os.environ":
                        effects.append("writes os.environ")
            elif isinstance(node, ast.Call):
                name = qualified(node.func, table)
                if name in _SIDE_EFFECT_CALLS:
                    effects.append(f"calls {name}()")
                elif name == "open" and any(
                    isinstance(a, ast.Constant) and isinstance(a.value, str) and set(a.value) & set("wax+")
                    for a in [*node.args[1:2], *(k.value for k in node.keywords if k.arg == "mode")]
                ):
                    effects.append("opens a file for writing")
        if effects:
            findings.append(
                warning(
                    "platform-detector-side-effects",
                    module.where(detector),
                    f"platform detector {ep.attr}() {'; '.join(sorted(set(effects)))}: vLLM calls it at least "
                    "twice in every process, even when another platform wins",
                    "only probe and return the Platform's dotted path or None; move setup into the Platform "
                    "class (check_and_update_config, pre_register_and_update)",
                )
            )
    return findings


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
        for node in ast.walk(module.tree):
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
    """Every vllm.* import must exist in the installed vLLM: the first thing that breaks on an upgrade."""
    if not ctx.vllm.present:
        return []
    findings = []
    for module in ctx.package.parsed():
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Import):
                targets = [(alias.name, None) for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                targets = [(resolve_relative(module, node), alias.name) for alias in node.names]
            else:
                continue
            for source, name in targets:
                if not (source == "vllm" or source.startswith("vllm.")):
                    continue
                if not vllm_facts.vllm_module_exists(source):
                    missing = f"module {source}"
                elif name is None or name == "*" or vllm_facts.vllm_module_exists(f"{source}.{name}"):
                    continue
                else:
                    known = vllm_facts.vllm_module_names(source)
                    if known is None or name in known:
                        continue
                    missing = f"{source}.{name}"
                findings.append(
                    error(
                        "vllm-import-missing",
                        module.where(node),
                        f"{missing} does not exist in the installed vLLM {ctx.vllm.version}",
                        "import it from where this vLLM defines it (search site-packages/vllm), or guard the "
                        "import for the versions that have it",
                    )
                )
    return findings
