"""Worker extensions (`worker_extension_cls="pkg.mod.Class"`): the names the class brings onto vLLM's worker.

vLLM appends the extension class to the bases of the platform's worker class in every worker process, after
asserting that the worker class has none of the extension's names (`worker-extension-name-assert` in
facts.toml). The check reads the extension classes the package names (a `worker_extension_cls` keyword or
dict key, a `--worker-extension-cls` argument, the manifest's worker-extension components) and compares their
names with the worker classes of the release checked: the installed vLLM's, or each `--vllm` release's index.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass

from vllm_scaffold.doctor.checks.target import Target, check
from vllm_scaffold.doctor.reading.package import Module, PluginPackage
from vllm_scaffold.doctor.reading.source import aliases, string_constants
from vllm_scaffold.doctor.report.findings import Finding
from vllm_scaffold.vllm_facts import ReleaseIndex, Symbol, facts

SEAM = "worker-extension"
KEYWORD = "worker_extension_cls"
FLAG = "--worker-extension-cls"
_FLAG_VALUE = re.compile(rf"{FLAG}[ =]+([\w.:]+)")

# The worker class each platform mixes the extension into (`platform-worker-classes` in facts.toml), and the
# wrapper `collective_rpc` looks a name up on first (`collective-rpc-wrapper-first`).
WORKER_CLASSES = {
    "CUDA and ROCm": "vllm.v1.worker.gpu_worker.Worker",
    "CPU": "vllm.v1.worker.cpu_worker.CPUWorker",
    "XPU": "vllm.v1.worker.xpu_worker.XPUWorker",
}
WRAPPER = "vllm.v1.worker.worker_base.WorkerWrapperBase"


@dataclass(frozen=True)
class Extension:
    """An extension class of the package, with where the package names it."""

    path: str  # the dotted path as written ("pkg.mod.Class")
    module: Module
    node: ast.ClassDef
    named_at: str


def named_paths(package: PluginPackage) -> Iterator[tuple[str, str]]:
    """(class path, where it is named) for every extension class path the package writes."""
    for component in package.manifest.get("components", []):
        if not isinstance(component, dict):
            continue
        where = "pyproject.toml [tool.vllm-scaffold] components"
        if component.get("seam") == SEAM and isinstance(component.get("object"), str):
            yield component["object"], where
        for line in component.get("enable", []):
            for found in _FLAG_VALUE.findall(str(line)):
                yield found, where
    for module in package.parsed():
        text = functools.partial(_text, string_constants(module))
        for node in module.of_type(ast.keyword, ast.Dict, ast.List, ast.Tuple, ast.Constant):
            if isinstance(node, ast.keyword) and node.arg == KEYWORD and (value := text(node.value)):
                yield value, module.where(node.value)
            elif isinstance(node, ast.Dict):
                for key, value in zip(node.keys, node.values, strict=True):
                    if text(key) == KEYWORD and (found := text(value)):
                        yield found, module.where(value)
            elif isinstance(node, (ast.List, ast.Tuple)):
                for flag, value in zip(node.elts, node.elts[1:], strict=False):
                    if text(flag) == FLAG and (found := text(value)):
                        yield found, module.where(value)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and FLAG in node.value:
                for found in _FLAG_VALUE.findall(node.value):
                    yield found, module.where(node)


def _text(constants: dict[str, str], expr: ast.expr | None) -> str | None:
    """The string a literal or a module constant holds."""
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return expr.value
    return constants.get(expr.id) if isinstance(expr, ast.Name) else None


def extensions(package: PluginPackage) -> list[Extension]:
    """The package's own extension classes, once each (a path naming a class elsewhere is not the package's)."""
    found: dict[tuple[str, str], Extension] = {}
    for path, where in named_paths(package):
        resolved = package_class(package, path.replace(":", "."))
        if resolved is not None:
            module, node = resolved
            found.setdefault((module.name, node.name), Extension(path, module, node, where))
    return list(found.values())


def package_class(package: PluginPackage, dotted: str, depth: int = 3) -> tuple[Module, ast.ClassDef] | None:
    """The class of the package that `dotted` names, following re-exports (`from .impl import Class`)."""
    owner, _, name = dotted.rpartition(".")
    module = package.modules.get(owner)
    if module is None or module.tree is None:
        return None
    for stmt in module.tree.body:
        if isinstance(stmt, ast.ClassDef) and stmt.name == name:
            return module, stmt
    target = aliases(module).get(name)
    if depth and target and target != dotted and package.owns(target):
        return package_class(package, target, depth - 1)
    return None


def members(package: PluginPackage, module: Module, node: ast.ClassDef) -> dict[str, tuple[Module, ast.stmt]]:
    """What `dir()` of the class lists but dunders, by name, with where each is defined: its methods, nested
    classes and assigned class attributes (a bare annotation binds nothing), then those of its bases in the
    package."""
    found: dict[str, tuple[Module, ast.stmt]] = {}
    for base in node.bases:
        table = aliases(module)
        base_name = ast.unparse(base)
        head, _, rest = base_name.partition(".")
        dotted = f"{table[head]}.{rest}".rstrip(".") if head in table else f"{module.name}.{base_name}"
        resolved = package_class(package, dotted)
        if resolved is not None and resolved[1] is not node:
            found.update(members(package, *resolved))
    for stmt in node.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [stmt.name]
        elif isinstance(stmt, ast.Assign):
            names = [t.id for t in stmt.targets if isinstance(t, ast.Name)]
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None and isinstance(stmt.target, ast.Name):
            names = [stmt.target.id]
        else:
            names = []
        found.update((name, (module, stmt)) for name in names if not name.startswith("__"))
    return found


def _owner(index: ReleaseIndex, symbol: Symbol, name: str, key: str) -> str | None:
    """The class of `symbol`'s vLLM lineage whose entry lists `name` under `key` ("m" methods, "v" other
    attributes), as Class.name."""
    for cls in index.mro(symbol)[0]:
        entry = index.class_entry(cls)
        if name in entry.get(key, ()):
            return f"{cls.name}.{name}"
    return None


@check("worker-extension-name-clash", "worker-extension-name-shadowed", every_release=True)
def name_clashes(target: Target) -> list[Finding]:
    return [] if target.index is None else clashes_on(target.package, target.index)


def clashes_on(package: PluginPackage, index: ReleaseIndex) -> list[Finding]:
    """Each extension name that the worker classes of release `index` already have: a method or property
    (vLLM's assert stops every worker), or an attribute their `__init__` or the wrapper sets (the method is
    never reached)."""
    found = extensions(package)
    if not found:
        return []
    workers = {
        platform: symbol for platform, path in WORKER_CLASSES.items() if (symbol := index.resolve(path)).kind == "class"
    }
    wrapper = index.resolve(WRAPPER)
    findings = []
    for extension in found:
        for name, (module, stmt) in sorted(members(package, extension.module, extension.node).items()):
            label = f"{extension.node.name}.{name}"
            taken = {p: owner for p, s in workers.items() if (owner := _owner(index, s, name, "m"))}
            if taken:
                findings.append(_clash(index, label, taken, module.where(stmt), extension.module.name.split(".")[0]))
                continue
            if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            shadows = {p: owner for p, s in workers.items() if (owner := _owner(index, s, name, "v"))}
            in_wrapper = wrapper.kind == "class" and (
                _owner(index, wrapper, name, "m") or _owner(index, wrapper, name, "v")
            )
            if shadows or in_wrapper:
                findings.append(_shadowed(index, label, shadows, in_wrapper or None, module.where(stmt)))
    return findings


def _platforms(taken: dict[str, str]) -> str:
    owners = sorted(set(taken.values()))
    where = "every platform's worker" if len(taken) == len(WORKER_CLASSES) else f"the {' and '.join(taken)} worker"
    return f"{', '.join(owners)} ({where})"


def _clash(index: ReleaseIndex, label: str, taken: dict[str, str], where: str, prefix: str) -> Finding:
    return Finding(
        "worker-extension-name-clash",
        where,
        f"{label} is named like {_platforms(taken)} of vLLM {index.version}. "
        + facts.holding("worker-extension-name-assert", index.version).claim,
        f"rename it with a prefix of the package ({prefix}_{label.rpartition('.')[2].lstrip('_')}), and move "
        "helpers out of the class into module-level functions",
    )


def _shadowed(
    index: ReleaseIndex, label: str, shadows: dict[str, str], in_wrapper: str | None, where: str
) -> Finding:  # fmt: skip
    parts = []
    if shadows:
        parts.append(
            f"the worker sets the attribute {_platforms(shadows)}, which hides the method on every worker instance"
        )
    if in_wrapper:
        parts.append(f"{in_wrapper} is found first by collective_rpc, which looks names up on the wrapper")
    return Finding(
        "worker-extension-name-shadowed",
        where,
        f"{label} passes vLLM {index.version}'s name check but collective_rpc never reaches it: {'; '.join(parts)}. "
        + facts.fact("collective-rpc-wrapper-first").text(),
        "rename the method with a prefix of the package",
    )
