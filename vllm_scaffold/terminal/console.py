"""The terminal: a thin layer over rich, imported only when something is printed.

Prose (`paragraphs`) wraps between words at the output's width: the terminal's, else COLUMNS, else 80. An
error is one logical line: wrapped between words on a terminal, a single line when stderr is piped, so
scripts and logs can grep it whole.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

BULLET = "  - "


@cache
def out() -> Console:
    from rich.console import Console

    return Console(highlight=False, soft_wrap=True)


@cache
def err() -> Console:
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True)


def error(message: str) -> None:
    """One line on stderr, no markup interpretation of the message; wrapped between words on a terminal."""
    console = err()
    console.print(f"[bold red]error:[/] {escape(message)}", soft_wrap=not console.is_terminal)


def line(message: str) -> None:
    out().print(message)


def lines(messages: Iterable[str]) -> None:
    for message in messages:
        out().print(escape(message))


def sentence(message: str) -> None:
    """One logical line on stdout, like `error`: wrapped between words on a terminal, whole when piped."""
    console = out()
    console.print(escape(message), soft_wrap=not console.is_terminal)


def paragraphs(texts: Iterable[str]) -> None:
    """Each text wrapped between words at the output's width; the lines of a `  - ` item hang under its text."""
    from vllm_scaffold.generate.wrapping import fill_words

    width = out().width
    for text in texts:
        hanging = " " * len(BULLET) if text.startswith(BULLET) else ""
        for piece in fill_words(text, width, subsequent_indent=hanging) if text else [""]:
            out().print(escape(piece))


def escape(text: str) -> str:
    from rich.markup import escape as rich_escape

    return rich_escape(text)
