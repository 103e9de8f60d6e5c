"""Which statements of a parsed vLLM module run: shared by the index reader (`build.py`), the readers of
registries (`registration_points.py`) and the comparison of two versions of a module (`symbol_diff.py`)."""

from __future__ import annotations

import ast
from collections.abc import Iterator


def is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def runtime_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Top-level statements as the interpreter runs them: into if/else, try and with blocks, never into an
    `if TYPE_CHECKING:` body (its else branch does run)."""
    for stmt in body:
        if isinstance(stmt, ast.If):
            if not is_type_checking(stmt.test):
                yield from runtime_statements(stmt.body)
            yield from runtime_statements(stmt.orelse)
        elif isinstance(stmt, ast.Try):
            for block in (stmt.body, *(h.body for h in stmt.handlers), stmt.orelse, stmt.finalbody):
                yield from runtime_statements(block)
        elif isinstance(stmt, ast.With):
            yield from runtime_statements(stmt.body)
        else:
            yield stmt
