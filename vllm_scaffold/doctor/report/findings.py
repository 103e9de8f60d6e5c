"""What doctor reports: findings with a severity, a stable code, a place, the problem and the fix.

A finding's severity is its code's in codes.toml, never stated where it is found: `Finding(code, where,
message, fix)` looks it up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, overload

from vllm_scaffold.doctor.report.codes import severity_of

# `where` of a finding in a file: "path/to/file.py:12" (or a bare "path/to/file.py").
_FILE_PLACE = re.compile(r"(?P<file>[\w./-]+\.(?:py|toml|cfg|txt))(?::(?P<line>\d+))?")


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"error": 0, "warning": 1, "info": 2}[self.value]


@dataclass(frozen=True)
class Place:
    """Where a finding is, as data: the file (relative to the package root) and line when it is in a file.
    `text` is the finding's `where` as reported ("pkg/mod.py:12", "pyproject.toml [project.entry-points]",
    "the environment"), which the JSON keeps."""

    text: str
    file: str | None = None
    line: int | None = None

    @classmethod
    def of(cls, where: str) -> Place:
        match = _FILE_PLACE.fullmatch(where)
        if match is not None:
            return cls(where, match["file"], int(match["line"]) if match["line"] else None)
        if where.startswith("pyproject.toml"):
            return cls(where, "pyproject.toml")  # a table or key of it: the file, no line
        return cls(where)

    @property
    def in_file(self) -> bool:
        """The place is a file, or a line of one (a pyproject.toml table is not: see `file`)."""
        return _FILE_PLACE.fullmatch(self.text) is not None

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class Link:
    """One link of a finding's proof (vllm_scaffold.doctor.proof): what must hold for the finding to follow,
    whether it was shown to (True) or could not be (None), and the evidence either way."""

    claim: str
    holds: bool | None
    evidence: str

    def as_json(self) -> dict[str, object]:
        return {"claim": self.claim, "holds": self.holds, "evidence": self.evidence}


@dataclass(frozen=True, init=False)
class Finding:
    severity: Severity
    code: str
    where: str
    message: str
    fix: str
    suppressed: str | None = None  # what suppressed it ("# doctor: ignore[...] at file:line", ...), or None
    # Every item a message summarises (each patched attribute, with the call it is reached through), in full:
    # the text report shows the message, --json both.
    details: tuple[str, ...] = field(default=())
    # The links of its proof, where doctor checked them (vllm_scaffold.doctor.proof).
    chain: tuple[Link, ...] = field(default=())

    @overload
    def __init__(
        self,
        code: str,
        where: str,
        message: str,
        fix: str,
        /,
        *,
        suppressed: str | None = None,
        details: tuple[str, ...] = (),
        chain: tuple[Link, ...] = (),
    ) -> None: ...

    @overload
    def __init__(self, severity: Severity, code: str, where: str, message: str, fix: str, /) -> None: ...

    def __init__(
        self, *fields: str, suppressed: str | None = None, details: tuple[str, ...] = (), chain: tuple[Link, ...] = ()
    ) -> None:
        """`Finding(code, where, message, fix)`, its severity the code's in codes.toml, except that an error
        whose proof has a link not shown (`chain`) is a warning. The form with the severity first
        (`Finding(severity, code, ...)`) is still accepted from the release check, which passes the registered
        severity; any other severity is refused."""
        if len(fields) == 5:
            stated, *rest = fields
            code, where, message, fix = rest
        elif len(fields) == 4:
            code, where, message, fix = fields
            stated = None
        else:
            raise TypeError(f"Finding takes (code, where, message, fix), not {len(fields)} values")
        severity = Severity(severity_of(code))
        if stated is not None and stated != severity:
            raise ValueError(f"doctor code {code} is registered as {severity}, reported as {stated}")
        if severity is Severity.ERROR and any(link.holds is None for link in chain):
            severity = Severity.WARNING
        for name, value in (
            ("severity", severity),
            ("code", code),
            ("where", where),
            ("message", message),
            ("fix", fix),
            ("suppressed", suppressed),
            ("details", details),
            ("chain", chain),
        ):
            object.__setattr__(self, name, value)

    @property
    def place(self) -> Place:
        return Place.of(self.where)

    @property
    def location(self) -> tuple[str, int | None] | None:
        """(file relative to the package root, line) when the finding is in a file."""
        place = self.place
        return (place.file, place.line) if place.in_file and place.file is not None else None

    @property
    def unproven(self) -> list[Link]:
        return [link for link in self.chain if link.holds is None]

    def suppress(self, reason: str) -> Finding:
        return self.but(suppressed=reason)

    def but(
        self, *, message: str | None = None, suppressed: str | None = None, chain: tuple[Link, ...] | None = None
    ) -> Finding:
        """This finding with another message, suppression or proof chain."""
        return Finding(
            self.code,
            self.where,
            self.message if message is None else message,
            self.fix,
            suppressed=self.suppressed if suppressed is None else suppressed,
            details=self.details,
            chain=self.chain if chain is None else chain,
        )

    def as_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "severity": self.severity.value,
            "code": self.code,
            "where": self.where,
            "message": self.message,
            "fix": self.fix,
        }
        if self.suppressed is not None:
            data["suppressed"] = self.suppressed
        if self.details:
            data["details"] = list(self.details)
        if self.chain:
            data["chain"] = [link.as_json() for link in self.chain]
        return data

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Finding:
        details = data.get("details", ())
        suppressed = data.get("suppressed")
        links = data.get("chain", ())
        chain = tuple(
            Link(str(link["claim"]), link["holds"], str(link["evidence"]))
            for link in (links if isinstance(links, list) else ())
            if isinstance(link, dict)
        )
        finding = cls(
            str(data["code"]),
            str(data["where"]),
            str(data["message"]),
            str(data["fix"]),
            suppressed=None if suppressed is None else str(suppressed),
            details=tuple(str(d) for d in details) if isinstance(details, list | tuple) else (),
            chain=chain,
        )
        if finding.severity != data["severity"]:
            raise ValueError(f"doctor code {finding.code} is registered as {finding.severity}, not {data['severity']}")
        return finding


class ProbeState(StrEnum):
    """Whether the live probe imported the plugin in a vLLM process: it did (`on`); it did not run (`off`: turned
    off, a `--vllm` run, or by default where it could not run); it was asked for and could not run (`skipped`:
    no vLLM installed, or the plugin is not a source directory or wheel); or it raised (`failed`)."""

    ON = "on"
    OFF = "off"
    SKIPPED = "skipped"
    FAILED = "failed"


@dataclass(frozen=True)
class LiveProbe:
    """Whether the live probe ran, and why not; the report writes it as one line ("skipped: vLLM is not
    installed", "on (platform detectors called)", "on; Ray executor: ...")."""

    state: ProbeState = ProbeState.OFF
    why: str = ""  # why it was off, skipped or failed
    how: str = ""  # what it ran, where that needs saying
    ray: str | None = None  # what the Ray executor's probe found, when it was asked for

    def __str__(self) -> str:
        text = self.state.value + (f": {self.why}" if self.why else "") + (f" ({self.how})" if self.how else "")
        return text if self.ray is None else f"{text}; Ray executor: {self.ray}"


@dataclass
class Report:
    """Every finding for one package, in a stable order and without duplicates, plus how long each part took."""

    package: str
    vllm: str
    findings: list[Finding] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    live: LiveProbe = field(default_factory=LiveProbe)
    read: dict[str, object] = field(default_factory=dict)  # what doctor read: modules, entry points, files
    # The plugin's coupling surface to vLLM as --json writes it (doctor/inventory.py), when asked for.
    inventory: dict[str, Any] | None = None

    def add(self, findings: list[Finding]) -> None:
        seen = {(f.code, f.where, f.message) for f in self.findings}
        for finding in findings:
            key = (finding.code, finding.where, finding.message)
            if key not in seen:
                seen.add(key)
                self.findings.append(finding)
        self.findings.sort(key=lambda f: (f.severity.rank, f.code, f.where))

    @property
    def active(self) -> list[Finding]:
        """The findings no suppression covers."""
        return [f for f in self.findings if f.suppressed is None]

    @property
    def suppressed(self) -> list[Finding]:
        return [f for f in self.findings if f.suppressed is not None]

    @property
    def codes(self) -> set[str]:
        return {f.code for f in self.active}

    @property
    def has_error(self) -> bool:
        return any(f.severity is Severity.ERROR for f in self.active)

    def as_json(self) -> dict[str, object]:
        return {
            "package": self.package,
            "vllm": self.vllm,
            "live": str(self.live),
            "read": self.read,
            "timings_s": {key: round(value, 3) for key, value in self.timings.items()},
            "findings": [f.as_json() for f in self.findings],
        } | ({} if self.inventory is None else {"inventory": self.inventory})
