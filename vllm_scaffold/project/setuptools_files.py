"""setuptools declarations: `setup.py` read as an AST (never executed) and `setup.cfg` read as INI.

Only what can be known without running the build is read: literal arguments of `setup(...)`, names bound to
literals at the module's top level (`ENTRY_POINTS = {...}` then `setup(entry_points=ENTRY_POINTS)`),
`**kwargs` from such a dict, `find_packages(...)` and `find_namespace_packages(...)` calls, paths joined from
literals and `__file__` (`os.path.join`, `pathlib.Path`, `/`, `dirname`, `.parent`). An argument that
is computed (a function call, a file read) is reported in `unread` with its name, never guessed.
"""

from __future__ import annotations

import ast
import configparser
import posixpath
from dataclasses import dataclass, field
from pathlib import Path

from vllm_scaffold.project.model import EntryPoint, Requirement


@dataclass(frozen=True)
class Find:
    """packages=find_packages(where=..., include=..., exclude=...) or its namespace form."""

    where: str = "."
    include: tuple[str, ...] = ("*",)
    exclude: tuple[str, ...] = ()
    namespaces: bool = False


@dataclass
class SetuptoolsDeclaration:
    name: str | None = None
    version: str | None = None
    entry_points: list[EntryPoint] = field(default_factory=list)
    requirements: list[Requirement] = field(default_factory=list)
    packages: list[str] | Find | None = None
    package_dir: dict[str, str] = field(default_factory=dict)
    py_modules: list[str] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)


class _Unresolved(Exception):
    pass


_FIND_CALLS = {"find_packages": False, "find_namespace_packages": True}
# Paths built from literals (package_dir={"": os.path.join("src", "python")}, Path(__file__).parent / "src"):
# the calls that join their arguments, and those that leave a relative path as it is for reading.
_PATH_JOINS = frozenset({"join", "Path", "PurePath", "PurePosixPath"})
_PATH_SAME = frozenset({"abspath", "realpath", "normpath", "fspath", "str"})


class _Evaluator:
    """Evaluates literal expressions, resolving names through the module's simple top-level assignments."""

    def __init__(self, tree: ast.Module) -> None:
        self.bindings: dict[str, ast.expr] = {}
        for stmt in tree.body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                self.bindings[stmt.targets[0].id] = stmt.value
            elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
                self.bindings[stmt.target.id] = stmt.value

    def value(self, node: ast.expr, depth: int = 0) -> object:
        if depth > 20:
            raise _Unresolved
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            return [self.value(element, depth + 1) for element in node.elts]
        if isinstance(node, ast.Dict):
            result: dict = {}
            for key, value in zip(node.keys, node.values, strict=True):
                if key is None:
                    result.update(self._mapping(value, depth))
                else:
                    result[self.value(key, depth + 1)] = self.value(value, depth + 1)
            return result
        if isinstance(node, ast.Name) and node.id in self.bindings:
            return self.value(self.bindings[node.id], depth + 1)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self.value(node.left, depth + 1) + self.value(node.right, depth + 1)  # type: ignore[operator]
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):  # pathlib's `Path("src") / "pkg"`
            return posixpath.join(self._path(node.left, depth), self._path(node.right, depth))
        if isinstance(node, ast.Name) and node.id == "__file__":
            return "setup.py"  # paths are relative to the project root, where setup.py is
        if isinstance(node, ast.Attribute) and node.attr == "parent":
            return posixpath.dirname(self._path(node.value, depth))
        if isinstance(node, ast.Call):
            return self._call(node, depth)
        raise _Unresolved

    def _path(self, node: ast.expr, depth: int) -> str:
        value = self.value(node, depth + 1)
        if not isinstance(value, str):
            raise _Unresolved
        return value

    def _mapping(self, node: ast.expr, depth: int) -> dict:
        value = self.value(node, depth + 1)
        if not isinstance(value, dict):
            raise _Unresolved
        return value

    def _call(self, node: ast.Call, depth: int) -> object:
        func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
        keywords = {k.arg: self.value(k.value, depth + 1) for k in node.keywords if k.arg}
        if func == "dict" and not node.args:
            return keywords
        if func in _PATH_JOINS and node.args and not node.keywords:
            return posixpath.join(*(self._path(arg, depth) for arg in node.args))
        if func in _PATH_SAME and len(node.args) == 1:
            return self._path(node.args[0], depth)
        if func == "dirname" and len(node.args) == 1:
            return posixpath.dirname(self._path(node.args[0], depth))
        if func == "resolve" and isinstance(node.func, ast.Attribute) and not node.args:
            return self._path(node.func.value, depth)
        if func in _FIND_CALLS:
            where = self.value(node.args[0], depth + 1) if node.args else keywords.get("where", ".")
            include = keywords.get("include", ["*"])
            return Find(
                str(where),
                tuple(map(str, include)),  # type: ignore[arg-type]
                tuple(map(str, keywords.get("exclude", []))),  # type: ignore[arg-type]
                _FIND_CALLS[func],
            )
        raise _Unresolved


