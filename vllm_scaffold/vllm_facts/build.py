"""Reads one vLLM release's Python sources into its API index, without installing or importing it.

The sources are the `vllm/` package of a wheel (read straight from the zip) or of a directory (an unpacked
wheel, a checkout, or the installed vLLM). Every module is parsed with `ast`; what a plugin can touch is kept:
the names each module defines, imports or exports lazily through a module `__getattr__`, each class's bases,
members, signatures and abstract methods, each function's signature. The in-tree registries, and the points
through which anything registers with them, and the in-tree parser names are read from the same trees
(`registries.py`, `registration_points.py`, `parsers.py`). The index is plain JSON data; `index.py` answers
questions about it.

Signatures are strings of comma-separated parameters: `name`, `name=` (has a default), `name:A|B` (the
annotation's outer type names), `*args`, `**kwargs`, and the markers `/` and `*`. A method's signature starts
with `@c ` for a classmethod, `@s ` for a staticmethod and `@p ` for a property.

Each module entry's `h` maps every function and method it defines (`name`, `Class.name`) to `source_hash` of
its definition: what `patch` components record per release, and what doctor compares to tell that the code a
patch wraps has changed (format 2).
"""

from __future__ import annotations

import ast
import copy
import hashlib
import zipfile
from collections.abc import Iterator
from pathlib import Path

from vllm_scaffold.vllm_facts.syntax import runtime_statements

# 2: registration_points (registration_points.py); 3: a source hash per function and method ("h");
# 4: per class the instance attributes its methods assign and its __slots__ that "v" does not list ("s"), and
# whether it sets attributes by computed name ("d"); 5: the in-tree tool and reasoning parser names ("parsers",
# parsers.py), so an index cached before them is built again rather than read as naming none.
FORMAT = 5

# Hex digits of a definition's source hash kept in the index: enough to tell two versions of one function
# apart, short enough to keep the index small (one per function and method).
HASH_DIGITS = 10

# Names a class body may bind that are not members a plugin reads.
_CLASS_NOISE = {"__module__", "__qualname__", "__doc__", "__slots__", "model_config"}
# Decorators that give a class a generated __init__: calls cannot be checked against a written signature.
_GENERATED_INIT = {"dataclass", "config", "define", "attrs", "frozen", "dataclass_transform"}


def read_sources(source: Path) -> Iterator[tuple[str, bool, str]]:
    """(module name, is package, text) for every `vllm/**.py` in a wheel file or a directory."""
    if source.is_file():
        with zipfile.ZipFile(source) as wheel:
            for member in sorted(wheel.namelist()):
                if member.startswith("vllm/") and member.endswith(".py"):
                    yield (
                        _module_name(member),
                        member.endswith("/__init__.py"),
                        wheel.read(member).decode("utf-8", "replace"),
                    )
        return
    root = source / "vllm" if (source / "vllm" / "__init__.py").is_file() else source
    for path in sorted(root.rglob("*.py")):
        rel = "vllm/" + path.relative_to(root).as_posix()
        # bytes as they are (no newline translation), so a tree and its wheel have the same digest
        yield _module_name(rel), path.name == "__init__.py", path.read_bytes().decode("utf-8", "replace")


def version_of(source: Path) -> str | None:
    """The release a wheel or source tree is, from its `vllm/_version.py` (setuptools-scm) when it has one."""
    for name, _package, text in read_sources(source):
        if name == "vllm._version":
            tree = ast.parse(text)
            for node in ast.walk(tree):
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
                    if any(isinstance(t, ast.Name) and t.id in {"__version__", "version"} for t in node.targets):
                        return str(node.value.value)
    return None


