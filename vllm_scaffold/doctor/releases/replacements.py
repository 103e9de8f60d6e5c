"""The replacements of vLLM's functions and methods a plugin's module makes (monkeypatches): what the release
check compares with the originals, and what tells which of vLLM's callers a plugin has patched away."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from vllm_scaffold.doctor.reading.package import Module
from vllm_scaffold.doctor.reading.source import qualified

DOTTED = re.compile(r"vllm(?:\.[A-Za-z_]\w*)+(?::[A-Za-z_]\w*)?")
Replacement = tuple[ast.Assign | ast.Call, ast.expr, str, ast.expr]  # (statement, object patched, attribute, value)
Function = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda


def replacements(module: Module) -> list[Replacement]:
    """`X.attr = value` and `setattr(X, "attr", value)` in the module."""

    def collect() -> list[Replacement]:
        found: list[Replacement] = []
        for node in module.of_type(ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Attribute):
                    found.append((node, target.value, target.attr, node.value))
        for call in module.of_type(ast.Call):
            func, args = call.func, call.args
            if getattr(func, "id", None) == "setattr" and len(args) == 3:
                name = args[1]
                if isinstance(name, ast.Constant) and isinstance(name.value, str):
                    found.append((call, args[0], name.value, args[2]))
        return found

    return module.memoised("patch-replacements", collect)


def patch_replacements(module: Module, table: dict[str, str]) -> Iterator[tuple[str, Function]]:
    """(the vLLM function or method replaced, as "vllm.x.y.Cls.method" through the module's imports, the
    plugin's function replacing it): `X.attr = fn`, `setattr(X, "attr", fn)`, and a function decorated with a
    call that names its target in a `"vllm.x.y.Cls.method"` (or `"vllm.x.y:Cls.method"`) string."""
    functions = functions_by_name(module)
    for node, owner_expr, attr, value in replacements(module):
        owner = qualified(owner_expr, table) if isinstance(owner_expr, ast.Name | ast.Attribute) else None
        if not owner or owner.split(".")[0] != "vllm":
            continue
        function = replacement_function(value, node, functions)
        if function is not None:
            yield f"{owner}.{attr}", function
    for definition in module.of_type(ast.FunctionDef, ast.AsyncFunctionDef):
        for decorator in definition.decorator_list:
            if not isinstance(decorator, ast.Call):
                continue
            for argument in [*decorator.args, *(k.value for k in decorator.keywords)]:
                if (
                    isinstance(argument, ast.Constant)
                    and isinstance(argument.value, str)
                    and DOTTED.fullmatch(argument.value)
                ):
                    yield argument.value.replace(":", "."), definition


def functions_by_name(module: Module) -> dict[str, list[Function]]:
    found: dict[str, list[Function]] = {}
    for node in module.of_type(ast.FunctionDef, ast.AsyncFunctionDef):
        found.setdefault(node.name, []).append(node)
    return found


def replacement_function(value: ast.expr, at: ast.AST, functions: dict[str, list[Function]]) -> Function | None:
    """The function a replacement assigns: a lambda, or the nearest def of that name before the assignment
    (`classmethod(fn)` / `staticmethod(fn)` unwrapped); None for anything else (a wrapper's result)."""
    if (
        isinstance(value, ast.Call)
        and getattr(value.func, "id", None) in {"classmethod", "staticmethod"}
        and value.args
    ):
        value = value.args[0]
    if isinstance(value, ast.Lambda):
        return value
    if not isinstance(value, ast.Name):
        return None
    line = getattr(at, "lineno", 0)
    before = [f for f in functions.get(value.id, ()) if f.lineno <= line]
    return max(before, key=lambda f: f.lineno) if before else None
