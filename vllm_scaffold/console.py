"""The terminal: a thin layer over rich, imported only when something is printed."""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console


@cache
def out() -> Console:
    from rich.console import Console

    return Console(highlight=False, soft_wrap=True)


@cache
def err() -> Console:
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True)


def error(message: str) -> None:
    """One line on stderr, no markup interpretation of the message."""
    err().print(f"[bold red]error:[/] {escape(message)}")


def line(message: str) -> None:
    out().print(message)


def lines(messages: Iterable[str]) -> None:
    for message in messages:
        out().print(escape(message))


def escape(text: str) -> str:
    from rich.markup import escape as rich_escape

    return rich_escape(text)
