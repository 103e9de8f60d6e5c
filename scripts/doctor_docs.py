"""Writes docs/doctor.md's list of doctor codes from the registry (vllm_scaffold/doctor/report/codes.toml).

A maintainer script, not part of the tool: run `python scripts/doctor_docs.py` after editing codes.toml; the
tests fail while the page and the registry disagree.
"""

from __future__ import annotations

from pathlib import Path

from vllm_scaffold.doctor.report import codes

DOCS = Path(__file__).parents[1] / "docs" / "doctor.md"
BEGIN = "<!-- codes: generated from vllm_scaffold/doctor/report/codes.toml by `python scripts/doctor_docs.py` -->"
END = "<!-- end of codes -->"


def markdown() -> str:
    """The codes part of docs/doctor.md."""
    parts = [BEGIN, ""]
    for section in codes.sections():
        parts += [f"### {section.title}", ""]
        if section.intro:
            parts += [section.intro.strip(), ""]
        for code in section.codes:
            parts += [
                f"### `{code.code}`",
                f"**{code.severity}**, {code.found}. {code.summary.strip()}",
                "",
                *([f"Fails at run time: {code.fails}.", ""] if code.fails else []),
                f"```{code.lang}",
                code.example.strip("\n"),
                "```",
                "",
            ]
    return "\n".join([*parts, END])


def docs_with_codes(text: str) -> str:
    """`text` (docs/doctor.md) with its generated part replaced by the registry's current content."""
    head, found, rest = text.partition(BEGIN)
    if not found:
        raise ValueError(f"{DOCS} lacks the marker {BEGIN}")
    return head + markdown() + rest.partition(END)[2]


def main() -> None:
    DOCS.write_text(docs_with_codes(DOCS.read_text(encoding="utf-8")), encoding="utf-8")


if __name__ == "__main__":
    main()
