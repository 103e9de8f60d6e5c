"""Re-wrapping the prose of rendered Python (comments and docstrings) that a long name pushed past the line length.

The formatter lays out code but leaves comments and docstrings as they are, and generated prose names the
package, its classes and its environment variables: `vllm_plugin.py` of a 40-character package says
"entry point `that_name` once in each process", and the line no longer fits. `wrap_prose` re-fills only the
lines that are too long, at word boundaries, keeping their indentation, so short names render exactly as the
template reads and long ones still pass `ruff check` (E501). Code and string literals are never touched.
"""

from __future__ import annotations

import ast
import io
import textwrap
import tokenize

_PRAGMAS = ("# noqa", "# type:", "# pyright:", "# fmt:", "# pragma:", "# ruff:")


def wrap_prose(source: str, width: int) -> str:
    """`source` with every too-long comment and docstring line re-filled to at most `width` characters."""
    lines = source.splitlines(keepends=True)
    if all(len(line.rstrip("\r\n")) <= width for line in lines):
        return source
    replacements: dict[int, list[str]] = {}  # 0-based line -> the lines that replace it
    for first, last, indent in _docstrings(source):
        for index in range(first, last + 1):
            line = lines[index].rstrip("\r\n")
            if len(line) > width:
                continuation = indent + ("  " if line.lstrip().startswith("- ") else "")
                if index != first:
                    continuation = line[: len(line) - len(line.lstrip())] + continuation[len(indent) :]
                replacements[index] = _fill(line, width, continuation)
    for index, column, comment in _comments(source):
        line = lines[index].rstrip("\r\n")
        if len(line) <= width or comment.startswith(_PRAGMAS) or index in replacements:
            continue
        code = line[:column].rstrip()
        indent = line[: len(line) - len(line.lstrip())]
        text = comment.lstrip("#").strip()
        wrapped = _fill(f"{indent}# {text}", width, f"{indent}# ")
        replacements[index] = wrapped + ([code] if code else [])
    if not replacements:
        return source
    out: list[str] = []
    for index, line in enumerate(lines):
        if index in replacements:
            ending = line[len(line.rstrip("\r\n")) :] or "\n"
            out += [piece + ending for piece in replacements[index]]
        else:
            out.append(line)
    return "".join(out)


def _fill(line: str, width: int, continuation: str) -> list[str]:
    """`line` broken at spaces so each piece fits `width` where a word allows; later pieces start `continuation`."""
    lead = line[: len(line) - len(line.lstrip())]
    return fill_words(line.strip(), width, initial_indent=lead, subsequent_indent=continuation) or [line]


def fill_words(text: str, width: int, *, initial_indent: str = "", subsequent_indent: str = "") -> list[str]:
    """`text` broken between words, never inside one, into lines of at most `width` where the words allow."""
    return textwrap.wrap(
        text,
        width=width,
        initial_indent=initial_indent,
        subsequent_indent=subsequent_indent,
        break_long_words=False,
        break_on_hyphens=False,
    )


def _docstrings(source: str) -> list[tuple[int, int, str]]:
    """(first line, last line, body indentation) of each module, class and function docstring, 0-based."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        first = node.body[0] if node.body else None
        if (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
            and first.end_lineno is not None
        ):
            found.append((first.lineno - 1, first.end_lineno - 1, " " * first.col_offset))
    return found


def _comments(source: str) -> list[tuple[int, int, str]]:
    """(line, column, text) of each comment, 0-based line."""
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return [(tok.start[0] - 1, tok.start[1], tok.string) for tok in tokens if tok.type == tokenize.COMMENT]