def _setup_call(tree: ast.Module) -> ast.Call | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            if func == "setup":
                return node
    return None


def read_setup_py(path: Path) -> SetuptoolsDeclaration:
    declared = SetuptoolsDeclaration()
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"), filename=str(path))
    except SyntaxError as error:
        declared.unread.append(f"setup.py does not parse (line {error.lineno}: {error.msg})")
        return declared
    call = _setup_call(tree)
    if call is None:
        declared.unread.append("setup.py calls no setup()")
        return declared
    evaluator = _Evaluator(tree)
    arguments: dict[str, ast.expr | object] = {}
    for keyword in call.keywords:
        if keyword.arg is not None:
            arguments[keyword.arg] = keyword.value
            continue
        try:
            arguments.update(evaluator._mapping(keyword.value, 0))  # noqa: SLF001 - **kwargs of a literal dict
        except _Unresolved:
            declared.unread.append("setup.py: setup(**...) is computed when the build runs")
    for key, node in arguments.items():
        try:
            value = evaluator.value(node) if isinstance(node, ast.expr) else node
        except _Unresolved:
            if key in {"entry_points", "packages", "package_dir", "install_requires", "name", "py_modules"}:
                declared.unread.append(f"setup.py: {key}= is computed when the build runs")
            continue
        _apply(declared, key, value, "setup.py")
    return declared


def _apply(declared: SetuptoolsDeclaration, key: str, value: object, source: str) -> None:
    if key == "name" and isinstance(value, str):
        declared.name = value
    elif key == "version" and isinstance(value, str):
        declared.version = value
    elif key == "entry_points":
        declared.entry_points += entry_points_from(value, source)
    elif key == "install_requires":
        lines = value.splitlines() if isinstance(value, str) else value if isinstance(value, list) else []
        where = f"{source} install_requires"
        declared.requirements += [Requirement(str(r).strip(), where) for r in lines if str(r).strip()]
    elif key == "extras_require" and isinstance(value, dict):
        for extra, lines in value.items():
            items = lines.splitlines() if isinstance(lines, str) else lines
            where = f"{source} extras_require {extra}"
            declared.requirements += [Requirement(str(r).strip(), where) for r in items if str(r).strip()]
    elif key == "packages" and isinstance(value, (list, Find)):
        declared.packages = value if isinstance(value, Find) else [str(p) for p in value]
    elif key == "package_dir" and isinstance(value, dict):
        declared.package_dir = {str(k): str(v) for k, v in value.items()}
    elif key == "py_modules" and isinstance(value, list):
        declared.py_modules = [str(m) for m in value]


def entry_points_from(value: object, source: str) -> list[EntryPoint]:
    """`entry_points=` as setuptools accepts it: {group: [lines] | "lines"} or one INI string."""
    if isinstance(value, str):
        parser = configparser.ConfigParser(delimiters=("=",), interpolation=None)
        parser.optionxform = str  # type: ignore[assignment,method-assign]
        try:
            parser.read_string(value)
        except configparser.Error:
            return []
        value = {group: [f"{k} = {v}" for k, v in parser[group].items()] for group in parser.sections()}
    if not isinstance(value, dict):
        return []
    found = []
    for group, lines in value.items():
        items = lines.splitlines() if isinstance(lines, str) else lines if isinstance(lines, list) else []
        for line in items:
            name, equals, target = str(line).partition("=")
            if equals and name.strip():
                found.append(EntryPoint(str(group).strip(), name.strip(), target.strip(), source))
    return found


def read_setup_cfg(path: Path) -> SetuptoolsDeclaration:
    declared = SetuptoolsDeclaration()
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    try:
        parser.read(path, encoding="utf-8")
    except configparser.Error as error:
        declared.unread.append(f"setup.cfg does not parse ({error.__class__.__name__})")
        return declared
    metadata = parser["metadata"] if parser.has_section("metadata") else {}
    declared.name = metadata.get("name") or None
    options = parser["options"] if parser.has_section("options") else {}
    if parser.has_section("options.entry_points"):
        section = parser["options.entry_points"]
        declared.entry_points = entry_points_from({group: section[group] for group in section}, "setup.cfg")
    _apply(declared, "install_requires", options.get("install_requires", ""), "setup.cfg")
    for raw in (options.get("package_dir", "") or "").splitlines():
        key, equals, value = raw.partition("=")
        if equals:
            declared.package_dir[key.strip()] = value.strip()
    packages = (options.get("packages", "") or "").strip()
    if packages in {"find:", "find_namespace:"}:
        find = parser["options.packages.find"] if parser.has_section("options.packages.find") else {}
        declared.packages = Find(
            find.get("where", ".").strip() or ".",
            tuple(find.get("include", "*").split()) or ("*",),
            tuple(find.get("exclude", "").split()),
            packages == "find_namespace:",
        )
    elif packages:
        declared.packages = packages.replace(",", " ").split()
    declared.py_modules = (options.get("py_modules", "") or "").split()
    return declared
