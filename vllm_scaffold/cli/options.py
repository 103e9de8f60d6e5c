"""Options and error reporting shared by the commands."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer

from vllm_scaffold.errors import ScaffoldError

# What `new` tells a user to run in the package it made: the harness comes from the wheel `new` put in
# wheels/ until it is on PyPI (the package's README says the same, and its CI runs it).
INSTALL_FOR_TESTS = "pip install -e '.[test]' --find-links wheels"

Defaults = Annotated[bool, typer.Option("--defaults", help="Take every default answer; ask nothing.")]
DryRun = Annotated[bool, typer.Option("--dry-run", help="Show what would change and write nothing.")]
Data = Annotated[
    list[str] | None,
    typer.Option("--data", metavar="KEY=VALUE", help="Answer a template question (repeatable)."),
]


def scaffold(
    command: str, seam: str | None, name: str | None, place: Path | None, defaults: bool, data: list[str] | None,
    dry_run: bool,
) -> None:  # fmt: skip
    """`new` (`place` is --dest) and `add` (`place` is --project): ask for what is missing on a terminal, run
    the library call, and print its result; a dry run prints the same description for both."""
    with reporting():
        interactive = not defaults and on_terminal()
        seam, name = seam_and_name(command, seam, name, place, interactive=interactive)
        from vllm_scaffold.generate.scaffold import add_to_project, new_package
        from vllm_scaffold.terminal import console
        from vllm_scaffold.terminal.prompts import copier_questions

        answers = parse_data(data)
        ask = copier_questions if interactive else None
        if command == "new":
            result = new_package(seam, name, place, answers, ask=ask, dry_run=dry_run)
        else:
            result = add_to_project(seam, name, place or Path(), answers, ask=ask, dry_run=dry_run)
        if not result.written:
            console.lines([*result.describe(), "dry run: nothing was written"])
        elif result.new_package:
            files = len(result.changes.created) + len(result.built)
            console.lines([f"created {result.root} ({files} files)", *(f"note   {n}" for n in result.changes.notes)])
            console.sentence(f"next: cd {result.root}; install vLLM (README.md), then: {INSTALL_FOR_TESTS} && pytest")
        else:
            console.lines(result.describe())


def asked(help: str) -> typer.models.ArgumentInfo:
    """A positional argument that a terminal session may leave out and be asked for."""
    return typer.Argument(help=f"{help}; asked if omitted on a terminal.", show_default=False)


@contextmanager
def reporting() -> Iterator[None]:
    """Turns a ScaffoldError into one line on stderr and exit code 2."""
    try:
        yield
    except ScaffoldError as error:
        from vllm_scaffold.terminal import console

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


def on_terminal() -> bool:
    """True when a person can answer questions: stdin and stdout are both terminals."""
    return all(stream is not None and stream.isatty() for stream in (sys.stdin, sys.stdout))


def seam_and_name(
    command: str, seam: str | None, name: str | None, place: Path | None, *, interactive: bool
) -> tuple[str, str]:
    """SEAM and NAME as given; the missing ones asked on a terminal, an error naming the fix elsewhere.

    `place` is where the command writes: `new`'s --dest, `add`'s --project.
    """
    if seam is not None and name is not None:
        return seam, name
    if not interactive:
        absent = " and ".join(label for label, value in (("SEAM", seam), ("NAME", name)) if value is None)
        raise ScaffoldError(
            f"missing {absent}",
            f"run 'vllm-scaffold {command} SEAM NAME' with a seam key from 'vllm-scaffold list' "
            f"(on a terminal and without --defaults, '{command}' asks for them)",
        )
    from vllm_scaffold.terminal import guided

    ask = {"new": guided.new_arguments, "add": guided.add_arguments}[command]
    return ask(seam, place)  # NAME is the second argument: when it is missing, only SEAM may be given
