"""Small inline sources read the way doctor reads a plugin's modules, for the reading layer's unit tests."""

from __future__ import annotations

import ast
from pathlib import Path
from textwrap import dedent

from vllm_scaffold.doctor.reading.package import Module


def module_of(text: str, name: str = "pkg.mod", *, is_package: bool = False) -> Module:
    """A module of `text` (dedented) named `name`, parsed as doctor parses a plugin's file."""
    rel = name.replace(".", "/") + ("/__init__.py" if is_package else ".py")
    return Module(name, Path(rel), rel, is_package, ast.parse(dedent(text)))


def first(module: Module, kind: type[ast.AST], where: str) -> ast.AST:
    """The first node of `kind` whose source text starts with `where`."""
    assert module.tree is not None
    source = ast.unparse(module.tree)
    for node in module.of_type(kind):
        if ast.unparse(node).startswith(where):
            return node
    raise AssertionError(f"no {kind.__name__} starting with {where!r} in:\n{source}")
