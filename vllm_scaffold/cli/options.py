"""Options and error reporting shared by the commands."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Protocol

import typer

from vllm_scaffold.errors import ScaffoldError
from vllm_scaffold.wording import a

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
            console.lines(result.describe(diffs=False))  # the diffs are what --dry-run shows first


def asked(help: str, *, eager: bool = False) -> typer.models.ArgumentInfo:
    """A positional argument that a terminal session may leave out and be asked for (`eager`: read before
    `--help`, which then names what it implies)."""
    return typer.Argument(help=f"{help}; asked if omitted on a terminal.", show_default=False, is_eager=eager)


def data_keys(seam_key: str, *, with_package: bool) -> list[str]:
    """The `--data KEY=VALUE` answers `new` (`with_package`: the package's questions too) or `add` take for a
    SEAM component, one `  - ` item each: its help, default and choices."""
    from vllm_scaffold.catalog import templated_seam
    from vllm_scaffold.generate.templates import questions

    seam = templated_seam(seam_key)
    assert seam.template is not None
    templates = (["package"] if with_package else []) + [seam.template]
    items = []
    for template in templates:
        for key, question in questions(template).items():
            if question.get("when", True) is False:
                continue  # derived from other answers, never asked
            choices = question.get("choices")
            offered = [str(c) for c in (choices.values() if isinstance(choices, dict) else choices or [])]
            raw = question.get("default", "")
            default = str(raw).lower() if isinstance(raw, bool) else str(raw)
            facts = [f"one of {', '.join(offered)}" if offered else question.get("type", "str")]
            if default and "{{" not in default:
                facts.append(f"default {default}")
            help_text = " ".join(str(question.get("help", "")).split())
            items.append(f"  - {key} ({'; '.join(facts)}): {help_text}")
    return [f"--data KEY=VALUE answers for {a(seam.key)} component:", *items]


def help_with_data_keys(ctx: typer.Context, _param: object, value: bool) -> None:
    """`--help` of `new` and `add`: the command's help, then, when SEAM is given, the --data keys it takes."""
    if not value or ctx.resilient_parsing:
        return
    typer.echo(ctx.get_help())
    seam = ctx.params.get("seam")
    if seam:
        from vllm_scaffold.terminal import console

        with reporting():
            console.paragraphs(["", *data_keys(seam, with_package=ctx.info_name == "new")])
    raise typer.Exit()


# `--help` that lists the --data keys of the SEAM given before it (`new attention-backend --help`).
HelpWithDataKeys = Annotated[
    bool,
    # Not eager, unlike click's own --help: SEAM is (`asked(..., eager=True)`), so it is read first.
    typer.Option(
        "--help",
        expose_value=False,
        callback=help_with_data_keys,
        help="Show this message (after SEAM: also its template's --data keys) and exit.",
    ),
]
# The commands that take HelpWithDataKeys in place of click's own --help.
OWN_HELP = {"help_option_names": []}


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


class Planned(Protocol):
    """A plan of file changes (`update`'s, `migrate`'s): its diff, and writing it."""

    def diff(self) -> list[str]: ...

    def apply(self) -> None: ...


def write_or_show(plan: Planned, dry_run: bool) -> None:
    """Writes `plan`, or with --dry-run prints its diff and writes nothing."""
    from vllm_scaffold.terminal import console

    if dry_run:
        console.lines(plan.diff())
        console.line("dry run: nothing was written")
    else:
        plan.apply()
