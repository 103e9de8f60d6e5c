"""Strings that name vLLM: dotted paths (`"vllm.x.y.Cls"`, class paths handed to vLLM) the release does not
have, and `VLLM_*` environment variables the release does not define."""

from __future__ import annotations

import ast
import re
import weakref

from vllm_scaffold.doctor.reading.package import Module
from vllm_scaffold.doctor.reading.source import aliases, called_name, qualified
from vllm_scaffold.doctor.releases.classes import PluginClasses
from vllm_scaffold.doctor.releases.findings import Findings
from vllm_scaffold.doctor.releases.places import Place, in_annotations
from vllm_scaffold.doctor.releases.release import Release
from vllm_scaffold.doctor.releases.replacements import DOTTED
from vllm_scaffold.vllm_facts import facts

# Calls whose first argument names a logger or a tracer (vLLM's `init_tracer(instrumenting_module_name, ...)`).
_LOGGER_FACTORIES = frozenset({"getLogger", "init_logger", "Logger", "getChild", "init_tracer"})
_VLLM_VARIABLE = re.compile(r"VLLM_[A-Z0-9_]+")
_ENVIRON_METHODS = frozenset({"get", "setdefault", "pop"})


def check_dotted_strings(classes: PluginClasses, out: Findings, module: Module) -> None:
    release = classes.release
    loggers: set[int] | None = None
    for node in module.of_type(ast.Constant):
        value = node.value
        if not isinstance(value, str) or not value.startswith("vllm.") or not DOTTED.fullmatch(value):
            continue
        if value in release.groups or id(node) in in_annotations(module):
            continue  # an entry-point group ("vllm.general_plugins") is a name, not a path
        if loggers is None:
            loggers = _logger_names(module) | _probed_modules(module) | _group_names(module)
            loggers |= _alternatives_found(module, release)
        if id(node) in loggers:
            continue  # a logger's or an entry-point group's name, a module asked whether it exists, or one of
            # several paths tried in turn of which this release has one
        place = Place(module, node)
        if place.type_checking:
            continue
        missing = release.first_missing(value.replace(":", "."))
        if missing:
            out.report(
                "vllm-dotted-path-missing",
                place,
                f"'{value}' names {missing}, which does not exist in {release.label}{release.elsewhere(missing)}",
                "point it at where this release defines it",
            )


def _logger_names(module: Module) -> set[int]:
    """id() of the string constants that name loggers: the argument of `logging.getLogger("vllm.x")`, vLLM's
    `init_logger` or `init_tracer`, a module-level constant that argument is built from
    (`ROOT = "vllm.fx"` ... `getLogger(f"{ROOT}.{name}")`), and the keys of a logging config's "loggers" table."""
    found: set[int] = set()
    names: set[str] = set()
    for call in module.of_type(ast.Call):
        if called_name(call) in _LOGGER_FACTORIES:
            arguments = [*call.args[:1], *(k.value for k in call.keywords if k.arg == "name")]
            found.update(id(a) for a in arguments)
            names.update(n.id for a in arguments for n in ast.walk(a) if isinstance(n, ast.Name))
    for stmt in module.tree.body if module.tree is not None and names else ():
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id in names for t in stmt.targets):
            found.add(id(stmt.value))
    for table in module.of_type(ast.Dict):
        for key, value in zip(table.keys, table.values, strict=True):
            if isinstance(key, ast.Constant) and key.value == "loggers" and isinstance(value, ast.Dict):
                found.update(id(k) for k in value.keys if k is not None)
    return found


def _group_names(module: Module) -> set[int]:
    """id() of the string constants passed as `group=` (`entry_points(group="vllm.fx_patches")`): an
    entry-point group's name, the plugin's own or vLLM's, never a module path."""
    return {id(k.value) for call in module.of_type(ast.Call) for k in call.keywords if k.arg == "group"}


_SEQUENCES = (ast.List, ast.Tuple, ast.Set)


def _alternatives_found(module: Module, release: Release) -> set[int]:
    """id() of the `vllm.` paths in a literal list or tuple of alternatives tried in turn, when the release has
    one of them: the others are the places of other releases. A sequence is tried in turn when a loop with a
    `try` in its body iterates over it, directly or through the name it is bound to (`for path in
    ("vllm.new.place", "vllm.old.place"): try: import_module(path)`). A list of which the release has none,
    and one read otherwise (prefixes compared with a name, targets patched one by one), is reported whole."""
    found: set[int] = set()
    for node in _tried_in_turn(module):
        paths = [
            part
            for part in ast.walk(node)
            if isinstance(part, ast.Constant)
            and isinstance(part.value, str)
            and part.value.startswith("vllm.")
            and DOTTED.fullmatch(part.value)
        ]
        if len(paths) > 1 and any(release.first_missing(p.value.replace(":", ".")) is None for p in paths):
            found.update(id(p) for p in paths)
    return found


def _tried_in_turn(module: Module) -> list[ast.expr]:
    """The list and tuple literals a loop with a `try` in its body iterates over, directly or by name."""
    looped: list[ast.expr] = []
    names: set[str] = set()
    for loop in module.of_type(ast.For, ast.AsyncFor):
        if not any(isinstance(part, ast.Try) for stmt in loop.body for part in ast.walk(stmt)):
            continue
        if isinstance(loop.iter, _SEQUENCES):
            looped.append(loop.iter)
        elif isinstance(loop.iter, ast.Name):
            names.add(loop.iter.id)
    for assign in module.of_type(ast.Assign) if names else ():
        if isinstance(assign.value, _SEQUENCES) and any(
            isinstance(t, ast.Name) and t.id in names for t in assign.targets
        ):
            looped.append(assign.value)
    return looped