def _module_name(member: str) -> str:
    parts = member[: -len(".py")].split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def build(source: Path, version: str, distribution: str) -> dict:
    """The index of the vLLM sources at `source` (a wheel or a directory), as JSON-ready data."""
    from vllm_scaffold.vllm_facts.parsers import read_parsers
    from vllm_scaffold.vllm_facts.registries import read_registries

    modules: dict[str, dict] = {}
    trees: dict[str, ast.Module] = {}
    for name, is_package, text in read_sources(source):
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        trees[name] = tree
        modules[name] = ModuleReader(name, is_package).read(tree)
    return {
        "format": FORMAT,
        "vllm": version,
        "distribution": distribution,
        "modules": modules,
        **read_registries(modules, trees),
        **read_parsers(trees),
    }


def resolve_relative(module: str, is_package: bool, level: int, target: str | None) -> str:
    if not level:
        return target or ""
    parts = module.split(".")
    base = parts if is_package else parts[:-1]
    base = base[: len(base) - (level - 1)] if level > 1 else base
    return ".".join([*base, target] if target else base)


def type_names(annotation: ast.expr | None) -> str:
    """`A | B`, `Optional[A]`, `Union[A, B]`, `list[int]`: the outer type names joined by `|` ("" when none)."""
    if annotation is None:
        return ""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return ""
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return "|".join(filter(None, (type_names(annotation.left), type_names(annotation.right))))
    if isinstance(annotation, ast.Subscript):
        head = type_names(annotation.value)
        if head in {"Optional", "Union"}:
            items = annotation.slice.elts if isinstance(annotation.slice, ast.Tuple) else [annotation.slice]
            names = [type_names(item) for item in items] + (["None"] if head == "Optional" else [])
            return "|".join(filter(None, names))
        return head
    if isinstance(annotation, ast.Attribute):
        return annotation.attr
    if isinstance(annotation, ast.Name):
        return annotation.id
    if isinstance(annotation, ast.Constant) and annotation.value is None:
        return "None"
    return ""


def signature(args: ast.arguments) -> str:
    params: list[str] = []

    def one(arg: ast.arg, has_default: bool, prefix: str = "") -> str:
        ann = type_names(arg.annotation)
        return f"{prefix}{arg.arg}{':' + ann if ann else ''}{'=' if has_default else ''}"

    positional = [*args.posonlyargs, *args.args]
    first_default = len(positional) - len(args.defaults)
    for i, arg in enumerate(positional):
        params.append(one(arg, i >= first_default))
        if args.posonlyargs and i == len(args.posonlyargs) - 1:
            params.append("/")
    if args.vararg:
        params.append(one(args.vararg, False, "*"))
    elif args.kwonlyargs:
        params.append("*")
    for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        params.append(one(arg, default is not None))
    if args.kwarg:
        params.append(one(args.kwarg, False, "**"))
    return ",".join(params)


