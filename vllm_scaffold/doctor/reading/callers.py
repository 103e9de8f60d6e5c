"""Where the installed vLLM calls a method or function by name: the call sites an override can be reached from.

An override whose signature the installed vLLM cannot call only breaks if vLLM calls it. The sites are read
from the installed vLLM's source text (never imported, never parsed: a scan of 2,600 files by pattern takes
a second where parsing them takes a minute): each `x.name(...)` or `name(...)`, with the class and function
it sits in and whether it calls through `self`/`cls`/`super()` (a call that only reaches classes deriving
from the one it is written in). What one release's sources answer is kept in doctor's cache, per name.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path

from vllm_scaffold.atomic import write_atomically
from vllm_scaffold.doctor.reading.package import walk_nodes

_BLOCK = re.compile(r"^([ \t]*)(?:async[ \t]+)?(def|class)[ \t]+(\w+)", re.MULTILINE)
_SELF_RECEIVER = re.compile(r"(?:\bself|\bcls|super\(\)|type\(self\)|self\.__class__)\s*$")


@dataclass(frozen=True)
class CallSite:
    module: str  # "vllm.v1.core.sched.scheduler"
    cls: str | None  # the qualified top-level class the call is written in, None outside classes
    function: str  # the method (or top-level function) it is written in; "" at a module's top level
    on_self: bool  # self.name(), cls.name(), super().name(), type(self).name()
    line: int
    positional: int = 0  # how many positional arguments the call passes
    keywords: tuple[str, ...] = ()  # the keyword arguments it passes by name
    spread: bool = True  # passes *args or **kwargs, or could not be read: any argument may arrive

    @property
    def where(self) -> str:
        owner = f"{self.cls.rpartition('.')[2]}." if self.cls else ""
        return f"{self.module}.{owner}{self.function or '<module>'}:{self.line}"


@cache
def _texts(source: Path) -> tuple[tuple[str, str], ...]:
    """(module name, text) of every module of the vLLM package directory `source`."""
    found = []
    for path in sorted(source.rglob("*.py")):
        parts = path.relative_to(source.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found.append((name, path.read_bytes().decode("utf-8", "replace")))
    return tuple(found)


def _enclosing(blocks: list[tuple[int, int, str, str]], offset: int, indent: int) -> tuple[str | None, str]:
    """(top-level class, method or top-level function) around `offset`, from the def/class lines before it."""
    chain: list[tuple[str, str]] = []  # innermost first
    for start, width, kind, name in reversed(blocks):
        if start < offset and width < indent:
            chain.append((kind, name))
            indent = width
            if width == 0:
                break
    chain.reverse()  # outermost first
    if not chain:
        return None, ""
    if chain[0][0] == "class":
        method = next((name for kind, name in chain[1:] if kind == "def"), "")
        return chain[0][1], method
    return None, chain[0][1]


def _sites_in(module: str, text: str, name: str) -> list[CallSite]:
    blocks = [(m.start(), len(m.group(1).expandtabs()), m.group(2), m.group(3)) for m in _BLOCK.finditer(text)]
    found: list[CallSite] = []
    for match in re.finditer(rf"\b{re.escape(name)}[ \t]*\(", text):
        line_start = text.rfind("\n", 0, match.start()) + 1
        before = text[line_start : match.start()]
        stripped = before.rstrip()
        if stripped.lstrip().startswith("#") or stripped.endswith("def") or stripped.endswith("class"):
            continue  # a comment, or the definition itself
        indent = len(before) - len(before.lstrip())
        cls, function = _enclosing(blocks, line_start, indent)
        on_self = stripped.endswith(".") and bool(_SELF_RECEIVER.search(stripped[:-1]))
        qualified = f"{module}.{cls}" if cls else None
        line = text.count("\n", 0, match.start()) + 1
        found.append(CallSite(module, qualified, function, on_self, line, *_arguments(text, match.end() - 1)))
    return found


def _arguments(text: str, paren: int) -> tuple[int, tuple[str, ...], bool]:
    """(positional count, keyword names, spread) of the call whose "(" is at `paren`."""
    depth = 0
    for end in range(paren, min(len(text), paren + 4000)):
        char = text[end]
        depth += char in "([{"
        depth -= char in ")]}"
        if depth == 0:
            break
    else:
        return 0, (), True
    try:
        call = ast.parse("f" + text[paren : end + 1], mode="eval").body
    except SyntaxError:
        return 0, (), True
    assert isinstance(call, ast.Call)
    spread = any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords)
    return len(call.args), tuple(k.arg for k in call.keywords if k.arg), spread


def scan(source: Path, name: str) -> list[CallSite]:
    """Every call of `name` in the vLLM package directory `source`, its definitions excluded."""
    needle = f"{name}("
    found: list[CallSite] = []
    for module, text in _texts(source):
        if needle in text or f"{name} (" in text:
            found += _sites_in(module, text, name)
    return found


def mentioned_elsewhere(source: Path, name: str) -> bool:
    """Whether vLLM names `name` anywhere but its own `def` line and calls (passed as a callback, stored)."""
    word = re.compile(rf"\b{re.escape(name)}\b(?!\s*\()")
    for _module, text in _texts(source):
        for match in word.finditer(text) if name in text else ():
            if not text[max(0, match.start() - 4) : match.start()].endswith("def "):
                return True
    return False


@cache
def _text(source: Path, module: str) -> str:
    """The text of one module of the vLLM package directory `source` ("" when it has none), read alone: the
    questions about one call site need its module, not the package's 2,600 files."""
    path = source.parent.joinpath(*module.split("."))
    for candidate in (path / "__init__.py", path.with_name(path.name + ".py")):
        if candidate.is_file():
            return candidate.read_bytes().decode("utf-8", "replace")
    return ""


