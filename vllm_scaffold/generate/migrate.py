"""`migrate`: a plugin's code rewritten for the names vLLM moved or renamed between two releases.

The moves come from the two releases' indexes (`vllm_facts`), never from a hand-kept list:

- a name imported from a module of the release the package targets that is gone from that module in the
  target release, while another module of the target release defines a name of the same name with the same
  definition (a function's signature, a class's bases, members and signatures): the import is rewritten to
  that module (the closest one by module path when several do);
- a keyword argument of a call into a vLLM function or constructor whose parameter the target release
  renamed: the same position and kind, the old name gone, the new one not in the older signature.

The rewriting is libcst's (a concrete syntax tree: comments and formatting stay as they are), not text
substitution. What is left (an import the indexes cannot place, an override whose signature changed, a
feature the release removed) is found by running `doctor --vllm TARGET` on the rewritten package, and listed
with doctor's codes.
"""

from __future__ import annotations

import ast
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import libcst as cst

from vllm_scaffold import vllm_facts
from vllm_scaffold.errors import ScaffoldError
from vllm_scaffold.generate.changeset import Changeset
from vllm_scaffold.generate.component import vllm_range
from vllm_scaffold.project import Project
from vllm_scaffold.vllm_facts import ReleaseIndex, Signature, Symbol
from vllm_scaffold.vllm_facts.store import version_key

SKIPPED_DIRS = {"build", "dist", "node_modules", "wheels"}


@dataclass(frozen=True)
class Move:
    old: str  # the qualified name in the older release
    new: str  # where the target release defines it


@dataclass
class Rewrite:
    path: str
    what: str
    why: str

    def line(self) -> str:
        return f"rewrite {self.path}: {self.what} ({self.why})"


@dataclass
class Migration:
    changes: Changeset  # the rewritten modules: your code, written as rewritten (not formatted)
    source: str  # the release the package's code was written for
    target: str
    why: str  # how `source` was chosen
    rewrites: list[Rewrite] = field(default_factory=list)
    left: list[str] = field(default_factory=list)  # doctor's findings on the rewritten package, one line each
    errors: int = 0  # how many of `left` are errors

    @property
    def root(self) -> Path:
        return self.changes.root

    def diff(self) -> list[str]:
        return self.changes.diff()

    def apply(self) -> None:
        self.changes.apply()


def source_release(project: Project, target: str, imported: list[str]) -> tuple[str, str]:
    """The release the package's code was written for, and why: of the verified releases in its declared range
    older than `target`, the newest that has every vLLM name the code imports (`imported`), else the one that
    has the most of them (the newest of those). The code is the evidence: a package declaring `>=0.31.0`
    whose code imports a name only 0.31.0 has was written for 0.31.0, whatever newer releases it accepts."""
    if project.manifest.get("vllm") is None:
        raise ScaffoldError(
            f"{project.root / 'pyproject.toml'} declares no [tool.vllm-scaffold] vllm range",
            f'declare the vLLM releases the package targets there, e.g. vllm = "{vllm_facts.example_range()}"',
        )
    declared = vllm_range(project)
    older = [v for v in vllm_facts.checked_in(declared) if version_key(v) < version_key(target)]
    if not older:
        raise ScaffoldError(
            f"the package's range {declared} holds no verified release older than vLLM {target}",
            "migrate moves a package to a newer release than the ones it declares",
        )
    if len(older) == 1 or not imported:
        return older[-1], f"the newest verified release of its range {declared} older than {target}"
    found = {
        version: [name for name in imported if vllm_facts.release(version).resolve(name).exists] for version in older
    }
    source = max(reversed(older), key=lambda version: len(found[version]))  # the newest of the best
    if len(found[source]) == len(imported):
        newer = [version for version in older if version_key(version) > version_key(source)]
        if not newer:
            return (
                source,
                f"the newest release of its range {declared} older than {target}, with every vLLM name it imports",
            )
        gone = next(name for name in imported if name not in found[newer[0]])
        return source, (
            f"the newest release of its range {declared} with every vLLM name the code imports: {gone} is gone "
            f"from {newer[0]}"
        )
    return source, (
        f"the release of its range {declared} with the most of the vLLM names the code imports "
        f"({len(found[source])} of {len(imported)})"
    )


def imported_names(root: Path) -> list[str]:
    """The vLLM names (and modules) the project's Python files import, each once, in order."""
    names: dict[str, None] = {}
    for path in python_files(root):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "vllm":
                names.update((f"{node.module}.{alias.name}", None) for alias in node.names if alias.name != "*")
            elif isinstance(node, ast.Import):
                names.update((alias.name, None) for alias in node.names if alias.name.split(".")[0] == "vllm")
    return list(names)


def _definition(index: ReleaseIndex, symbol: Symbol) -> Any:
    entry = index.modules[symbol.module]
    return entry["c"][symbol.name] if symbol.kind == "class" else entry["f"][symbol.name]


