"""Re-wrapping the prose of rendered Python (comments and docstrings) that a long name pushed past the line length.

The formatter lays out code but leaves comments and docstrings as they are, and generated prose names the
package, its classes and its environment variables: `vllm_plugin.py` of a 40-character package says
"entry point `that_name` once in each process", and the line no longer fits. `wrap_prose` re-fills only the
lines that are too long (with the rest of their paragraph), at word boundaries, keeping their indentation, so
short names render exactly as the template reads and long ones still pass `ruff check` (E501). Code and
string literals are never touched.
"""

from __future__ import annotations

import ast
import io
import textwrap
import tokenize

_PRAGMAS = ("# noqa", "# type:", "# pyright:", "# fmt:", "# pragma:", "# ruff:")


def wrap_prose(source: str, width: int) -> str:
    """`source` with every too-long comment and docstring line re-filled to at most `width` characters.

    A too-long line is re-filled together with the lines that continue its paragraph, so the words it pushes
    out join the next line instead of standing on a line of their own.
    """
    lines = source.splitlines(keepends=True)
    if all(len(line.rstrip("\r\n")) <= width for line in lines):
        return source
    text = [line.rstrip("\r\n") for line in lines]
    replacements: dict[int, list[str]] = {}  # 0-based line -> the lines that replace it ([]: joined above)
    for first, last, indent in _docstrings(source):
        for index in range(first, last + 1):
            line = text[index]
            if len(line) <= width or index in replacements:
                continue
            continuation = indent + ("  " if line.lstrip().startswith("- ") else "")
            if index != first:
                continuation = line[: len(line) - len(line.lstrip())] + continuation[len(indent) :]
            end = index
            while end < last and _continues(text[end + 1], continuation):
                end += 1
            joined = " ".join([line, *(text[i].strip() for i in range(index + 1, end + 1))])
            replacements[index] = _fill(joined, width, continuation)
            replacements.update((i, []) for i in range(index + 1, end + 1))
    # Only a too-long line with a `#` in it can hold a comment to re-fill: tokenizing is the slow part.
    comments = _comments(source) if any(len(line) > width and "#" in line for line in text) else []
    full_line = {index: column for index, column, _ in comments if not text[index][:column].strip()}
    for index, column, comment in comments:
        line = text[index]
        if len(line) <= width or comment.startswith(_PRAGMAS) or index in replacements:
            continue
        code = line[:column].rstrip()
        indent = line[: len(line) - len(line.lstrip())]
        body = comment.lstrip("#").strip()
        continuation = f"{indent}# " + ("  " if body.startswith("- ") else "")
        end = index
        while not code and full_line.get(end + 1) == column and _continues(text[end + 1], continuation):
            end += 1
        following = [text[i].strip().lstrip("#").strip() for i in range(index + 1, end + 1)]
        replacements[index] = _fill(" ".join([f"{indent}# {body}", *following]), width, continuation)
        replacements[index] += [code] if code else []
        replacements.update((i, []) for i in range(index + 1, end + 1))
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


# What starts a line that is no continuation of the paragraph above it: deeper indentation, a new bullet,
# the closing quotes of a docstring.
_NEW_BLOCK = (" ", "- ", '"""', "'''")


def _continues(line: str, continuation: str) -> bool:
    """Whether `line` continues the paragraph whose later lines start `continuation` (a docstring's indent, or
    `# ` and a bullet's hang): the same start, no deeper, not empty, not a new bullet, not a pragma."""
    if not line.startswith(continuation) or line.lstrip().startswith(_PRAGMAS):
        return False
    rest = line[len(continuation) :]
    return bool(rest.strip()) and not rest.startswith(_NEW_BLOCK)


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
    for node in _scopes(ast.parse(source)):
        first = node.body[0] if node.body else None
        if (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
            and first.end_lineno is not None
        ):
            found.append((first.lineno - 1, first.end_lineno - 1, " " * first.col_offset))
    return sorted(found)


_Scope = ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
# The fields of a statement that hold statements: where a class or function can be defined.
_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")


def _scopes(module: ast.Module) -> list[_Scope]:
    """The module and every class and function in it, found through statements only (expressions hold none)."""
    scopes: list[_Scope] = []
    pending: list[ast.AST] = [module]
    while pending:
        node = pending.pop()
        if isinstance(node, _Scope):
            scopes.append(node)
        for name in _BODIES:
            pending += getattr(node, name, ())
    return scopes


def _comments(source: str) -> list[tuple[int, int, str]]:
    """(line, column, text) of each comment, 0-based line."""
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return [(tok.start[0] - 1, tok.start[1], tok.string) for tok in tokens if tok.type == tokenize.COMMENT]
