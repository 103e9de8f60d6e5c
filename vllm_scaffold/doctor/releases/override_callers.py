"""Whether vLLM can call a plugin's override at all: an override vLLM never reaches cannot break on its signature.

Hardware plugins subclass vLLM's classes and then call them from their own code: a proposer or a metadata
builder that only the plugin's model runner calls, a KV cache manager only the plugin's scheduler uses, a
model class only the plugin's model loader builds. An override-signature finding on such a method is noise.
vLLM is taken to call an override when one of its call sites of the method (read from the installed vLLM's
source, `callers.py`) passes arguments the override rejects and can reach the plugin's object:

- `self.m(...)` in a vLLM class K reaches the plugin's class only when the plugin's class (or one deriving
  from it) derives from K and does not override the method the call is written in;
- `x.m(...)` in a vLLM class K is not reached when the plugin replaces K's method that makes the call (a
  plugin class derives from K and overrides it, without `super()`), or provides its own class in K's part
  (it derives from one of K's bases, or it is named like K but for its first word: RBLNModelRunner for
  GPUModelRunner), since vLLM then runs the plugin's class instead of K;
- `m(...)` in a module-level function is reached when that function is: its own callers are followed;
  a function nothing calls or names is dead.

Without the installed vLLM's source (checks against another release) every site is assumed reachable. Two
more cases need no call sites: a model class vLLM never builds (vLLM builds models from its model registry,
and the plugin registers neither the class nor one deriving from it), and a module that is an adapter for
another vLLM release (named with its version, `*_085`) which nothing in the package imports.
"""

from __future__ import annotations

import ast
import re
from functools import cached_property
from typing import TYPE_CHECKING

from vllm_scaffold.doctor.reading.callers import CallSite, CallSites
from vllm_scaffold.doctor.reading.source import references
from vllm_scaffold.doctor.releases.signatures import call_problem, override_problem
from vllm_scaffold.vllm_facts import Signature

if TYPE_CHECKING:
    from vllm_scaffold.doctor.reading.package import Module
    from vllm_scaffold.doctor.releases.check import ReleaseCheck

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
# Where vLLM's model interfaces live: a class implementing them is a model, built only from the registry.
_MODEL_INTERFACES = ("vllm.model_executor.models.interfaces",)
_CAMEL_WORDS = re.compile(r"[A-Z]+(?=[A-Z][a-z]|\d|_|$)|[A-Z]?[a-z]+|\d+")
_VERSION_TAG = re.compile(r"(?:^|_|vllm)v?(0\d{2,3})$")
_PATH = re.compile(r"[A-Za-z_][\w.]*[.:][A-Za-z_]\w*")
_DEPTH = 3  # how many module-level functions deep callers are followed