def _definitions_by_name(index: ReleaseIndex) -> dict[str, list[tuple[str, str, Any]]]:
    found: dict[str, list[tuple[str, str, Any]]] = {}
    for module, entry in index.modules.items():
        for kind, key in (("class", "c"), ("function", "f")):
            for name, definition in entry.get(key, {}).items():
                found.setdefault(name, []).append((module, kind, definition))
    return found


def _common_prefix(a: str, b: str) -> int:
    count = 0
    for x, y in zip(a.split("."), b.split("."), strict=False):
        if x != y:
            break
        count += 1
    return count


class Releases:
    """The two indexes, and the moves and renamed keywords between them, asked name by name."""

    def __init__(self, source: ReleaseIndex, target: ReleaseIndex) -> None:
        self.source, self.target = source, target
        self._by_name: dict[str, list[tuple[str, str, Any]]] | None = None

    def move(self, qualname: str) -> Move | None:
        """Where the target release defines `qualname` of the source release, when it left its module."""
        if self.target.resolve(qualname).exists:
            return None
        symbol = self.source.resolve(qualname)
        if symbol.kind not in {"class", "function"}:
            return None
        if self._by_name is None:
            self._by_name = _definitions_by_name(self.target)
        definition = _definition(self.source, symbol)
        candidates = [
            module
            for module, kind, other in self._by_name.get(symbol.name, [])
            if kind == symbol.kind and other == definition
        ]
        if not candidates:
            return None
        ranked = sorted(candidates, key=lambda module: -_common_prefix(module, symbol.module))
        if len(ranked) > 1 and _common_prefix(ranked[0], symbol.module) == _common_prefix(ranked[1], symbol.module):
            return None  # two places equally likely: not ours to choose
        return Move(qualname, f"{ranked[0]}.{symbol.name}")

    def renamed_keywords(self, qualname: str) -> dict[str, str]:
        """Keyword -> new keyword for the callable `qualname` (a function or a class's constructor)."""
        before, after = self._signature(self.source, qualname), self._signature(self.target, qualname)
        if before is None or after is None or len(before.params) != len(after.params):
            return {}
        old_names = {p.name for p in before.params}
        new_names = {p.name for p in after.params}
        renamed = {}
        for old, new in zip(before.params, after.params, strict=True):
            if old.name == new.name or old.kind != new.kind or old.kind in {"posonly", "varargs", "varkw"}:
                continue
            if old.name not in new_names and new.name not in old_names and old.has_default == new.has_default:
                renamed[old.name] = new.name
        return renamed

    @staticmethod
    def _signature(index: ReleaseIndex, qualname: str) -> Signature | None:
        symbol = index.resolve(qualname)
        return index.signature(symbol) if symbol.kind in {"function", "class"} else None


def _dotted(node: cst.BaseExpression | None) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        head = _dotted(node.value)
        return f"{head}.{node.attr.value}" if head else ""
    return ""


def _module_node(dotted: str) -> cst.Attribute | cst.Name:
    node = cst.parse_expression(dotted)
    assert isinstance(node, cst.Attribute | cst.Name)
    return node


def _comment_after(alias: cst.ImportAlias) -> cst.Comment | None:
    """The comment after an alias's comma in a parenthesised import (`name,  # why`), if any."""
    if isinstance(alias.comma, cst.Comma) and isinstance(alias.comma.whitespace_after, cst.ParenthesizedWhitespace):
        return alias.comma.whitespace_after.first_line.comment
    return None


