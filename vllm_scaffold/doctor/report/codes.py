"""The registry of doctor codes (codes.toml): each code's severity, when it is found, what it means, an example.

Findings take their severity from here, docs/doctor.md's list of codes is generated from it
(`python scripts/doctor_docs.py` rewrites that part of the page), and the tests read it to require a
fixture per code. An error code also names, in `fails`, how the finding fails at run time.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from vllm_scaffold.vllm_facts.facts import expand

REGISTRY = Path(__file__).with_name("codes.toml")


@dataclass(frozen=True)
class Code:
    code: str
    severity: str  # "error", "warning" or "info"
    found: str  # "static", "live", or which part of a code each finds
    summary: str  # what goes wrong, for the docs
    lang: str  # the example's language, for the code fence
    example: str
    section: str
    # How an error fails at run time on the release it is found against (the severity contract in
    # docs/doctor.md): every error code names it, and nothing else does.
    fails: str = ""


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
            expand(entry.get("intro", "")),
            tuple(
                Code(section=entry["title"], **{**code, "summary": expand(code["summary"])})
                for code in entry.get("code", [])
            ),
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
