"""What every part of the live probe shares: the findings it writes, and how it names a place and a failure."""

from __future__ import annotations

from vllm_scaffold.doctor.reading.installed import ENDPOINT, GENERAL, IO_PROCESSOR, LOGITS, PLATFORM, STAT_LOGGER
from vllm_scaffold.doctor.report.codes import severity_of
from vllm_scaffold.vllm_facts import facts

EVERY_PROCESS = (GENERAL, PLATFORM)
V1_BASE = "vllm.v1.sample.logits_processor.LogitsProcessor"
V2_BASE = "vllm.v1.worker.gpu.sample.logits_processor.interface.LogitsProcessor"

findings: list[dict[str, str]] = []


def report(code: str, where: str, message: str, fix: str) -> None:
    """A finding, its severity the code's in codes.toml (the tool's Finding checks it again when reading OUT)."""
    findings.append({"severity": severity_of(code), "code": code, "where": where, "message": message, "fix": fix})


def load_failure(group: str) -> str:
    """What vLLM does with an entry point of `group` that fails to load."""
    return facts.fact("ep-logits-load-failure-fatal" if group == LOGITS else "ep-load-failure-logged").text()


# The processes that load each entry-point group, as the catalog states them.
GROUP_PROCESSES = {
    GENERAL: "catalog-general-plugin-processes",
    PLATFORM: "catalog-platform-processes",
    IO_PROCESSOR: "io-processor-front-end",
    STAT_LOGGER: "catalog-stat-logger-processes",
    ENDPOINT: "endpoint-api-server-only",
    LOGITS: "logits-processor-processes",
}


def loaded_in(group: str) -> str:
    """Where vLLM imports an entry point of `group` (a group this tool does not know yet: where it loads it)."""
    key = GROUP_PROCESSES.get(group)
    return f"vLLM imports the module wherever it loads {group}" + (f": {facts.fact(key).text()}" if key else "")


def where(ep: dict[str, str]) -> str:
    return f'entry point [{ep["group"]}] {ep["name"]} = "{ep["value"]}"'


def describe(error: BaseException) -> str:
    text = f"{type(error).__name__}: {error}".strip()
    return text if len(text) < 300 else text[:300] + "..."