def _probed_modules(module: Module) -> set[int]:
    """id() of the string constants `find_spec` is asked about: a module that may be missing, by design."""
    found: set[int] = set()
    for call in module.of_type(ast.Call):
        if called_name(call) == "find_spec":
            found.update(id(a) for a in call.args[:1])
    return found


def check_environment_variables(classes: PluginClasses, out: Findings, module: Module) -> None:
    """A `VLLM_*` variable the plugin reads or sets (`os.environ[...]`, `os.getenv`, `os.environ.get`,
    `setdefault`, `pop`, `os.putenv`) that the release does not define: vLLM's environment check logs it in
    every engine, and refuses it under `--fail-on-environ-validation`."""
    known = classes.index.environment_variables
    if not known:
        return
    added = _added_variables(classes)
    if added is None:
        return  # the plugin's platform replaces vLLM's environment check
    for node in module.of_type(ast.Call, ast.Subscript):
        key = _environment_key(node)
        if key is None or not _VLLM_VARIABLE.fullmatch(key) or key in known or key in added:
            continue
        out.report(
            "env-unknown-vllm-variable",
            Place(module, node),
            f"{key} is in vLLM's VLLM_ namespace, which {classes.release.label} does not define, so wherever it is "
            "set every engine reports it. " + facts.fact("unknown-vllm-variables-checked").text(),
            "name the plugin's own variables outside the VLLM_ prefix (the package's name in capitals, for "
            "example), reading the old name for a release with a deprecation warning",
        )


_ENVIRONMENT_LIST = "vllm.envs.environment_variables"
_ADDED: weakref.WeakKeyDictionary[PluginClasses, frozenset[str] | None] = weakref.WeakKeyDictionary()


def _added_variables(classes: PluginClasses) -> frozenset[str] | None:
    """The variables the plugin adds to vLLM's list of known ones (`environment_variables.update({...})`,
    `environment_variables["VLLM_X"] = ...` on `vllm.envs`' dict), which the check then accepts; None when a
    class of the plugin defines its own `validate_environ` (a platform replacing vLLM's check)."""
    if classes in _ADDED:
        return _ADDED[classes]
    added: set[str] | None = set()
    for module in classes.package.parsed():
        table = aliases(module)
        dicts = _module_dicts(module)
        for node in module.of_type(ast.Call, ast.Assign, ast.FunctionDef):
            if isinstance(node, ast.FunctionDef) and node.name == "validate_environ":
                added = None
                break
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "update":
                if qualified(node.func.value, table) == _ENVIRONMENT_LIST and node.args:
                    argument = node.args[0]
                    if isinstance(argument, ast.Name):
                        added.update(dicts.get(argument.id) or _imported_dict(classes, qualified(argument, table)))
                    elif isinstance(argument, ast.Dict):
                        added.update(_keys(argument))
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Subscript) and qualified(target.value, table) == _ENVIRONMENT_LIST:
                        if isinstance(target.slice, ast.Constant) and isinstance(target.slice.value, str):
                            added.add(target.slice.value)
        if added is None:
            break
    _ADDED[classes] = None if added is None else frozenset(added)
    return _ADDED[classes]


def _imported_dict(classes: PluginClasses, qualname: str | None) -> list[str]:
    """The string keys of the dict literal a module of the package binds at `qualname` (`pkg.envs.VARIABLES`,
    imported from there), or none."""
    if qualname is None:
        return []
    owner, _, name = qualname.rpartition(".")
    module = classes.package.modules.get(owner)
    return _module_dicts(module).get(name, []) if module is not None else []


def _module_dicts(module: Module) -> dict[str, list[str]]:
    """Module-level NAME -> the string keys of the dict literal it is bound to."""
    found: dict[str, list[str]] = {}
    for stmt in module.tree.body if module.tree is not None else ():
        value = getattr(stmt, "value", None)
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]
        if isinstance(value, ast.Dict):
            found.update((t.id, _keys(value)) for t in targets if isinstance(t, ast.Name))
    return found


def _keys(node: ast.Dict) -> list[str]:
    return [k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]


def _environment_key(node: ast.AST) -> str | None:
    """The literal variable name `node` reads or sets in the process environment, or None."""
    if isinstance(node, ast.Subscript):
        target, key = node.value, node.slice
        if not (isinstance(target, ast.Attribute) and target.attr == "environ") and not (
            isinstance(target, ast.Name) and target.id == "environ"
        ):
            return None
    elif isinstance(node, ast.Call) and node.args:
        func, key = node.func, node.args[0]
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        owner = func.value if isinstance(func, ast.Attribute) else None
        on_environ = (isinstance(owner, ast.Attribute) and owner.attr == "environ") or (
            isinstance(owner, ast.Name) and owner.id == "environ"
        )
        if not (name in {"getenv", "putenv"} or (name in _ENVIRON_METHODS and on_environ)):
            return None
    else:
        return None
    return key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else None
