"""Whether vLLM can call a plugin's override at all: an override vLLM never reaches cannot break on its signature.

Hardware plugins subclass vLLM's classes and then call them from their own code: a proposer or a metadata
builder that only the plugin's model runner calls, a KV cache manager only the plugin's scheduler uses, a
model class only the plugin's model loader builds. An override-signature finding on such a method is noise.
vLLM is taken to call an override when one of its call sites of the method (read from the installed vLLM's
source, `callers.py`) passes arguments the override rejects and can reach the plugin's object:

- `self.m(...)` in a vLLM class K reaches the plugin's class only when the plugin's class (or one deriving
  from it) derives from K and does not override the method the call is written in (for
  vllm-override-keyword-renamed and in a `--vllm` run, an override handing over with `super()` to one that
  does not counts too); in a `--vllm` run some call of that method must also reach it in turn (vLLM's
  GPUModelRunner._prepare_inputs, called only from the execute_model the plugin's runner replaces, does not);
- `x.m(...)` in a vLLM class K is not reached when the plugin replaces K's method that makes the call (a
  plugin class derives from K and overrides it, without `super()`), or provides its own class in K's part
  (it derives from one of K's bases, or it is named like K but for its first word: RBLNModelRunner for
  GPUModelRunner), since vLLM then runs the plugin's class instead of K;
- `m(...)` in a module-level function is reached when that function is: its own callers are followed;
  a function nothing calls or names is dead. `self.m(...)` there calls a local named self, and is followed
  the same way.

A call the override rejects that is not reached only because of the plugin's own code (its runner, override
or patch replaces the calling method) does not prove the override safe: a `--vllm` run's
vllm-override-signature reports it as a warning naming that link (the run against the installed vLLM does not
report it, as it never did). Without the release's sources every site is assumed reachable. Two
more cases need no call sites: a model class vLLM never builds (vLLM builds models from its model registry,
and the plugin registers neither the class nor one deriving from it), and a module that is an adapter for
another vLLM release (named with its version, `*_085`) which nothing in the package imports.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, replace
from functools import cached_property

from vllm_scaffold.doctor.reading.callers import CallSite, CallSites
from vllm_scaffold.doctor.reading.package import Module
from vllm_scaffold.doctor.reading.source import called_name, references
from vllm_scaffold.doctor.releases.classes import PluginClasses
from vllm_scaffold.doctor.releases.replacements import patch_replacements
from vllm_scaffold.doctor.releases.signatures import call_problem, override_problem
from vllm_scaffold.vllm_facts import Signature, Symbol

# Where vLLM's model interfaces live: a class implementing them is a model, built only from the registry.
# Classes vLLM builds only when registered, each with its registration function (facts `cite-register-model`,
# `model-loaders-built-by-load-format`): a plugin class deriving from one is built only when it, or a plugin class
# deriving from it, is registered.
_BUILT_WHEN_REGISTERED = (
    ("vllm.model_executor.models.interfaces", "register_model"),
    ("vllm.model_executor.model_loader.base_loader.BaseModelLoader", "register_model_loader"),
)
_CAMEL_WORDS = re.compile(r"[A-Z]+(?=[A-Z][a-z]|\d|_|$)|[A-Z]?[a-z]+|\d+")
_VERSION_TAG = re.compile(r"(?:^|_|vllm)v?(0\d{2,3})$")
_PATH = re.compile(r"[A-Za-z_][\w.]*[.:][A-Za-z_]\w*")
_DEPTH = 3  # how many module-level functions deep callers are followed
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class Calls:
    """What vLLM's call sites say of an override whose signature differs from vLLM's method: whether a call it
    rejects reaches it, and otherwise the calls it rejects that only the plugin's own code keeps from it (its
    runner, its override or its patch replaces the calling method)."""

    reached: bool
    bypassed: tuple[CallSite, ...] = ()


class OverrideCallers:
    """Answers, for one plugin package checked against one vLLM, whether vLLM can call an override."""

    def __init__(
        self, classes: PluginClasses, sites: CallSites | None, lineage: bool = True, bypass_is_unproven: bool = False
    ) -> None:
        self.classes = classes
        self.index = classes.index
        self.sites = sites
        # whether a method the plugin's lineage replaces (through its super() chain) bypasses vLLM's, or only
        # one the class itself defines (the installed run's reading, which its corpus judgements were made on)
        self.lineage = lineage
        # whether `calls` names the calls only the plugin's own code keeps from an override (else: not called),
        # following a self-call's method to its own callers
        self.bypass_is_unproven = bypass_is_unproven

    # -- the plugin's classes ------------------------------------------------------------------------------

    def objects(self, qualname: str) -> list[str]:
        """The classes whose objects can carry the plugin class's methods: the classes of its family no plugin
        class derives from (a class the plugin derives others from is their base, or a mixin)."""
        children = self.classes.children
        return [q for q in self.classes.family(qualname) if q not in children] or [qualname]

    def replaces(self, qualname: str, method: str) -> bool:
        """The plugin class has its own `method` that does not hand over to vLLM's with super()."""
        function = self.classes.functions(qualname).get(method)
        return function is not None and not _hands_over(function, method)

    # -- the question --------------------------------------------------------------------------------------

    def calls(self, qualname: str, method: str, override: Signature, base: Signature) -> Calls:
        """Whether vLLM can call `method` of the plugin class `qualname` with arguments `override` rejects
        (`base` is the signature of the vLLM method it overrides), and which of those calls the plugin's own
        code bypasses when none reaches it."""
        if self._unbuilt_model(qualname) or self.other_release_adapter(self.classes.classes[qualname][0]):
            return Calls(False)
        if self._as_vllm_does(qualname.rpartition(".")[2], method, base, override):
            return Calls(False)
        if self.sites is None:
            return Calls(True)

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
        if any(self._reached(site, family, 0) for site in harmful):
            return Calls(True)
        if not self.bypass_is_unproven:
            return Calls(False)
        return Calls(False, tuple(s for s in harmful if self._reached(s, family, 0, bypassing=False)))

    def reaches(self, site: CallSite, qualname: str) -> bool:
        """Whether vLLM's call at `site` can run on an object of the plugin class `qualname`: its caller is
        neither replaced by the plugin nor a method the plugin's classes never inherit, and vLLM builds the
        class (a model class is built only when registered)."""
        return not self._unbuilt_model(qualname) and self._reached(site, self.objects(qualname), 0)

    def _reached(self, site: CallSite, family: list[str] | None, depth: int, bypassing: bool = True) -> bool:
        """Whether the call at `site` runs on an object of `family` (None: the module-level function followed
        here); with `bypassing` False, as if the plugin replaced none of vLLM's code (its own runner, its
        overrides and patches of the calling methods)."""
        if site.on_self and site.cls is None and family is not None:
            # `self.m(...)` in a module-level function calls a local named self (a custom op's body fetching its
            # layer): it reaches the override only if something calls that function, which is followed.
            site = replace(site, on_self=False)
        if site.on_self:
            if family is None:
                return False  # a method of the same name, not the module-level function followed here
            if site.cls is None:
                return True
            mro = self.classes.vllm_mro
            members = [
                member
                for member in family
                if site.cls in mro(member) and not (bypassing and self._replaced(member, site.function))
            ]
            if not members:
                return False
            return not bypassing or self._method_reached(site, members, depth)
        if site.cls is not None:
            return not (bypassing and self._caller_replaced(site.cls, site.function))
        if bypassing and site.function and f"{site.module}.{site.function}" in self._patched_away:
            return False  # the plugin replaced the calling function with its own
        if not site.function and depth and self._on_own_classes(site):
            return False  # import-time code handing the function vLLM's own classes, never the plugin's
        if not site.function or depth >= _DEPTH or self.sites is None:
            return True
        named = self.sites.of(site.function)
        # a method of the same name on some object is another function; where no call is written as one of
        # the function (it is imported under another name), those calls are followed as before
        callers = [c for c in named if self._calls_function(c, site)] or named
        if not callers:
            return self.sites.mentioned(site.function)
        following = self.__dict__.setdefault("_following", {})
        following.update({id(caller): site.function for caller in callers})
        return any(self._reached(caller, None, depth + 1, bypassing) for caller in callers)

    def _method_reached(self, site: CallSite, members: list[str], depth: int) -> bool:
        """Whether the vLLM method `site` is written in runs on `members`: some call of it does that the plugin
        does not replace (vLLM's GPU Worker calling the runner's profile_cudagraph_memory, where the plugin's
        own worker replaces vLLM's). A method no call names (one run by its name, over RPC) is taken as run."""
        if not self.bypass_is_unproven or depth >= _DEPTH or not site.function or self.sites is None:
            return True
        mro = self.classes.vllm_mro
        callers = [
            caller
            for caller in self.sites.of(site.function)
            if not caller.on_self or (caller.cls is not None and any(caller.cls in mro(m) for m in members))
        ]
        return not callers or any(self._reached(caller, members, depth + 1) for caller in callers)

    def _replaced(self, qualname: str, method: str) -> bool:
        return self.replaced_in_lineage(qualname, method) if self.lineage else self.replaces(qualname, method)

    def replaced_in_lineage(self, qualname: str, method: str) -> bool:
        """Whether an object of the plugin class runs a plugin method `method` whose `super()` chain through the
        plugin's classes ends in one that does not hand over to vLLM's (a runner whose own `_dummy_run`
        replaces vLLM's, and a subclass's that calls it with super())."""
        for _module, node, _outside in self.classes.walk_lineage(qualname):
            function = next((s for s in node.body if isinstance(s, _FUNCTIONS) and s.name == method), None)
            if function is not None and not _hands_over(function, method):
                return True
        return False

    @cached_property
    def _patched_away(self) -> frozenset[str]:
        """The vLLM functions and methods ("module.Class.method", "module.function", by defining module) the
        plugin replaces with a function of its own that never reaches the original: vLLM's calls written in
        them never run. A replacement is `Cls.method = fn`, `setattr(Cls, "method", fn)`, or a function
        decorated with a call naming the target as a `"vllm.x.y.Cls.method"` string (a patch registry); one
        whose body names the method again (`original_method(self, ...)`, `Cls._orig_method`) may call it."""
        index = self.index
        found: set[str] = set()
        for module in self.classes.package.parsed():
            for target, function in patch_replacements(module, self.classes.tables[module.name]):
                owner, _, attr = target.rpartition(".")
                if _names(function, attr):
                    continue
                symbol = index.resolve(owner)
                if symbol.kind == "class":
                    found.add(f"{symbol.module}.{symbol.name}.{attr}")
                elif symbol.kind == "module":
                    found.add(f"{symbol.qualname}.{attr}")
        return frozenset(found)

    def _calls_function(self, caller: CallSite, function: CallSite) -> bool:
        """Whether the call at `caller` calls the module-level function `function` sits in: a bare call in
        its own module or where it is imported, or one through the module (`attn_utils.f(...)`); a method of
        the same name on some object (`self.runner.f()`) is another function."""
        assert self.sites is not None
        if caller.on_self:
            return False
        receiver = self.sites.receiver(caller, function.function)
        if receiver is None:
            return caller.spread  # unreadable: keep it only when the scan could not read the call either
        if receiver == "":
            return True
        imported = self.sites.imports(caller.module)
        head, _, rest = receiver.partition(".")
        target = imported.get(head)
        if target is None:
            return False
        return f"{target}.{rest}".rstrip(".") == function.module

    def _on_own_classes(self, site: CallSite) -> bool:
        """A call in a vLLM module's top-level code whose arguments are all constants or vLLM classes (defined
        there or imported from vLLM): `Backend = make_backend(TritonBackend, _FABackend, name="...")`."""
        assert self.sites is not None
        found = self.sites.top_level_call(site, self._followed_name(site))
        if found is None:
            return False
        call, tree = found
        defined = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
        imported = {
            alias.asname or alias.name: f"{n.module}.{alias.name}"
            for n in tree.body
            if isinstance(n, ast.ImportFrom) and n.module and n.module.split(".")[0] == "vllm"
            for alias in n.names
        }
        for argument in [*call.args, *(k.value for k in call.keywords)]:
            if isinstance(argument, ast.Name) and argument.id == "__name__" or _literal(argument):
                continue
            if not isinstance(argument, ast.Name):
                return False
            if argument.id in defined:
                continue
            if argument.id not in imported or self.index.resolve(imported[argument.id]).kind != "class":
                return False
        return True

    def _followed_name(self, site: CallSite) -> str:
        return self.__dict__.get("_following", {}).get(id(site), "")

    def _caller_replaced(self, cls: str, function: str) -> bool:
        if f"{cls}.{function}" in self._patched_away:
            return True  # the plugin replaced the calling method with its own
        plugin, mro = self.classes.classes, self.classes.vllm_mro
        if any(cls in mro(q) and self.replaces(q, function) for q in plugin):
            return True  # the plugin subclasses the caller and overrides the calling method
        symbol = self.index.resolve(cls)
        if symbol.kind != "class":
            return False
        direct = {f"{b.module}.{b.name}" for b in self.index.bases(symbol)}
        name = cls.rpartition(".")[2]
        return any(cls not in mro(q) and (direct & mro(q) or _same_part(name, q)) for q in plugin)

    def _as_vllm_does(self, name: str, method: str, base: Signature, override: Signature) -> bool:
        """vLLM's own class of the same name (the in-tree class the plugin's replaces) deviates from `base` in
        the same way: vLLM calls it as it calls its own (an MTP model's forward takes hidden_states where the
        main model's protocol has none)."""

        problem = override_problem(base, override)
        for symbol in self.vllm_classes.get(name, ()):
            text = self.index.methods(symbol).get(method)
            if text is None or text.startswith("@p"):
                continue
            if override_problem(base, Signature.parse(text)) == problem:
                return True
        return False

    @cached_property
    def vllm_classes(self) -> dict[str, list[Symbol]]:
        """Every class of the release by its name."""
        found: dict[str, list[Symbol]] = {}
        for symbol in self.index.classes():
            found.setdefault(symbol.name, []).append(symbol)
        return found

    # -- objects vLLM never gets -----------------------------------------------------------------------------

    def _unbuilt_model(self, qualname: str) -> bool:
        """A class vLLM builds only when registered (a model: it implements vLLM's model interfaces; a model
        loader) that vLLM never builds: neither it nor a plugin class deriving from it is registered (named in
        a string, an entry point, or a call or decorator of the registration function)."""
        ancestry = self.classes.vllm_mro(qualname)
        for prefix, registration in _BUILT_WHEN_REGISTERED:
            if any(m.startswith(prefix) for m in ancestry):
                names = {q.rpartition(".")[2] for q in self.classes.family(qualname)}
                return not (names & self._registered_names(registration))
        return False

    def _registered_names(self, registration: str) -> set[str]:
        memo: dict[str, set[str]] = self.__dict__.setdefault("_registered_memo", {})
        if registration not in memo:
            memo[registration] = self._paths_named | self._registered_by(registration)
        return memo[registration]

    @cached_property
    def _paths_named(self) -> set[str]:
        """The last names of the package's entry points and of the dotted paths its code writes."""
        package = self.classes.package
        found = {ep.value.rpartition(":")[2].strip() for ep in package.entry_points}
        for module in package.parsed():
            for node in module.of_type(ast.Constant):
                if isinstance(node.value, str) and _PATH.fullmatch(node.value):
                    found.add(re.split(r"[.:]", node.value)[-1])  # "pkg.models.mine:MyModel"
        return found

    def _registered_by(self, registration: str) -> set[str]:
        """The names of the classes the package passes to `registration` (`ModelRegistry.register_model("A",
        Cls)`, `register_model_loader("fmt")(Cls)`) or decorates with it (`@register_model_loader("fmt")`)."""
        found: set[str] = set()
        for module in self.classes.package.parsed():
            for node in module.of_type(ast.Call, ast.ClassDef):
                if isinstance(node, ast.ClassDef):
                    if any(isinstance(d, ast.Call) and called_name(d) == registration for d in node.decorator_list):
                        found.add(node.name)
                elif registration in (
                    called_name(node),
                    called_name(node.func) if isinstance(node.func, ast.Call) else None,
                ):
                    for argument in node.args:
                        found |= {n.id for n in ast.walk(argument) if isinstance(n, ast.Name)}
                        found |= {n.attr for n in ast.walk(argument) if isinstance(n, ast.Attribute)}
        return found

    def other_release_adapter(self, module: Module) -> bool:
        """A module named for another vLLM release (`connector_085`) that nothing in the package imports."""
        memo = self.__dict__.setdefault("_adapter_memo", {})
        if module.name not in memo:
            memo[module.name] = self._other_release_adapter(module)
        return memo[module.name]

    def _other_release_adapter(self, module: Module) -> bool:
        tag = _VERSION_TAG.search(module.name.rpartition(".")[2])
        if tag is None or tag.group(1) in self.index.version.replace(".", ""):
            return False
        package = self.classes.package
        named = [ep.value.partition(":")[0].strip() for ep in package.entry_points]
        named += [ref for other in package.parsed() if other is not module for ref in references(other)]
        return not any(ref == module.name or ref.startswith(module.name + ".") for ref in named)


def _literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _names(function: ast.AST, name: str) -> bool:
    """Whether `name` occurs in the function's body: as an attribute, in a name, or in a string."""
    body = function.body if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef) else [function]
    for node in (n for stmt in body for n in ast.walk(stmt)):
        if isinstance(node, ast.Attribute) and name in node.attr:
            return True
        if isinstance(node, ast.Name) and name in node.id:
            return True
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and name in node.value:
            return True
    return False


def _hands_over(function: ast.FunctionDef | ast.AsyncFunctionDef, method: str) -> bool:
    """Whether the method calls `super().method`."""
    return any(
        isinstance(node, ast.Attribute)
        and node.attr == method
        and isinstance(node.value, ast.Call)
        and getattr(node.value.func, "id", None) == "super"
        for node in ast.walk(function)
    )


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
