"""Static checks of logits processors: one that masks logits while claiming argmax invariance."""

from __future__ import annotations

import ast

from vllm_scaffold.doctor.checks.target import Target, check
from vllm_scaffold.doctor.reading.package import Module, PluginPackage
from vllm_scaffold.doctor.reading.source import (
    aliases,
    classes,
)
from vllm_scaffold.doctor.report.findings import Finding
from vllm_scaffold.vllm_facts import facts

_MAX_READERS = {"max", "amax", "argmax", "topk", "sort", "argsort", "max_"}


@check("logits-argmax-masks")
def logits_argmax_masks(target: Target) -> list[Finding]:
    """`is_argmax_invariant()` returning True tells vLLM to skip the processor for greedy requests; an apply()
    that writes into the logits without keeping the top one (as min-p does) is then silently ignored for them."""
    ctx = target.environment
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
            Finding(
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