class _Rewriter(cst.CSTTransformer):
    """Rewrites one module: imports of moved names, and keywords of calls into renamed parameters."""

    def __init__(self, releases: Releases, path: str, target: str) -> None:
        self.releases, self.path, self.target = releases, path, target
        self.rewrites: list[Rewrite] = []
        self.local: dict[str, str] = {}  # local name -> the vLLM qualname it is bound to (after moves)

    def leave_SimpleStatementLine(  # noqa: N802 (libcst's name)
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine | cst.FlattenSentinel[cst.SimpleStatementLine]:
        if len(updated_node.body) != 1 or not isinstance(updated_node.body[0], cst.ImportFrom):
            return updated_node
        statement = updated_node.body[0]
        module = _dotted(statement.module)
        if statement.relative or not module.startswith("vllm") or isinstance(statement.names, cst.ImportStar):
            return updated_node
        kept: list[cst.ImportAlias] = []
        moved: dict[str, list[cst.ImportAlias]] = {}
        comments: dict[str, cst.Comment] = {}
        for alias in statement.names:
            name = _dotted(alias.name)
            local = alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else name
            move = self.releases.move(f"{module}.{name}")
            if move is None:
                kept.append(alias)
                self.local[local] = f"{module}.{name}"
                continue
            new_module = move.new.rpartition(".")[0]
            moved.setdefault(new_module, []).append(alias.with_changes(comma=cst.MaybeSentinel.DEFAULT))
            comment = _comment_after(alias)
            if comment is not None:
                comments.setdefault(new_module, comment)  # the alias's comment goes along with it
            self.local[local] = move.new
            self.rewrites.append(
                Rewrite(
                    self.path,
                    f"from {module} import {name} -> from {new_module} import {name}",
                    f"vLLM {self.target} has no {name} in {module}; {new_module} defines it, with the same "
                    f"definition as {self.releases.source.version}'s",
                )
            )
        if not moved:
            return updated_node
        lines: list[cst.SimpleStatementLine] = []
        if kept:
            if statement.names[-1].comma == cst.MaybeSentinel.DEFAULT or not statement.lpar:
                kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            lines.append(updated_node.with_changes(body=[statement.with_changes(names=kept)]))
        for index, (new_module, aliases) in enumerate(moved.items()):
            trailing = updated_node.trailing_whitespace
            if new_module in comments:
                trailing = cst.TrailingWhitespace(cst.SimpleWhitespace("  "), comments[new_module])
            line = cst.SimpleStatementLine(
                body=[cst.ImportFrom(module=_module_node(new_module), names=aliases)], trailing_whitespace=trailing
            )
            if not kept and index == 0:
                line = line.with_changes(leading_lines=updated_node.leading_lines)
            lines.append(line)
        return cst.FlattenSentinel(lines)

    def visit_Import(self, node: cst.Import) -> None:  # noqa: N802
        """`import vllm.x.y [as z]` binds a name calls can go through (their keywords are checked too)."""
        for alias in node.names:
            dotted = _dotted(alias.name)
            if not dotted.startswith("vllm"):
                continue
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.local[alias.asname.name.value] = dotted
            else:
                self.local[dotted.split(".")[0]] = dotted.split(".")[0]

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:  # noqa: N802
        dotted = _dotted(updated_node.func)
        head, _, rest = dotted.partition(".")
        if head not in self.local:
            return updated_node
        qualname = f"{self.local[head]}.{rest}" if rest else self.local[head]
        renamed = self.releases.renamed_keywords(qualname)
        if not renamed:
            return updated_node
        arguments = []
        for argument in updated_node.args:
            old = argument.keyword.value if argument.keyword is not None else None
            if old in renamed:
                argument = argument.with_changes(keyword=cst.Name(renamed[old]))
                self.rewrites.append(
                    Rewrite(
                        self.path,
                        f"{dotted}({old}=...) -> {dotted}({renamed[old]}=...)",
                        f"vLLM {self.target} renamed the parameter: {qualname} takes {renamed[old]} where "
                        f"{self.releases.source.version} took {old}",
                    )
                )
            arguments.append(argument)
        return updated_node.with_changes(args=arguments)


def python_files(root: Path) -> list[Path]:
    """The project's own Python files: none under dot-folders (.venv, .vllm-scaffold...) or build output."""
    return [
        path
        for path in sorted(root.rglob("*.py"))
        if not any(part.startswith(".") or part in SKIPPED_DIRS for part in path.relative_to(root).parts[:-1])
    ]


def plan_migration(root: Path, target: str) -> Migration:
    """Every rewrite `migrate --vllm TARGET` makes in the project at `root`, and what doctor finds left."""
    root = root.absolute()
    if not (root / "pyproject.toml").is_file():
        raise ScaffoldError(
            f"no pyproject.toml in {root}", "run 'vllm-scaffold migrate' in a plugin package, or pass --project DIR"
        )
    project = Project.load(root)
    from packaging.version import InvalidVersion, Version

    try:
        Version(target)
    except InvalidVersion:
        raise ScaffoldError(
            f"--vllm {target} is not a vLLM version", f"pass a release such as {vllm_facts.default_version()}"
        ) from None
    source, why = source_release(project, target, imported_names(root))
    releases = Releases(vllm_facts.release(source), vllm_facts.release(target))
    migration = Migration(Changeset(root, project.package), source, target, why)
    for path in python_files(root):
        relpath = path.relative_to(root).as_posix()
        before = path.read_text(encoding="utf-8")
        try:
            module = cst.parse_module(before)
        except cst.ParserSyntaxError:
            continue  # doctor reports the file (syntax-error) below
        rewriter = _Rewriter(releases, relpath, target)
        after = module.visit(rewriter).code
        if after != before:
            migration.changes.edit(relpath, after, checked=True)
            migration.rewrites += rewriter.rewrites
    _left_for_doctor(migration)
    return migration


def _left_for_doctor(migration: Migration) -> None:
    """doctor --vllm TARGET on a scratch copy of the rewritten package: what migrate could not rewrite."""
    from vllm_scaffold.doctor.runner import diagnose_releases

    with tempfile.TemporaryDirectory(prefix="vllm-scaffold-migrate-") as scratch:
        copy = Path(scratch) / migration.root.name
        shutil.copytree(
            migration.root, copy, ignore=shutil.ignore_patterns(".git", ".venv", "__pycache__", *SKIPPED_DIRS)
        )
        for relpath, (_before, after) in migration.changes.edited.items():
            (copy / relpath).write_bytes(after.encode("utf-8") if isinstance(after, str) else after)
        (report,) = diagnose_releases(copy, [migration.target])
    for finding in report.findings:
        if finding.severity.value == "info":
            continue
        migration.left.append(f"left    {finding.where}: {finding.code} ({finding.severity.value}) {finding.message}")
        migration.left.append(f"        fix: {finding.fix}")
        migration.errors += finding.severity.value == "error"
