"""`vllm-scaffold explain SEAM`: one catalog entry in prose."""

from __future__ import annotations

from typing import Annotated

import typer

from vllm_scaffold.cli.options import reporting


def command(seam: Annotated[str, typer.Argument(metavar="SEAM", help="Seam key ('vllm-scaffold list').")]) -> None:
    """Explain one seam: what loads it, how it is chosen, its pitfalls.

    Which processes load it and when, how a user selects it, what breaks silently, and the --data keys its
    template asks.
    """
    with reporting():
        from vllm_scaffold.catalog import docs_page, get_seam
        from vllm_scaffold.terminal import console

        entry = get_seam(seam)
        page = docs_page(entry.key)
        text = [
            f"# {entry.title} ({entry.key})",
            "",
            entry.summary,
            "",
            f"Registration: {entry.api}.",
            f"Loaded by: {entry.process_family}.",
            f"When: {entry.load_timing}.",
            f"Duplicates: {entry.duplicate_policy}.",
            "",
            "How a user selects it:",
            *(f"  - {line}" for line in entry.selection),
            "",
            "Pitfalls:",
            *(f"  - {line}" for line in entry.pitfalls),
            "",
            f"Template: {'vllm-scaffold new ' + entry.key + ' NAME' if entry.has_template else 'none yet'}.",
        ]
        if entry.has_template:
            from vllm_scaffold.cli.options import data_keys

            text += ["", *data_keys(entry.key, with_package=False)]
        if page:
            text += ["", "More, with the generated files and what to check (shipped with vllm-scaffold):"]
        console.paragraphs(text)
        if page:
            console.lines([str(page)])  # one word: a path is never broken