def _decorator_names(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> list[str]:
    names = []
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if isinstance(target, ast.Attribute):
            names.append(target.attr)
        elif isinstance(target, ast.Name):
            names.append(target.id)
    return names


def method_signature(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    decorators = set(_decorator_names(node))
    prefix = "@c " if "classmethod" in decorators else "@s " if "staticmethod" in decorators else ""
    if decorators & {"property", "cached_property"}:
        prefix = "@p "
    return prefix + signature(node.args)


class ModuleReader:
    """One module's entry in the index."""

    def __init__(self, name: str, is_package: bool) -> None:
        self.name = name
        self.is_package = is_package
        self.imports: dict[str, str] = {}  # local name -> qualified name it was imported as
        self.defined: set[str] = set()  # names the module's top level binds itself

    def read(self, tree: ast.Module) -> dict:
        names: set[str] = set()
        classes: dict[str, dict] = {}
        functions: dict[str, str] = {}
        star: list[str] = []
        getattr_node: ast.FunctionDef | None = None
        statements = list(runtime_statements(tree.body))
        for stmt in statements:
            if isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    if alias.asname:
                        self.imports[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".")[0]
                        self.imports[top] = top
            elif isinstance(stmt, ast.ImportFrom):
                source = resolve_relative(self.name, self.is_package, stmt.level, stmt.module)
                for alias in stmt.names:
                    if alias.name == "*":
                        star.append(source)
                    else:
                        self.imports[alias.asname or alias.name] = f"{source}.{alias.name}"
        for stmt in statements:
            if isinstance(stmt, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                self.defined.add(stmt.name)
            elif isinstance(stmt, ast.Assign):
                self.defined.update(t.id for t in stmt.targets if isinstance(t, ast.Name))
        hashes: dict[str, str] = {}
        for stmt in statements:
            if isinstance(stmt, ast.ClassDef):
                classes[stmt.name] = self.read_class(stmt)
                for member in runtime_statements(stmt.body):
                    if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        hashes[f"{stmt.name}.{member.name}"] = source_hash(member)
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                functions[stmt.name] = signature(stmt.args)
                hashes[stmt.name] = source_hash(stmt)
                if stmt.name == "__getattr__" and isinstance(stmt, ast.FunctionDef):
                    getattr_node = stmt
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for target in targets:
                    names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        for local in [*classes, *functions]:
            self.imports.pop(local, None)  # a later definition replaces an import of the same name
        entry = _compact(
            p=int(self.is_package),
            n=sorted(names - set(classes) - set(functions)),
            i=dict(sorted(self.imports.items())),
            s=star,
            c=classes,
            f=functions,
            h=hashes,
        )
        if getattr_node is not None:
            entry["l"] = self.lazy_exports(getattr_node, statements)
        return entry

    def qualify(self, expr: ast.expr) -> str | None:
        """The qualified name a base-class expression refers to; builtins keep their bare name."""
        if isinstance(expr, ast.Subscript):  # Generic[T], Base[Config]
            return self.qualify(expr.value)
        if isinstance(expr, ast.Name):
            if expr.id in self.imports:
                return self.imports[expr.id]
            return f"{self.name}.{expr.id}" if expr.id in self.defined else expr.id
        if isinstance(expr, ast.Attribute):
            base = self.qualify(expr.value)
            return f"{base}.{expr.attr}" if base else None
        return None

    def read_class(self, node: ast.ClassDef) -> dict:
        bases = [q for q in (self.qualify(b) for b in node.bases) if q]
        methods: dict[str, str] = {}
        attrs: set[str] = set()
        assigned: set[str] = set()  # `self.X = ...` in any method, and __slots__
        dynamic = False
        abstract: list[str] = []
        for stmt in runtime_statements(node.body):
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                methods[stmt.name] = method_signature(stmt)
                if "abstractmethod" in _decorator_names(stmt):
                    abstract.append(stmt.name)
                if stmt.name == "__init__":
                    attrs.update(self_attributes(stmt))
                assigned.update(self_attributes(stmt))
                dynamic = dynamic or sets_computed_attributes(stmt)
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                attrs.update(t.id for t in targets if isinstance(t, ast.Name))
                if any(isinstance(t, ast.Name) and t.id == "__slots__" for t in targets):
                    assigned.update(_strings(stmt.value))
            elif isinstance(stmt, ast.ClassDef):
                attrs.add(stmt.name)
        generated = bool(set(_decorator_names(node)) & _GENERATED_INIT) or any(
            k.arg == "metaclass" for k in node.keywords
        )
        attrs -= _CLASS_NOISE | set(methods)
        assigned -= attrs | set(methods)
        entry = _compact(
            b=bases, m=methods, a=abstract, v=sorted(attrs), g=int(generated), s=sorted(assigned), d=int(dynamic)
        )
        registered = _registered_name(node)
        if registered is not None:
            entry["r"] = registered
        return entry

    def lazy_exports(self, getattr_node: ast.FunctionDef, statements: list[ast.stmt]) -> dict[str, str]:
        """Names a module `__getattr__` answers: `name == "X"` tests, keys of the module-level dicts it tests
        `name in`, and `__all__` (value: the "module:attr" target when the dict says where, else "")."""
        dicts: dict[str, ast.Dict] = {}
        all_names: list[str] = []
        for stmt in statements:
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for target in targets:
                    if isinstance(target, ast.Name) and isinstance(stmt.value, ast.Dict):
                        dicts[target.id] = stmt.value
                    if isinstance(target, ast.Name) and target.id == "__all__":
                        all_names += _strings(stmt.value)
        lazy: dict[str, str] = {name: "" for name in all_names}
        parameter = getattr_node.args.args[0].arg if getattr_node.args.args else "name"
        for node in ast.walk(getattr_node):
            if not (isinstance(node, ast.Compare) and isinstance(node.left, ast.Name) and node.left.id == parameter):
                continue
            for op, right in zip(node.ops, node.comparators, strict=True):
                if isinstance(op, ast.Eq):
                    lazy.update((value, "") for value in _strings(right))
                elif isinstance(op, ast.In):
                    if isinstance(right, ast.Name) and right.id in dicts:
                        for key, value in zip(dicts[right.id].keys, dicts[right.id].values, strict=True):
                            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                                lazy[key.value] = self.lazy_target(key.value, value)
                    else:
                        lazy.update((value, "") for value in _strings(right))
        return dict(sorted(lazy.items()))

    def lazy_target(self, name: str, value: ast.expr) -> str:
        if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
            return ""
        module, _, attr = value.value.partition(":")
        if module.startswith("."):
            level = len(module) - len(module.lstrip("."))
            module = resolve_relative(self.name, self.is_package, level, module.lstrip(".") or None)
        if not module.startswith("vllm"):
            return ""
        return f"{module}.{attr or name}"


def self_attributes(method: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """`self.X = ...` (also augmented, annotated, unpacked, or `setattr(self, "X", ...)`) in a method; in
    __init__ these are instance attributes every instance has."""
    found: set[str] = set()
    for node in ast.walk(method):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            if isinstance(node.value, ast.Name) and node.value.id == "self":
                found.add(node.attr)
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "setattr" and len(node.args) >= 2:
            owner, name = node.args[0], node.args[1]
            if isinstance(owner, ast.Name) and owner.id == "self" and isinstance(name, ast.Constant):
                found.add(str(name.value))
    return found


def sets_computed_attributes(method: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether a method sets attributes whose names the source does not spell: `setattr(self, name, ...)`,
    `self.__dict__` written, `vars(self)`."""
    for node in ast.walk(method):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "setattr" and len(node.args) >= 2:
            if not isinstance(node.args[1], ast.Constant):
                return True
        elif isinstance(node, ast.Attribute) and node.attr == "__dict__":
            return True
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "vars":
            return True
    return False


def source_hash(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """A short hash of a definition's code, decorators included: its syntax tree written back as source
    (`ast.unparse`), without docstrings, so formatting, comments and docstrings do not change it."""
    tree = copy.deepcopy(node)
    for inner in ast.walk(tree):
        body = getattr(inner, "body", None)
        if (
            isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            inner.body = body[1:] or [ast.Pass()]
    return hashlib.sha256(ast.unparse(tree).encode("utf-8")).hexdigest()[:HASH_DIGITS]


def _registered_name(node: ast.ClassDef) -> str | None:
    """The name in `@Something.register("name")`, the way CustomOp and PluggableLayer classes are registered."""
    for decorator in node.decorator_list:
        if (
            isinstance(decorator, ast.Call)
            and isinstance(decorator.func, ast.Attribute)
            and decorator.func.attr == "register"
            and decorator.args
            and isinstance(decorator.args[0], ast.Constant)
            and isinstance(decorator.args[0].value, str)
        ):
            return decorator.args[0].value
    return None


def _compact(**fields: object) -> dict:
    """The fields that hold something: an index entry leaves out what is empty, false or zero."""
    return {key: value for key, value in fields.items() if value}


def _strings(expr: ast.expr | None) -> list[str]:
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return [expr.value]
    if isinstance(expr, (ast.List, ast.Tuple, ast.Set)):
        return [e.value for e in expr.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return []
