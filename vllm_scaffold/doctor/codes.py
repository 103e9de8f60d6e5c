"""The registry of doctor codes (codes.toml): each code's severity, when it is found, what it means, an example.

Findings take their severity from here, docs/doctor.md's list of codes is generated from it
(`python -m vllm_scaffold.doctor.codes` rewrites that part of the page), and the tests read it to require a
fixture per code.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

REGISTRY = Path(__file__).with_name("codes.toml")
DOCS = Path(__file__).parents[2] / "docs" / "doctor.md"
BEGIN = "<!-- codes: generated from vllm_scaffold/doctor/codes.toml by `python -m vllm_scaffold.doctor.codes` -->"
END = "<!-- end of codes -->"


@dataclass(frozen=True)
class Code:
    code: str
    severity: str  # "error", "warning" or "info"
    found: str  # "static", "live", or which part of a code each finds
    summary: str  # what goes wrong, for the docs
    lang: str  # the example's language, for the code fence
    example: str
    section: str


@dataclass(frozen=True)
class Section:
    title: str
    intro: str
    codes: tuple[Code, ...]


@cache
def sections() -> tuple[Section, ...]:
    data = tomllib.loads(REGISTRY.read_text(encoding="utf-8"))
    return tuple(
        Section(
            entry["title"],
            entry.get("intro", ""),
            tuple(Code(section=entry["title"], **code) for code in entry.get("code", [])),
        )
        for entry in data["section"]
    )


@cache
def codes() -> dict[str, Code]:
    return {code.code: code for section in sections() for code in section.codes}


def severity_of(code: str) -> str:
    try:
        return codes()[code].severity
    except KeyError:
        raise KeyError(f"doctor code {code!r} is not in {REGISTRY.name}: add it there with an example") from None


def markdown() -> str:
    """The codes part of docs/doctor.md."""
    parts = [BEGIN, ""]
    for section in sections():
        parts += [f"### {section.title}", ""]
        if section.intro:
            parts += [section.intro.strip(), ""]
        for code in section.codes:
            parts += [
                f"### `{code.code}`",
                f"**{code.severity}**, {code.found}. {code.summary.strip()}",
                "",
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