@cache
def _bare_call_lines(source: Path, module: str, name: str) -> frozenset[int]:
    return frozenset(
        node.lineno
        for nodes in _calls_by_line(source, module).values()
        for node in nodes
        if isinstance(node.func, ast.Name) and node.func.id == name
    )


@cache
def _tree(source: Path, module: str) -> ast.Module | None:
    try:
        return ast.parse(_text(source, module))
    except SyntaxError:
        return None


@cache
def _calls_by_line(source: Path, module: str) -> dict[int, list[ast.Call]]:
    """The calls of a vLLM module by the line they start on, each line's in ast.walk order: a module is walked
    once, however many of its call sites are asked about."""
    tree = _tree(source, module)
    found: dict[int, list[ast.Call]] = {}
    for node in walk_nodes(tree) if tree is not None else ():
        if node.__class__ is ast.Call:
            found.setdefault(node.lineno, []).append(node)
    return found


class CallSites:
    """The call sites of names in one installed vLLM, kept on disk by release so later runs skip the scan."""

    def __init__(self, source: Path, release: str, cache_dir: Path | None) -> None:
        self.source = source
        label = re.sub(r"[^\w.+-]", "_", release)
        self.path = cache_dir / f"calls-{label}.json" if cache_dir else None
        self.known: dict[str, list[CallSite]] = {}
        self.loose: dict[str, bool] = {}
        # What parsing a module answered, so that later runs parse no vLLM module for these questions:
        # "module:line:name" -> receiver, "module:name" -> the lines of bare calls, module -> its imports.
        self.receivers: dict[str, str | None] = {}
        self.bare_lines: dict[str, list[int]] = {}
        self.module_imports: dict[str, dict[str, str]] = {}
        self.dirty = False
        if self.path is not None and self.path.is_file():
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
                self.known = {
                    k: [CallSite(**{**s, "keywords": tuple(s["keywords"])}) for s in v]
                    for k, v in data.get("calls", {}).items()
                }
                self.loose = data.get("loose", {})
                self.receivers = data.get("receivers", {})
                self.bare_lines = data.get("bare", {})
                self.module_imports = data.get("imports", {})
            except (ValueError, TypeError):
                self.known, self.loose, self.receivers, self.bare_lines, self.module_imports = {}, {}, {}, {}, {}

    def of(self, name: str) -> list[CallSite]:
        if name not in self.known:
            self.known[name] = scan(self.source, name)
            self.dirty = True
        return self.known[name]

    def mentioned(self, name: str) -> bool:
        if name not in self.loose:
            self.loose[name] = mentioned_elsewhere(self.source, name)
            self.dirty = True
        return self.loose[name]

    def bare(self, site: CallSite, name: str) -> bool:
        """Whether the call of `name` at `site` is written as a bare name (`name(...)`, a module-level function
        called from its own module), not as a method of some object (`x.name(...)`) nor in a docstring. The
        site's module is parsed for this, once: only sites a patch would break are asked about."""
        key = f"{site.module}:{name}"
        if key not in self.bare_lines:
            self.bare_lines[key] = sorted(_bare_call_lines(self.source, site.module, name))
            self.dirty = True
        return site.line in self.bare_lines[key]

    def receiver(self, site: CallSite, name: str) -> str | None:
        """How the call of `name` at `site` is written: "" for a bare `name(...)`, the dotted receiver of
        `x.y.name(...)` ("x.y"), None when it is neither (a call on a call's result) or cannot be read."""
        key = f"{site.module}:{site.line}:{name}"
        if key not in self.receivers:
            self.receivers[key] = self._receiver(site, name)
            self.dirty = True
        return self.receivers[key]

    def _receiver(self, site: CallSite, name: str) -> str | None:
        for node in _calls_by_line(self.source, site.module).get(site.line, ()):
            if isinstance(node.func, ast.Name) and node.func.id == name:
                return ""
            if isinstance(node.func, ast.Attribute) and node.func.attr == name:
                try:
                    return ast.unparse(node.func.value)
                except (ValueError, TypeError):  # pragma: no cover - an unparsable tree
                    return None
        return None

    def imports(self, module: str) -> dict[str, str]:
        """Local name -> what the vLLM module imports under it (`import a.b as c`, `from a import b`)."""
        if module not in self.module_imports:
            self.module_imports[module] = self._imports(module)
            self.dirty = True
        return self.module_imports[module]

    def _imports(self, module: str) -> dict[str, str]:
        tree = _tree(self.source, module)
        found: dict[str, str] = {}
        for node in tree.body if tree is not None else ():
            if isinstance(node, ast.Import):
                for alias in node.names:
                    top = alias.name.split(".")[0]
                    found[alias.asname or top] = alias.name if alias.asname else top
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    found[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        return found

    def top_level_call(self, site: CallSite, name: str) -> tuple[ast.Call, ast.Module] | None:
        """The call of `name` at `site` when it is written in its module's top-level code (run once, when the
        module is imported), with the module's syntax tree; None elsewhere."""
        tree = _tree(self.source, site.module)
        if tree is None:
            return None
        for stmt in tree.body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                continue
            for node in ast.walk(stmt):
                func = getattr(node, "func", None)
                called = getattr(func, "id", None) or getattr(func, "attr", None)
                if isinstance(node, ast.Call) and node.lineno == site.line and called == name:
                    return node, tree
        return None

    def mentions(self, module: str, names: frozenset[str]) -> bool:
        """Whether the vLLM module's text names one of `names` (a class a call's receiver may be)."""
        text = _text(self.source, module)
        return any(name in text and re.search(rf"\b{re.escape(name)}\b", text) for name in names)

    def save(self) -> None:
        if self.path is None or not self.dirty:
            return
        data = {
            "calls": {k: [asdict(s) for s in v] for k, v in self.known.items()},
            "loose": self.loose,
            "receivers": self.receivers,
            "bare": self.bare_lines,
            "imports": self.module_imports,
        }
        write_atomically(self.path, json.dumps(data, sort_keys=True))
        self.dirty = False
