"""Questions about one vLLM release, answered from its index: does this name exist, what is it, what does a
class inherit, which methods are abstract, what signature does a function have.

Names are followed the way Python resolves them: a module's own definitions, then its imports (re-exports),
its lazy `__getattr__` exports, its star imports, then its submodules. A class's members come from its
bases in order; a base vLLM does not define (torch.nn.Module, Enum, pydantic) makes the answer "unknown"
rather than "missing", so nothing is reported that the index cannot see.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

# Bases that add no member a plugin would look up on a vLLM class.
_EMPTY_BASES = {"object", "abc.ABC", "ABC", "typing.Generic", "Generic", "typing.Protocol", "Protocol"}


@dataclass(frozen=True)
class Symbol:
    """What a qualified name is in a release: `kind` is module, class, function, value, member (of a
    class), unknown (exists or may exist, not indexable) or missing."""

    kind: str
    qualname: str
    module: str = ""  # the defining module (module, class, function)
    name: str = ""  # the class or function name in it

    @property
    def exists(self) -> bool:
        return self.kind != "missing"


MISSING = "missing"


@dataclass(frozen=True)
class Param:
    name: str
    kind: str  # "positional" (positional or keyword), "posonly", "kwonly", "varargs", "varkw"
    has_default: bool
    types: tuple[str, ...]  # outer type names of the annotation, empty when unannotated


@dataclass(frozen=True)
class Signature:
    params: tuple[Param, ...]
    decorator: str = ""  # "c" classmethod, "s" staticmethod, "p" property, "" plain

    @classmethod
    def parse(cls, text: str) -> Signature:
        decorator = ""
        if text.startswith("@"):
            decorator, _, text = text[1:].partition(" ")
        params: list[Param] = []
        kind = "positional"
        for raw in filter(None, text.split(",")):
            if raw == "/":
                params = [Param(p.name, "posonly", p.has_default, p.types) for p in params]
                continue
            if raw == "*":
                kind = "kwonly"
                continue
            this = kind
            if raw.startswith("**"):
                this, raw = "varkw", raw[2:]
            elif raw.startswith("*"):
                this, raw, kind = "varargs", raw[1:], "kwonly"
            has_default = raw.endswith("=")
            name, _, types = raw.rstrip("=").partition(":")
            params.append(Param(name, this, has_default, tuple(filter(None, types.split("|")))))
        return cls(tuple(params), decorator)

    def bound(self) -> Signature:
        """The signature as called on an instance or class: without self/cls (not for staticmethods)."""
        if self.decorator == "s" or not self.params or self.params[0].kind not in {"positional", "posonly"}:
            return self
        return Signature(self.params[1:], self.decorator)

    @property
    def positional(self) -> list[Param]:
        return [p for p in self.params if p.kind in {"positional", "posonly"}]

    @property
    def varargs(self) -> bool:
        return any(p.kind == "varargs" for p in self.params)

    @property
    def varkw(self) -> bool:
        return any(p.kind == "varkw" for p in self.params)

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name and p.kind not in {"varargs", "varkw"}), None)

    def text(self) -> str:
        parts = []
        for p in self.params:
            prefix = {"varargs": "*", "varkw": "**"}.get(p.kind, "")
            parts.append(f"{prefix}{p.name}{'=…' if p.has_default else ''}")
        return f"({', '.join(parts)})"


class ReleaseIndex:
    """The index of one vLLM release (the data `build.build` writes)."""

    def __init__(self, data: dict) -> None:
        self.data = data
        self.version: str = data["vllm"]
        self.distribution: str = data.get("distribution", "vllm")
        self.modules: dict[str, dict] = data["modules"]

    def __repr__(self) -> str:
        return f"ReleaseIndex({self.distribution} {self.version})"

    # -- names ---------------------------------------------------------------------------------------------

    def has_module(self, module: str) -> bool:
        return module in self.modules or module in self._packages

    @cached_property
    def _packages(self) -> frozenset[str]:
        """Every dotted prefix of a module name, for namespace packages (a directory without __init__.py):
        looked up by name, where scanning the release's thousands of modules for each question took seconds."""
        return frozenset(m.rsplit(".", cut)[0] for m in self.modules for cut in range(1, m.count(".") + 1))

    def resolve(self, qualname: str, _seen: frozenset[str] = frozenset()) -> Symbol:
        """What `qualname` ("vllm.a.b.Name.attr") is in this release. Memoised: a large plugin asks about
        the same few thousand names tens of thousands of times."""
        if not _seen:
            found = self._resolved.get(qualname)
            if found is None:
                found = self._resolved[qualname] = self._resolve(qualname, _seen)
            return found
        return self._resolve(qualname, _seen)

    @cached_property
    def _resolved(self) -> dict[str, Symbol]:
        return {}

    def _resolve(self, qualname: str, _seen: frozenset[str]) -> Symbol:
        if qualname in _seen:
            return Symbol("unknown", qualname)
        seen = _seen | {qualname}
        parts = qualname.split(".")
        for cut in range(len(parts), 0, -1):
            module = ".".join(parts[:cut])
            if module in self.modules:
                return self._in_module(module, parts[cut:], qualname, seen)
        if self.has_module(parts[0]):
            return Symbol("module", qualname, module=qualname) if len(parts) == 1 else Symbol(MISSING, qualname)
        return Symbol(MISSING if parts[0] == "vllm" else "unknown", qualname)

    def _in_module(self, module: str, rest: list[str], qualname: str, seen: frozenset[str]) -> Symbol:
        if not rest:
            return Symbol("module", qualname, module=module)
        entry = self.modules[module]
        name, more = rest[0], rest[1:]
        if name in entry.get("c", {}):
            symbol = Symbol("class", f"{module}.{name}", module=module, name=name)
            return self.member(symbol, more, qualname) if more else symbol
        if name in entry.get("f", {}):
            symbol = Symbol("function", f"{module}.{name}", module=module, name=name)
            return symbol if not more else Symbol("unknown", qualname)
        if name in entry.get("i", {}):
            target = entry["i"][name]
            if target.split(".")[0] != "vllm":
                return Symbol("unknown", qualname)
            return self.resolve(".".join([target, *more]), seen)
        if name in entry.get("l", {}):
            target = entry["l"][name]
            return self.resolve(".".join([target, *more]), seen) if target else Symbol("unknown", qualname)
        if name in entry.get("n", ()):
            return Symbol("value", qualname) if not more else Symbol("unknown", qualname)
        if f"{module}.{name}" in self.modules:
            return self._in_module(f"{module}.{name}", more, qualname, seen)
        for star in entry.get("s", ()):
            found = self.resolve(".".join([star, *rest]), seen)
            if found.exists:
                return found
        if "__getattr__" in entry.get("f", {}) and "l" not in entry:
            return Symbol("unknown", qualname)  # a __getattr__ whose names the index cannot list
        if self.has_module(f"{module}.{name}"):
            return Symbol("module", qualname, module=f"{module}.{name}")
        return Symbol(MISSING, qualname)

    # -- what the index records, by name (the data's one-letter keys are read only here) --------------------

    def imports_in(self, module: str) -> dict[str, str]:
        """Name -> the qualified name a module imports under it (its re-exports)."""
        return self.modules.get(module, {}).get("i", {})

    def lazy_exports(self, module: str) -> dict[str, str] | None:
        """Name -> what a module's `__getattr__` serves under it; None when the module has no such table."""
        return self.modules.get(module, {}).get("l")

    def star_imports(self, module: str) -> list[str]:
        return self.modules.get(module, {}).get("s", [])

    def module_names(self, module: str) -> frozenset[str] | None:
        """Every name `from module import NAME` can take; None when the module resolves names the index cannot
        list (a star import, or a `__getattr__` without a table); empty for a module the index lacks."""
        entry = self.modules.get(module)
        if entry is None:
            return frozenset()
        if entry.get("s") or ("__getattr__" in entry.get("f", {}) and "l" not in entry):
            return None
        return frozenset(name for key in ("c", "f", "n", "i", "l") for name in entry.get(key, ()))

    def classes(self) -> list[Symbol]:
        """Every class the release defines, module by module."""
        return [
            Symbol("class", f"{module}.{name}", module, name)
            for module, entry in self.modules.items()
            for name in entry.get("c", {})
        ]

    def function_text(self, symbol: Symbol) -> str:
        """A module-level function's signature, as the index writes it."""
        return self.modules[symbol.module]["f"][symbol.name]

    def source_hash(self, symbol: Symbol) -> str:
        """The hash of a function's or member's source ("" when not recorded)."""
        return self.modules[symbol.module].get("h", {}).get(symbol.name, "")

    # -- classes -------------------------------------------------------------------------------------------

    def class_entry(self, symbol: Symbol) -> dict:
        return self.modules[symbol.module]["c"][symbol.name]

    def methods(self, symbol: Symbol) -> dict[str, str]:
        """Name -> signature of every method and property the class itself defines."""
        return self.class_entry(symbol).get("m", {})

    def declared_bases(self, symbol: Symbol) -> list[str]:
        """The class's bases as written, qualified: vLLM's and those outside it (`enum.Enum`, `abc.ABC`)."""
        return self.class_entry(symbol).get("b", [])

    def registered_name(self, symbol: Symbol) -> str:
        """The name a custom op's class registers under ("" when none)."""
        return self.class_entry(symbol).get("r", "")

    def bases(self, symbol: Symbol) -> list[Symbol]:
        """The class's direct bases as symbols (`unknown` for a base outside vLLM)."""
        found = []
        for base in self.declared_bases(symbol):
            if base in _EMPTY_BASES:
                continue
            resolved = self.resolve(base) if base.startswith("vllm.") else Symbol("unknown", base)
            found.append(resolved if resolved.kind == "class" else Symbol("unknown", base))
        return found

    def mro(self, symbol: Symbol) -> tuple[list[Symbol], bool]:
        """(the class and its vLLM ancestors in lookup order, whether every ancestor is known). Memoised: a
        large plugin asks for the same few hundred vLLM classes' ancestry hundreds of thousands of times."""
        if symbol not in self._mro_memo:
            self._mro_memo[symbol] = self._mro(symbol)
        order, complete = self._mro_memo[symbol]
        return list(order), complete

    @cached_property
    def _mro_memo(self) -> dict[Symbol, tuple[list[Symbol], bool]]:
        return {}

    def _mro(self, symbol: Symbol) -> tuple[list[Symbol], bool]:
        order: list[Symbol] = []
        complete = True
        pending = [symbol]
        while pending:
            current = pending.pop(0)
            if current.kind != "class":
                complete = False
                continue
            if current in order:
                continue
            order.append(current)
            pending.extend(self.bases(current))
        return order, complete

    def find_member(self, symbol: Symbol, name: str) -> tuple[Symbol | None, str | None]:
        """(the class that defines `name`, its signature or None for an attribute), or (None, None)."""
        for cls in self.mro(symbol)[0]:
            entry = self.class_entry(cls)
            if name in entry.get("m", {}):
                return cls, entry["m"][name]
            if name in entry.get("v", ()):
                return cls, None
        return None, None

    def instance_attribute(self, symbol: Symbol, name: str) -> bool | None:
        """Whether an instance of the class can have attribute `name` in this release: True when the class or
        an ancestor defines it (a method or property, a class attribute or field, `self.name = ...` in any of
        its methods, `__slots__`); None when the index cannot tell (an
        ancestor outside vLLM, a `__getattr__`, a generated class, attributes set by computed name, a Protocol);
        False
        when nothing defines it."""
        order, complete = self.mro(symbol)
        for cls in order:
            entry = self.class_entry(cls)
            if name in entry.get("m", {}) or name in entry.get("v", ()) or name in entry.get("s", ()):
                return True
        for cls in order:
            entry = self.class_entry(cls)
            if entry.get("g") or entry.get("d") or {"__getattr__", "__getattribute__"} & set(entry.get("m", {})):
                return None
            if {"typing.Protocol", "Protocol"} & set(entry.get("b", ())):
                return None  # an interface: what its implementations have comes from their other bases
        return False if complete else None

    def member(self, symbol: Symbol, rest: list[str], qualname: str) -> Symbol:
        owner, _signature = self.find_member(symbol, rest[0])
        if owner is None:
            complete = self.mro(symbol)[1] and not self.class_entry(symbol).get("g")
            return Symbol(MISSING if complete else "unknown", qualname)
        kind = "member" if len(rest) == 1 else "unknown"
        return Symbol(kind, qualname, module=owner.module, name=f"{owner.name}.{rest[0]}")

    def abstract_methods(self, symbol: Symbol) -> set[str]:
        """Methods left abstract on this class: declared abstract on it or a base, implemented by none before.

        Empty where `@abstractmethod` is not enforced: no class of a lineage the index knows completely derives
        from `abc.ABC` or names a metaclass (vLLM's `ReasoningParser`, the fact `reasoning-parser-not-abc`)."""
        order, complete = self.mro(symbol)
        entries = [self.class_entry(cls) for cls in order]
        if complete and not any("abc.ABC" in (e.get("b") or ()) or e.get("g") for e in entries):
            return set()
        left: set[str] = set()
        for cls in reversed(order):
            entry = self.class_entry(cls)
            left -= set(entry.get("m", {})) - set(entry.get("a", ()))
            left |= set(entry.get("a", ()))
        return left

    def signature(self, symbol: Symbol) -> Signature | None:
        """A function's signature, a class's constructor (None when generated or not written in vLLM), or a
        member method's (`symbol.kind == "member"`)."""
        if symbol.kind == "function":
            return Signature.parse(self.function_text(symbol))
        if symbol.kind == "class":
            if self.class_entry(symbol).get("g"):
                return None
            owner, text = self.find_member(symbol, "__init__")
            if owner is None or text is None:
                return None
            return Signature.parse(text).bound()
        if symbol.kind == "member":
            class_name, _, member = symbol.name.rpartition(".")
            owner = Symbol("class", f"{symbol.module}.{class_name}", symbol.module, class_name)
            text = self.methods(owner).get(member)
            return Signature.parse(text) if text is not None else None
        return None

    # -- registries ----------------------------------------------------------------------------------------

    @property
    def entry_point_groups(self) -> dict[str, dict]:
        return self.data.get("entry_point_groups", {})

    def registry(self, name: str) -> list[str]:
        return self.data.get("registries", {}).get(name, [])

    @property
    def custom_ops(self) -> dict[str, str]:
        return self.data.get("custom_ops", {})

    @property
    def environment_variables(self) -> frozenset[str]:
        """The variables `vllm.envs` defines (the names its module `__getattr__` serves): the `VLLM_*` ones are
        the only `VLLM_*` variables vLLM's environment check accepts."""
        return frozenset(self.modules.get("vllm.envs", {}).get("l", {}))

    @property
    def registration_points(self) -> dict[str, dict]:
        """Every function and method through which code registers with one of the release's registries
        (`registration_points.py`): symbol -> kind, the containers it fills, the member and points it uses."""
        return self.data.get("registration_points", {})

    # -- parsers -------------------------------------------------------------------------------------------

    @property
    def tool_parsers(self) -> frozenset[str] | None:
        """The tool-parser names the release registers itself (`parsers.TOOL_PARSER_TABLE`); None when its
        sources have no such table."""
        return self._parsers("tool")

    @property
    def reasoning_parsers(self) -> frozenset[str] | None:
        """The reasoning-parser names the release registers itself (`parsers.REASONING_PARSER_TABLE`); None
        when its sources have no such table."""
        return self._parsers("reasoning")

    def _parsers(self, kind: str) -> frozenset[str] | None:
        names = self.data.get("parsers", {}).get(kind)
        return frozenset(names) if names is not None else None
