"""Python 3.12+ syntax written as Python 3.11's `ast` reads it, on the same lines, for doctor's checks.

A type alias becomes an assignment, type parameters are dropped (no check reads them), and an f-string that
nests its own quotes (PEP 701) is written between triple quotes. Imported only for a module that needs it:
libcst takes longer to import than most plugins take to check.
"""

from __future__ import annotations

import libcst as cst

_NO_SPACE = cst.SimpleWhitespace("")


def lowered(source: str, grammar: str) -> str | None:
    """`source` parsed with Python `grammar`'s syntax and lowered; None when it does not parse on that Python
    (or this libcst does not know that Python)."""
    try:
        config = cst.PartialParserConfig(python_version=grammar)
    except ValueError:
        return None
    try:
        tree = cst.parse_module(source, config=config)
    except cst.ParserSyntaxError:
        return None
    return tree.visit(_Lowering()).code


class _Lowering(cst.CSTTransformer):
    """Newer syntax written as Python 3.11 reads it, on the same lines."""

    def __init__(self) -> None:
        super().__init__()
        self._fstring_depth = 0

    def leave_TypeAlias(  # noqa: N802 (libcst's name)
        self, original_node: cst.TypeAlias, updated_node: cst.TypeAlias
    ) -> cst.Assign:
        return cst.Assign(
            targets=[cst.AssignTarget(updated_node.name)], value=updated_node.value, semicolon=updated_node.semicolon
        )

    def leave_FunctionDef(  # noqa: N802 (libcst's name)
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        return updated_node.with_changes(type_parameters=None, whitespace_after_type_parameters=_NO_SPACE)

    def leave_ClassDef(  # noqa: N802 (libcst's name)
        self, original_node: cst.ClassDef, updated_node: cst.ClassDef
    ) -> cst.ClassDef:
        return updated_node.with_changes(type_parameters=None, whitespace_after_type_parameters=_NO_SPACE)

    def visit_FormattedString(self, node: cst.FormattedString) -> None:  # noqa: N802 (libcst's name)
        self._fstring_depth += 1

    def leave_FormattedString(  # noqa: N802 (libcst's name)
        self, original_node: cst.FormattedString, updated_node: cst.FormattedString
    ) -> cst.FormattedString:
        self._fstring_depth -= 1
        quote = updated_node.end
        if self._fstring_depth or len(quote) != 1:
            return updated_node
        nested = any(
            quote in cst.Module([]).code_for_node(part.expression)
            for part in updated_node.parts
            if isinstance(part, cst.FormattedStringExpression)
        )
        if not nested:
            return updated_node
        return updated_node.with_changes(start=updated_node.start + quote * 2, end=quote * 3)