class OverrideCallers:
    """Answers, for one plugin package checked against one vLLM, whether vLLM can call an override."""

    def __init__(self, check: ReleaseCheck, sites: CallSites | None) -> None:
        self.check = check
        self.sites = sites

    # -- the plugin's classes ------------------------------------------------------------------------------

    @cached_property
    def _children(self) -> dict[str, list[str]]:
        children: dict[str, list[str]] = {}
        for qualname, (module, node) in self.check.plugin_classes.items():
            for base in self.check.bases(module, node):
                if base in self.check.plugin_classes:
                    children.setdefault(base, []).append(qualname)
        return children

    def family(self, qualname: str) -> list[str]:
        """The plugin class and every plugin class deriving from it."""
        found = [qualname]
        for current in found:
            found += [c for c in self._children.get(current, ()) if c not in found]
        return found

    def objects(self, qualname: str) -> list[str]:
        """The classes whose objects can carry the plugin class's methods: the classes of its family no plugin
        class derives from (a class the plugin derives others from is their base, or a mixin)."""
        return [q for q in self.family(qualname) if q not in self._children] or [qualname]

    def mro(self, qualname: str) -> set[str]:
        """The vLLM classes the plugin class derives from, at any depth, by defining module and name."""
        memo = self.__dict__.setdefault("_mro", {})
        if qualname not in memo:
            bases = self.check.lineage(qualname)[1]
            memo[qualname] = {f"{s.module}.{s.name}" for b in bases for s in self.check.index.mro(b)[0]}
        return memo[qualname]

    def _functions(self, qualname: str, seen: frozenset[str] = frozenset()) -> dict[str, FunctionNode]:
        """Methods the plugin class defines or inherits from the plugin's own classes, nearest first."""
        module, node = self.check.plugin_classes[qualname]
        found: dict[str, FunctionNode] = {}
        for base in reversed(self.check.bases(module, node)):
            if base in self.check.plugin_classes and base not in seen:
                found.update(self._functions(base, seen | {qualname}))
        found.update({s.name: s for s in node.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))})
        return found

    def replaces(self, qualname: str, method: str) -> bool:
        """The plugin class has its own `method` that does not hand over to vLLM's with super()."""
        function = self._functions(qualname).get(method)
        if function is None:
            return False
        return not any(
            isinstance(n, ast.Attribute)
            and n.attr == method
            and isinstance(n.value, ast.Call)
            and getattr(n.value.func, "id", None) == "super"
            for n in ast.walk(function)
        )

    # -- the question --------------------------------------------------------------------------------------

    def can_call(self, qualname: str, method: str, override: Signature, base: Signature) -> bool:
        """Whether vLLM can call `method` of the plugin class `qualname` with arguments `override` rejects
        (`base` is the signature of the vLLM method it overrides)."""
        if self._unbuilt_model(qualname) or self._other_release_adapter(self.check.plugin_classes[qualname][0]):
            return False
        if self._as_vllm_does(qualname.rpartition(".")[2], method, base, override):
            return False
        if self.sites is None:
            return True

        bound = override.bound()
        sites = self.sites.of(method)
        family = self.objects(qualname)
        # A call the base method itself cannot bind is a call of another method of that name (a linear
        # method's apply(layer, x, bias) is no call of the fused-MoE method's apply): vLLM's own calls of the
        # base bind to it.
        theirs = base.bound()
        harmful = [
            site
            for site in sites
            if (site.spread and not _takes_any_keywords(bound, site))
            or (
                not site.spread
                and call_problem(bound, site.positional, list(site.keywords)) is not None
                and call_problem(theirs, site.positional, list(site.keywords)) is None
            )
        ]
        return any(self._reached(site, family, 0) for site in harmful)

    def _reached(self, site: CallSite, family: list[str] | None, depth: int) -> bool:
        if site.on_self:
            if family is None:
                return False  # a method of the same name, not the module-level function followed here
            if site.cls is None:
                return True
            return any(site.cls in self.mro(member) and not self.replaces(member, site.function) for member in family)
        if site.cls is not None:
            return not self._caller_replaced(site.cls, site.function)
        if not site.function or depth >= _DEPTH or self.sites is None:
            return True
        callers = self.sites.of(site.function)
        if not callers:
            return self.sites.mentioned(site.function)
        return any(self._reached(caller, None, depth + 1) for caller in callers)

    def _caller_replaced(self, cls: str, function: str) -> bool:
        plugin = self.check.plugin_classes
        if any(cls in self.mro(q) and self.replaces(q, function) for q in plugin):
            return True  # the plugin subclasses the caller and overrides the calling method
        symbol = self.check.index.resolve(cls)
        if symbol.kind != "class":
            return False
        direct = {f"{b.module}.{b.name}" for b in self.check.index.bases(symbol)}
        name = cls.rpartition(".")[2]
        return any(cls not in self.mro(q) and (direct & self.mro(q) or _same_part(name, q)) for q in plugin)

    def _as_vllm_does(self, name: str, method: str, base: Signature, override: Signature) -> bool:
        """vLLM's own class of the same name (the in-tree class the plugin's replaces) deviates from `base` in
        the same way: vLLM calls it as it calls its own (an MTP model's forward takes hidden_states where the
        main model's protocol has none)."""

        problem = override_problem(base, override)
        for symbol in self._vllm_classes.get(name, ()):
            text = self.check.index.class_entry(symbol).get("m", {}).get(method)
            if text is None or text.startswith("@p"):
                continue
            if override_problem(base, Signature.parse(text)) == problem:
                return True
        return False

    @cached_property
    def _vllm_classes(self) -> dict[str, list]:
        from vllm_scaffold.vllm_facts import Symbol

        found: dict[str, list] = {}
        for module, entry in self.check.index.modules.items():
            for name in entry.get("c", ()):
                found.setdefault(name, []).append(Symbol("class", f"{module}.{name}", module, name))
        return found

    # -- objects vLLM never gets -----------------------------------------------------------------------------

    def _unbuilt_model(self, qualname: str) -> bool:
        """A model class (it implements vLLM's model interfaces) that vLLM never builds: neither it nor a
        plugin class deriving from it is registered (named in a string, an entry point or a register_model
        call)."""
        if not any(m.startswith(_MODEL_INTERFACES) for m in self.mro(qualname)):
            return False
        names = {q.rpartition(".")[2] for q in self.family(qualname)}
        return not (names & self._registered_names)

    @cached_property
    def _registered_names(self) -> set[str]:
        package = self.check.package
        found = {ep.value.rpartition(":")[2].strip() for ep in package.entry_points}
        for module in package.parsed():
            for node in module.of_type(ast.Constant, ast.Call):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and _PATH.fullmatch(node.value):
                    found.add(re.split(r"[.:]", node.value)[-1])  # "pkg.models.mine:MyModel"
                elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "register_model":
                    found |= {n.id for a in node.args for n in ast.walk(a) if isinstance(n, ast.Name)}
                    found |= {n.attr for a in node.args for n in ast.walk(a) if isinstance(n, ast.Attribute)}
        return found

    def _other_release_adapter(self, module: Module) -> bool:
        """A module named for another vLLM release (`connector_085`) that nothing in the package imports."""
        tag = _VERSION_TAG.search(module.name.rpartition(".")[2])
        if tag is None or tag.group(1) in self.check.index.version.replace(".", ""):
            return False
        package = self.check.package
        named = [ep.value.partition(":")[0].strip() for ep in package.entry_points]
        named += [ref for other in package.parsed() if other is not module for ref in references(other)]
        return not any(ref == module.name or ref.startswith(module.name + ".") for ref in named)


def _takes_any_keywords(override: Signature, site: CallSite) -> bool:
    """A call spreading `**kwargs` (or `*args`) binds to an override taking **kwargs whenever the arguments
    it names bind (`create_weights(layer=self, **params)` to `create_weights(self, layer, **kwargs)`)."""
    return override.varkw and call_problem(override, site.positional, list(site.keywords)) is None


def _same_part(vllm_name: str, plugin_qualname: str) -> bool:
    """RBLNModelRunner plays GPUModelRunner's part: the names differ only in their first word."""
    theirs = _CAMEL_WORDS.findall(vllm_name)
    mine = _CAMEL_WORDS.findall(plugin_qualname.rpartition(".")[2])
    rest = theirs[1:]
    return len(rest) >= 2 and len(mine) > len(rest) and mine[-len(rest) :] == rest
