"""Parsing a plugin's module with the grammar of the Python the plugin requires, not the one doctor runs on.

`ast` only knows the grammar of the running interpreter: on Python 3.11 a plugin that requires Python 3.12 and
writes `type X = ...`, `def f[T]()`, `class C[T]` or a PEP 701 f-string (`f"{d["k"]}"`) would read as a syntax
error its users never meet. Such a module is parsed by libcst (a dependency already, for `migrate`), whose
parser takes the Python version as a setting, and lowered to what this interpreter's `ast` reads, line numbers
kept (vllm_scaffold.project.syntax_lowering). A module that does not parse on a Python
the plugin allows stays a syntax error.
"""

from __future__ import annotations

import ast
import platform
import sys

from packaging.specifiers import InvalidSpecifier, SpecifierSet

_NEWEST_MINOR = 15  # the newest Python 3 grammar libcst 1.9 knows


def parse_module(source: str, filename: str, requires_python: str | None) -> tuple[ast.Module | None, str | None]:
    """The module's tree, or None and why it does not parse on the oldest Python `requires_python` allows
    (doctor's own Python when it allows that)."""
    try:
        return ast.parse(source, filename=filename), None
    except SyntaxError as error:
        problem = f"line {error.lineno}: {error.msg}"
    grammar = newer_grammar(requires_python)
    if grammar is None:
        return None, problem
    from vllm_scaffold.project.syntax_lowering import lowered  # libcst: 0.7 s to import, only when needed

    lowered_source = lowered(source, grammar)
    if lowered_source is None:
        return None, problem  # no Python the plugin allows reads it either
    try:
        return ast.parse(lowered_source, filename=filename), None
    except SyntaxError as error:
        return None, f"line {error.lineno}: Python {grammar} syntax that doctor cannot read on Python {_running()}"


def newer_grammar(requires_python: str | None) -> str | None:
    """The oldest Python newer than doctor's that `requires_python` allows, when it excludes doctor's own: the
    grammar the plugin's modules are written for. None when doctor's Python is allowed (or nothing is said)."""
    if not requires_python:
        return None
    try:
        allowed = SpecifierSet(requires_python)
    except InvalidSpecifier:
        return None
    if allowed.contains(platform.python_version(), prereleases=True):
        return None
    for minor in range(sys.version_info.minor + 1, _NEWEST_MINOR + 1):
        if any(allowed.contains(f"3.{minor}.{patch}", prereleases=True) for patch in (0, 99)):
            return f"3.{minor}"
    return None


def _running() -> str:
    return ".".join(str(part) for part in sys.version_info[:2])
