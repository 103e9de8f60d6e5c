"""What doctor reports: findings with a severity, a stable code, a place, the problem and the fix."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum

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
class Link:
    """One link of a finding's proof (vllm_scaffold.doctor.proof): what must hold for the finding to follow,
    whether it was shown to (True) or could not be (None), and the evidence either way."""

    claim: str
    holds: bool | None
    evidence: str

    def as_json(self) -> dict[str, object]:
        return {"claim": self.claim, "holds": self.holds, "evidence": self.evidence}


@dataclass(frozen=True)
class Finding:
    severity: Severity
    code: str
    where: str
    message: str
    fix: str
    suppressed: str | None = None  # what suppressed it ("# doctor: ignore[...] at file:line", ...), or None
    # Every item a message summarises (each patched attribute, with the call it is reached through), in full:
    # the text report shows the message, --json both.
    details: tuple[str, ...] = ()
    # The links of its proof, where doctor checked them: an error whose link could not be shown is a warning.
    chain: tuple[Link, ...] = ()

    def __post_init__(self) -> None:
        registered = severity_of(self.code)
        if registered != self.severity.value and not (self.unproven and self.severity is Severity.WARNING):
            raise ValueError(f"doctor code {self.code} is registered as {registered}, reported as {self.severity}")

    @property
    def unproven(self) -> list[Link]:
        return [link for link in self.chain if link.holds is None]

    @property
    def location(self) -> tuple[str, int | None] | None:
        """(file relative to the package root, line) when the finding is in a file."""
        match = _FILE_PLACE.fullmatch(self.where)
        if match is None:
            return None
        return match["file"], int(match["line"]) if match["line"] else None

    def suppress(self, reason: str) -> Finding:
        return replace(self, suppressed=reason)

    def as_json(self) -> dict[str, object]:
        data = asdict(self)
        data["severity"] = self.severity.value
        if self.suppressed is None:
            del data["suppressed"]
        if self.details:
            data["details"] = list(self.details)
        else:
            del data["details"]
        if self.chain:
            data["chain"] = [link.as_json() for link in self.chain]
        else:
            del data["chain"]
        return data

    @classmethod
    def from_json(cls, data: dict) -> Finding:
        return cls(
            Severity(data["severity"]),
            data["code"],
            data["where"],
            data["message"],
            data["fix"],
            data.get("suppressed"),
            tuple(data.get("details", ())),
            tuple(Link(link["claim"], link["holds"], link["evidence"]) for link in data.get("chain", ())),
        )


# Each must match the severity codes.toml registers for `code` (Finding checks).
def error(code: str, where: str, message: str, fix: str) -> Finding:
    return Finding(Severity.ERROR, code, where, message, fix)


def warning(code: str, where: str, message: str, fix: str) -> Finding:
    return Finding(Severity.WARNING, code, where, message, fix)


def info(code: str, where: str, message: str, fix: str) -> Finding:
    return Finding(Severity.INFO, code, where, message, fix)


@dataclass
class Report:
    """Every finding for one package, in a stable order and without duplicates, plus how long each part took."""

    package: str
    vllm: str
    findings: list[Finding] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    live: str = "off"  # "on", "off", or why it did not run
    read: dict[str, object] = field(default_factory=dict)  # what doctor read: modules, entry points, files

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
            "live": self.live,
            "read": self.read,
            "timings_s": {key: round(value, 3) for key, value in self.timings.items()},
            "findings": [f.as_json() for f in self.findings],
        }
