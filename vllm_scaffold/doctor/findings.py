"""What doctor reports: findings with a severity, a stable code, a place, the problem and the fix."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"error": 0, "warning": 1, "info": 2}[self.value]


@dataclass(frozen=True)
class Finding:
    severity: Severity
    code: str
    where: str
    message: str
    fix: str

    def as_json(self) -> dict[str, str]:
        data = asdict(self)
        data["severity"] = self.severity.value
        return data

    @classmethod
    def from_json(cls, data: dict[str, str]) -> Finding:
        return cls(Severity(data["severity"]), data["code"], data["where"], data["message"], data["fix"])


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

    def add(self, findings: list[Finding]) -> None:
        seen = {(f.code, f.where, f.message) for f in self.findings}
        for finding in findings:
            key = (finding.code, finding.where, finding.message)
            if key not in seen:
                seen.add(key)
                self.findings.append(finding)
        self.findings.sort(key=lambda f: (f.severity.rank, f.code, f.where))

    @property
    def codes(self) -> set[str]:
        return {f.code for f in self.findings}

    @property
    def has_error(self) -> bool:
        return any(f.severity is Severity.ERROR for f in self.findings)

    def as_json(self) -> dict[str, object]:
        return {
            "package": self.package,
            "vllm": self.vllm,
            "live": self.live,
            "timings_s": {key: round(value, 3) for key, value in self.timings.items()},
            "findings": [f.as_json() for f in self.findings],
        }
