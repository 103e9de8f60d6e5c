"""Calls into vLLM's functions, constructors and class-level methods whose arguments the release's signature
cannot bind, and string literals passed where the release takes a class (an enum member, a config object)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from vllm_scaffold.doctor.reading.package import Module, walk_nodes
from vllm_scaffold.doctor.reading.source import string_constants
from vllm_scaffold.doctor.releases.classes import PluginClasses
from vllm_scaffold.doctor.releases.findings import Findings
from vllm_scaffold.doctor.releases.places import Place, in_annotations
from vllm_scaffold.doctor.releases.signatures import call_problem
from vllm_scaffold.vllm_facts import Signature, Symbol
from vllm_scaffold.vllm_facts.index import Param

# Type names a string literal satisfies, or that say nothing about it.
_ACCEPTS_STR = {"str", "Any", "object", "Literal", "LiteralString", "PathLike", "StrPath", "Path"}


def check_calls(classes: PluginClasses, out: Findings, module: Module) -> None:
    release = classes.release
    for node in module.of_type(ast.Call):
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            continue
        found = classes.callee(module, node.func)
        if found is None or id(node) in in_annotations(module):
            continue
        place = Place(module, node)
        if place.type_checking:
            continue
        symbol, signature = found
        problem = call_problem(signature, len(node.args), [k.arg for k in node.keywords if k.arg])
        label = symbol.qualname if symbol.kind != "member" else f"{symbol.module}.{symbol.name}"
        if problem and other_branch_binds(module, node, signature):
            continue  # the other branch of an if/else makes the call this release takes
        if problem:
            out.report(
                "vllm-call-signature",
                place,
                f"{label}{signature.text()} in {release.label}: {problem}",
                "pass the arguments this release's signature takes",
            )
            continue
        constants = string_constants(module)
        for param, argument in _bind(signature, node):
            if isinstance(argument, ast.Name) and argument.id in constants:
                argument = ast.Constant(constants[argument.id])  # BACKEND_NAME = "MY_ATTN"
            wrong = _wrong_literal(classes, symbol, param, argument)
            if wrong:
                out.report(
                    "vllm-argument-type",
                    place,
                    f"{label} takes {param.name} as {' | '.join(param.types)} in {release.label}, not {wrong}",
                    f"pass a {' | '.join(t for t in param.types if t != 'None')} on this release",
                )


def _wrong_literal(classes: PluginClasses, symbol: Symbol, param: Param, argument: ast.expr) -> str | None:
    if not (isinstance(argument, ast.Constant) and isinstance(argument.value, str)) or not param.types:
        return None
    if _ACCEPTS_STR & set(param.types):
        return None
    for type_name in param.types:
        if type_name == "None":
            continue
        resolved = classes.index.resolve(f"{symbol.module}.{type_name}")
        if resolved.kind != "class":
            return None  # a type alias or a name the index cannot see: say nothing
    return f"a string ('{argument.value}')"


def _bind(signature: Signature, call: ast.Call) -> Iterator[tuple[Param, ast.expr]]:
    yield from zip(signature.positional, call.args, strict=False)
    for keyword in call.keywords:
        found = signature.param(keyword.arg or "")
        if found is not None:
            yield found, keyword.value


def _branch_calls(module: Module) -> dict[int, list[ast.Call]]:
    """id() of each call inside one branch of an `if`/`else` -> the calls of the same function (by its text)
    in the other branch: two ways of making one call, typically one per release."""

    def pair() -> dict[int, list[ast.Call]]:
        found: dict[int, list[ast.Call]] = {}
        for node in module.of_type(ast.If):
            if not node.orelse:
                continue
            sides = []
            for branch in (node.body, node.orelse):
                by_text: dict[str, list[ast.Call]] = {}
                for stmt in branch:
                    for n in walk_nodes(stmt):
                        if isinstance(n, ast.Call):
                            by_text.setdefault(ast.unparse(n.func), []).append(n)
                sides.append(by_text)
            for mine, theirs in ((sides[0], sides[1]), (sides[1], sides[0])):
                for text, calls in mine.items():
                    for call in calls:
                        if text in theirs:
                            found.setdefault(id(call), []).extend(theirs[text])
        return found

    return module.memoised("release-branch-calls", pair)


def other_branch_binds(module: Module, call: ast.Call, signature: Signature) -> bool:
    """The call sits in one branch of an if/else whose other branch calls the same function in a way that
    binds to `signature`: the plugin picks the call per release, and this one is for another."""
    for other in _branch_calls(module).get(id(call), ()):
        if any(isinstance(a, ast.Starred) for a in other.args) or any(k.arg is None for k in other.keywords):
            continue
        if call_problem(signature, len(other.args), [k.arg for k in other.keywords if k.arg]) is None:
            return True
    return False
