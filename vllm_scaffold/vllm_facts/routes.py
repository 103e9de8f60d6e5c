"""HTTP routes a module declares with FastAPI, read from its AST: the same reading for vLLM's own API server
(the core routes, kept in each release's index) and for a plugin's endpoint routes (doctor).

A route is "METHOD /path". Declarations read: `@router.get("/p")` (also post, put, delete, patch),
`@router.api_route("/p", methods=[...])` and `router.add_api_route("/p", ..., methods=[...])`, on any
router or app object, the path a string literal or a module-level string constant, prefixed by the
`prefix=` of the module-level `router = APIRouter(prefix=...)` it is declared on.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

_METHODS = {"get": "GET", "post": "POST", "put": "PUT", "delete": "DELETE", "patch": "PATCH"}


def declared_routes(tree: ast.Module) -> Iterator[tuple[str, ast.expr]]:
    """Every route `tree` declares, with the call that declares it."""
    constants = _string_constants(tree)
    prefixes = _router_prefixes(tree, constants)
    for node in _route_calls(tree):
        assert isinstance(node.func, ast.Attribute)
        verb = node.func.attr
        path_arg = node.args[0] if node.args else _keyword(node, "path")
        path = _string(path_arg, constants)
        if path is None or (path and not path.startswith("/")):
            continue
        owner = node.func.value
        prefix = prefixes.get(owner.id, "") if isinstance(owner, ast.Name) else ""
        if verb in _METHODS:
            methods = [_METHODS[verb]]
        else:
            listed = _keyword(node, "methods")
            items = listed.elts if isinstance(listed, ast.List | ast.Tuple | ast.Set) else []
            methods = [m.upper() for m in (_string(item, constants) for item in items) if m] or ["GET"]
        for method in methods:
            yield f"{method} {prefix}{path}", node


def _route_calls(tree: ast.Module) -> Iterator[ast.Call]:
    """Route decorators (`@x.get(...)`, `@x.api_route(...)`) and `x.add_api_route(...)` calls: a call such as
    a test client's `client.get("/v1/models")` declares nothing."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for decorator in node.decorator_list:
                if isinstance(decorator, ast.Call) and isinstance(decorator.func, ast.Attribute):
                    if decorator.func.attr in _METHODS or decorator.func.attr == "api_route":
                        yield decorator
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "add_api_route":
                yield node


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _string(expr: ast.expr | None, constants: dict[str, str]) -> str | None:
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return expr.value
    if isinstance(expr, ast.Name):
        return constants.get(expr.id)
    return None


def _string_constants(tree: ast.Module) -> dict[str, str]:
    found: dict[str, str] = {}
    for statement in tree.body:
        target = statement.targets[0] if isinstance(statement, ast.Assign) and len(statement.targets) == 1 else None
        if isinstance(statement, ast.AnnAssign):
            target = statement.target
        value = getattr(statement, "value", None)
        if isinstance(target, ast.Name) and isinstance(value, ast.Constant) and isinstance(value.value, str):
            found[target.id] = value.value
    return found


def _router_prefixes(tree: ast.Module, constants: dict[str, str]) -> dict[str, str]:
    """Module-level `NAME = APIRouter(prefix=...)`, by NAME."""
    prefixes: dict[str, str] = {}
    for statement in tree.body:
        if not (isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Call)):
            continue
        func = statement.value.func
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        prefix = _string(_keyword(statement.value, "prefix"), constants)
        if called == "APIRouter" and prefix:
            for target in statement.targets:
                if isinstance(target, ast.Name):
                    prefixes[target.id] = prefix
    return prefixes
