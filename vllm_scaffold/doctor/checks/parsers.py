"""Static checks on tool-call and reasoning parsers: where they register, under which name, and how they are
reached (AST only, never imported). The facts behind them are in `vllm_facts.parsers`."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from vllm_scaffold.doctor.checks.imports import fails_to_import
from vllm_scaffold.doctor.checks.target import Target, check
from vllm_scaffold.doctor.reading import installed as vllm_facts
from vllm_scaffold.doctor.reading.context import Context
from vllm_scaffold.doctor.reading.package import Module
from vllm_scaffold.doctor.reading.source import Call, all_calls, classes, reached_modules
from vllm_scaffold.doctor.report.findings import Finding
from vllm_scaffold.vllm_facts import facts, store
from vllm_scaffold.vllm_facts import parsers as parser_facts


@dataclass(frozen=True)
class _Kind:
    """One of the two parser registries."""

    what: str  # "tool parser" / "reasoning parser"
    manager: str  # the manager class's name
    base: str  # the parser base class's name
    flag: str  # the server flag that selects a name
    in_tree: frozenset[str]


_TOOL = _Kind("tool parser", "ToolParserManager", "ToolParser", "--tool-call-parser", store.in_tree_tool_parsers())
_REASONING = _Kind(
    "reasoning parser",
    "ReasoningParserManager",
    "ReasoningParser",
    "--reasoning-parser",
    store.in_tree_reasoning_parsers(),
)
_KINDS = (_TOOL, _REASONING)


def _registrations(ctx: Context) -> Iterator[tuple[_Kind, Call]]:
    """Each `XParserManager.register_module(...)` / `register_lazy_module(...)` call or decorator."""
    for call in all_calls(ctx.package, frozenset(parser_facts.REGISTRATION_METHODS)):
        owner = (call.receiver or "").rpartition(".")[2]
        for kind in _KINDS:
            if owner == kind.manager:
                yield kind, call


def _names(call: Call) -> list[str]:
    """The names a registration call gives: a literal (or a module constant), or a list of literals."""
    if call.api == "register_lazy_module":
        name = call.constant(0, "name")
        return [name] if name else []
    value = call.argument(0, "name")
    if isinstance(value, (ast.List, ast.Tuple)):
        return [e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    name = call.constant(0, "name")
    return [name] if name else []


@check("parser-name-in-tree")
def parser_names_in_tree(target: Target) -> list[Finding]:
    """A parser registered under a name vLLM registers itself replaces vLLM's for the whole environment.

    Not where the registering module cannot be imported on the installed vLLM: there the registration never
    runs (vllm-import-missing says why), so nothing is replaced."""
    ctx = target.environment
    findings = []
    for kind, call in _registrations(ctx):
        if ctx.vllm.present and fails_to_import(call.module):
            continue
        for name in _names(call):
            if name in kind.in_tree:
                findings.append(
                    Finding(
                        "parser-name-in-tree",
                        call.where,
                        f"'{name}' is a {kind.what} vLLM registers itself: this registration replaces vLLM's for "
                        f"every server in the environment started with {kind.flag} {name}. "
                        + facts.fact(f"catalog-{kind.what.replace(' ', '-')}-duplicates").text(),
                        "register under a name of your own and start the server with that name",
                    )
                )
    return findings


# Entry-point groups only the front end (the API server) loads.
_FRONT_END_ONLY = (vllm_facts.ENDPOINT, vllm_facts.IO_PROCESSOR, vllm_facts.STAT_LOGGER)


@check("reasoning-parser-server-only")
def reasoning_parser_server_only(target: Target) -> list[Finding]:
    """A reasoning parser registered from code only the API server loads, after it checks the parser flags."""
    ctx = target.environment
    general = reached_modules(ctx.package, [ep.module for ep in ctx.package.entry_points_in(vllm_facts.GENERAL)])
    front_end = [ep for group in _FRONT_END_ONLY for ep in ctx.package.entry_points_in(group)]
    findings = []
    for kind, call in _registrations(ctx):
        if kind is not _REASONING or call.module.name in general:
            continue
        loaders = [ep for ep in front_end if call.module.name in reached_modules(ctx.package, [ep.module])]
        if not loaders:
            continue
        findings.append(
            Finding(
                "reasoning-parser-server-only",
                call.where,
                f"{call.api}() runs in {call.module.name}, which only the {loaders[0].group} entry point "
                f"'{loaders[0].name}' reaches. " + facts.fact("api-server-checks-parsers-first").text(),
                "call the registration from the package's general plugin (vllm.general_plugins), which vLLM runs "
                "in the front end before it checks the flag and in the engine core",
            )
        )
    return findings


_PLUGIN_KEYWORDS = {
    "tool_parser_plugin": "--tool-parser-plugin",
    "reasoning_parser_plugin": "--reasoning-parser-plugin",
}


def _short_plugin_paths(module: Module) -> Iterator[tuple[ast.AST, str, str]]:
    """(node, flag, value) for each plugin path of at most three characters the module passes."""
    limit = parser_facts.PLUGIN_PATH_MIN_LENGTH - 1
    for node in module.of_type(ast.Call, ast.List, ast.Tuple, ast.Constant):
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                value = keyword.value
                if keyword.arg in _PLUGIN_KEYWORDS and isinstance(value, ast.Constant):
                    if isinstance(value.value, str) and 0 < len(value.value) <= limit:
                        yield node, _PLUGIN_KEYWORDS[keyword.arg], value.value
        elif isinstance(node, (ast.List, ast.Tuple)):
            items = [e.value if isinstance(e, ast.Constant) and isinstance(e.value, str) else None for e in node.elts]
            for flag, value in zip(items, items[1:], strict=False):
                if flag in parser_facts.PLUGIN_PATH_FLAGS and value is not None and 0 < len(value) <= limit:
                    yield node, flag, value
        elif isinstance(node.value, str):
            for flag in parser_facts.PLUGIN_PATH_FLAGS:
                prefix = f"{flag}="
                if node.value.startswith(prefix) and 0 < len(node.value) - len(prefix) <= limit:
                    yield node, flag, node.value[len(prefix) :]


@check("parser-plugin-path-too-short")
def parser_plugin_path_too_short(target: Target) -> list[Finding]:
    """vLLM imports a parser plugin path only when it is longer than three characters."""
    ctx = target.environment
    findings = []
    for module in ctx.package.parsed():
        for node, flag, value in _short_plugin_paths(module):
            findings.append(
                Finding(
                    "parser-plugin-path-too-short",
                    module.where(node),
                    f"{flag} {value!r} has {len(value)} characters. "
                    + facts.fact("parser-plugin-path-length").text()
                    + " The parser it should register is never found",
                    "give the module's full dotted name or the file's path, or register the parser from the "
                    "general plugin and drop the flag",
                )
            )
    return findings


# The ToolParser methods the server calls whose base versions raise NotImplementedError (not abstract).
_TOOL_PARSER_METHODS = ("extract_tool_calls", "extract_tool_calls_streaming")


def _methods(node: ast.ClassDef) -> set[str]:
    return {s.name for s in node.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}


@check("tool-parser-method-missing")
def tool_parser_methods(target: Target) -> list[Finding]:
    """A ToolParser subclass without the extraction methods fails at the first request that needs them."""
    ctx = target.environment
    found = list(classes(ctx.package))
    local = {f"{module.name}.{node.name}": (node, bases) for module, node, bases in found}
    by_name: dict[str, tuple[ast.ClassDef, list[str]]] = {}
    for qualname, entry in local.items():
        by_name.setdefault(qualname.rpartition(".")[2], entry)  # the first class of that name

    def lineage(bases: list[str], seen: frozenset[str] = frozenset()) -> tuple[bool, set[str]]:
        """(derives from vLLM's ToolParser, methods the package's classes in between define)."""
        derives, methods = False, set()
        for base in bases:
            if base.startswith("vllm.") and base.rpartition(".")[2] == _TOOL.base:
                derives = True
            parent = local.get(base) or (by_name.get(base) if "." not in base else None)
            if parent is not None and base not in seen:
                parent_derives, parent_methods = lineage(parent[1], seen | {base})
                derives |= parent_derives
                methods |= _methods(parent[0]) | parent_methods
        return derives, methods

    findings = []
    for module, node, bases in found:
        derives, inherited = lineage(bases)
        if not derives:
            continue
        missing = [m for m in _TOOL_PARSER_METHODS if m not in _methods(node) | inherited]
        if missing and not node.name.startswith("_") and not _is_abstract(node):
            findings.append(
                Finding(
                    "tool-parser-method-missing",
                    module.where(node),
                    f"{node.name} derives from ToolParser but does not define {', '.join(missing)}. "
                    + facts.fact("tool-parser-methods-not-abstract").text()
                    + " The first request that needs it fails, not the server's start-up",
                    "implement both extract_tool_calls (whole replies) and extract_tool_calls_streaming "
                    "(streamed ones) with the release's signatures",
                )
            )
    return findings


def _is_abstract(node: ast.ClassDef) -> bool:
    """Whether the class declares itself abstract (ABC in its bases or an abstractmethod in its body)."""
    decorated = any(
        (isinstance(d, ast.Name) and d.id == "abstractmethod")
        or (isinstance(d, ast.Attribute) and d.attr == "abstractmethod")
        for s in node.body
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
        for d in s.decorator_list
    )
    return decorated or any(isinstance(b, ast.Name) and b.id == "ABC" for b in node.bases)
