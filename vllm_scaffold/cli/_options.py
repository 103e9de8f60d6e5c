"""Options and error reporting shared by the commands."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated

import typer

from vllm_scaffold.errors import ScaffoldError

Defaults = Annotated[bool, typer.Option("--defaults", help="Take every default answer; ask nothing.")]
DryRun = Annotated[bool, typer.Option("--dry-run", help="Show what would change and write nothing.")]
Data = Annotated[
    list[str] | None,
    typer.Option("--data", metavar="KEY=VALUE", help="Answer a template question (repeatable)."),
]


@contextmanager
def reporting() -> Iterator[None]:
    """Turns a ScaffoldError into one line on stderr and exit code 2."""
    try:
        yield
    except ScaffoldError as error:
        from vllm_scaffold import console

        console.error(str(error))
        raise typer.Exit(error.exit_code) from None


def parse_data(pairs: list[str] | None) -> dict[str, str]:
    data: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ScaffoldError(f"--data '{pair}' is not KEY=VALUE", "write it as --data KEY=VALUE")
        data[key.strip()] = value
    return data
