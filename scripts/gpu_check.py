"""Runs every golden package's kernel tests and kernel benchmarks on this machine's GPU, in one time budget.

Usage: `bash scripts/gpu-check.sh [--budget SECONDS] [--output DIR]` on a CUDA machine with torch, triton and
pytest (vLLM and this tool's own dependencies are not needed: kernel modules import only torch and triton).
Writes DIR/gpu-check.json and DIR/gpu-check.md: per package, the kernel tests passed, failed and skipped, and
each benchmark's output. Without CUDA it rehearses: the tests that need no GPU run (kernels under the Triton
interpreter), the `gpu` tests and the benchmarks' GPU timings are reported as needing a GPU, and the exit
status is 1 for that reason alone (2 when something else failed).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ElementTree
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "generated_examples"


@dataclass
class Step:
    """One command of the check: a package's kernel tests or one benchmark."""

    package: str
    kind: str  # "tests" or "benchmark"
    name: str
    status: str = "not run"  # passed, failed, timed out, not run
    seconds: float = 0.0
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    needs_gpu: int = 0  # tests not run because they need a GPU
    output: str = ""
    failures: list[str] = field(default_factory=list)


def cuda_available() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def kernel_packages() -> list[Path]:
    return sorted(p for p in EXAMPLES.iterdir() if list(p.glob("tests/test_*kernel*.py")))


def run(step: Step, command: list[str], cwd: Path, env: dict[str, str], timeout: float) -> str:
    started = time.perf_counter()
    try:
        completed = subprocess.run(
            command, cwd=cwd, env=env, capture_output=True, text=True, timeout=max(timeout, 1), check=False
        )
        output, step.status = completed.stdout + completed.stderr, "passed" if completed.returncode == 0 else "failed"
    except subprocess.TimeoutExpired as expired:
        output, step.status = f"{expired.stdout or ''}{expired.stderr or ''}", "timed out"
    step.seconds = round(time.perf_counter() - started, 1)
    step.output = output[-4000:]
    return output


def run_tests(package: Path, env: dict[str, str], cuda: bool, timeout: float, scratch: Path) -> Step:
    step = Step(package.name, "tests", ", ".join(p.name for p in sorted(package.glob("tests/test_*kernel*.py"))))
    report = scratch / f"{package.name}.xml"
    pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:vllm_scaffold"]
    files = [str(p.relative_to(package)) for p in sorted(package.glob("tests/test_*kernel*.py"))]
    if not cuda:
        collected = subprocess.run(
            [*pytest, "--collect-only", "-m", "gpu", *files], cwd=package, env=env, capture_output=True, text=True
        )
        step.needs_gpu = sum(1 for line in collected.stdout.splitlines() if "::" in line)
        files = [*files, "-m", "not gpu"]
    run(step, [*pytest, f"--junitxml={report}", *files], package, env, timeout)
    if report.is_file():
        for case in ElementTree.parse(report).getroot().iter("testcase"):
            outcome = {child.tag for child in case}
            if outcome & {"failure", "error"}:
                step.failed += 1
                step.failures.append(f"{case.get('classname')}::{case.get('name')}")
            elif "skipped" in outcome:
                step.skipped += 1
            else:
                step.passed += 1
    return step


def run_benchmark(package: Path, script: Path, env: dict[str, str], timeout: float) -> Step:
    step = Step(package.name, "benchmark", script.name)
    run(step, [sys.executable, str(script.relative_to(package))], package, env, timeout)
    return step


def markdown(steps: list[Step], cuda: bool, device: str, budget: float, elapsed: float) -> str:
    lines = [
        "# GPU check",
        "",
        f"Device: {device}. Budget {budget:.0f} s, used {elapsed:.0f} s.",
        "",
        "| package | step | status | passed | failed | skipped | needs a GPU | seconds |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for s in steps:
        lines.append(
            f"| {s.package} | {s.kind}: {s.name} | {s.status} | {s.passed} | {s.failed} | {s.skipped} | "
            f"{s.needs_gpu} | {s.seconds} |"
        )
    for s in steps:
        if s.kind == "benchmark" and s.status == "passed":
            lines += ["", f"## {s.package}: {s.name}", "", "```", s.output.strip(), "```"]
    if not cuda:
        lines += [
            "",
            "No CUDA device: the `gpu` tests did not run and the benchmarks ran their CPU (interpreter)",
            "path, so nothing above measures a GPU.",
        ]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--budget", type=float, default=480.0, help="seconds for the whole check (default 480)")
    parser.add_argument("--output", type=Path, default=ROOT / "gpu-check", help="directory for the results")
    args = parser.parse_args()
    cuda = cuda_available()
    device = "CPU only (rehearsal)"
    if cuda:
        import torch

        device = torch.cuda.get_device_name(0)
    args.output.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    steps: list[Step] = []
    packages = kernel_packages()
    work = [(p, None) for p in packages] + [(p, s) for p in packages for s in sorted(p.glob("benchmarks/*.py"))]
    for index, (package, script) in enumerate(work):
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(package / "src"), os.environ.get("PYTHONPATH", "")])}
        if not cuda:
            env["TRITON_INTERPRET"] = "1"
        remaining = args.budget - (time.perf_counter() - started)
        share = remaining / (len(work) - index)  # what is left, shared by what is left
        if script is None:
            steps.append(run_tests(package, env, cuda, share, args.output))
        else:
            steps.append(run_benchmark(package, script, env, share))
        print(f"{steps[-1].package}: {steps[-1].kind} {steps[-1].name}: {steps[-1].status} ({steps[-1].seconds} s)")
    elapsed = time.perf_counter() - started
    (args.output / "gpu-check.json").write_text(
        json.dumps(
            {"device": device, "cuda": cuda, "seconds": round(elapsed, 1), "steps": [asdict(s) for s in steps]},
            indent=2,
        )
        + "\n"
    )
    (args.output / "gpu-check.md").write_text(markdown(steps, cuda, device, args.budget, elapsed))
    broken = [s for s in steps if s.status != "passed"]
    for s in broken:
        print(f"FAILED {s.package} {s.kind} {s.name}: {s.status}; {', '.join(s.failures) or s.output[-600:]}")
    print(f"results: {args.output / 'gpu-check.md'}, {args.output / 'gpu-check.json'}")
    if broken:
        return 2
    if not cuda:
        needs = sum(s.needs_gpu for s in steps)
        print(
            f"NOT A GPU RUN: no CUDA device, so {needs} gpu tests did not run and no benchmark measured a GPU; "
            "everything that runs without one passed"
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
