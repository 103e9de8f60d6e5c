"""`python -m vllm_scaffold_testing.cuda_report [PACKAGE_DIR ...]`: what each kernel of a plugin needs on a GPU.

For every module of the packages that declares `cuda_launch_configs()`, each declared launch (the ones the
CUDA path can choose) is compiled for each architecture without a GPU (see `cuda_compile`), and one
Markdown table per package lists registers, spilled bytes, shared memory and an occupancy estimate.
Prints the report, or writes it with `--output`. Exit status 1 when a launch cannot run on an architecture.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from vllm_scaffold_testing.cuda_compile import (
    ARCHS,
    CONFIGS_FUNCTION,
    DEFAULT_ARCHS,
    CompileChecker,
    CompileResult,
    Launch,
    LaunchRecorder,
    declared_launches,
    failures,
    parse_archs,
    triton_version,
)

COLUMNS = ("kernel", "case", "dtype", "configuration", "arch", "registers", "spill bytes", "shared memory", "occupancy")


def kernel_modules(package: Path) -> list[str]:
    """Dotted names of the modules under `package` (its src/ layout or its root) that declare CUDA launches."""
    root = package / "src" if (package / "src").is_dir() else package
    names = []
    for path in sorted(root.rglob("*.py")):
        if f"def {CONFIGS_FUNCTION}(" in path.read_text(encoding="utf-8"):
            names.append(".".join(path.relative_to(root).with_suffix("").parts))
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    return names


def table(rows: list[tuple[Launch, CompileResult]]) -> list[str]:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for launch, result in rows:
        if result.problem():
            numbers = [f"**{result.problem().splitlines()[0]}**", "", "", ""]
        else:
            spill = f"**{result.spill_stores}**" if result.spills else "0"
            numbers = [str(result.registers), spill, f"{result.shared / 1024:.1f} KiB", f"{result.occupancy():.0%}"]
        cells = [launch.kernel, launch.case, launch.dtype, launch.configuration, ARCHS[result.arch].name, *numbers]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def report(packages: Sequence[Path], archs: tuple[int, ...]) -> tuple[str, int]:
    """The Markdown report of `packages` for `archs`, and how many launches cannot run."""
    recorder = LaunchRecorder()
    recorder.install()
    checker = CompileChecker(archs)
    started = time.perf_counter()
    sections: list[str] = []
    problems = 0
    spilling = 0
    total = 0
    kernels: set[str] = set()
    try:
        for package in packages:
            launches: list[Launch] = []
            for name in kernel_modules(package):
                launches.extend(declared_launches(importlib.import_module(name), recorder))
            rows = checker.results(launches)
            problems += len(failures(rows))
            spilling += sum(1 for _, result in rows if result.spills and not result.error)
            total += len(rows)
            kernels.update(launch.name for launch in launches)
            sections += [f"## {package.name}", "", *table(rows), ""]
            sections += [f"- {message}" for message in failures(rows)]
    finally:
        recorder.uninstall()
        checker.close()
    seconds = time.perf_counter() - started
    summary = (
        f"{len(kernels)} kernels, {total // len(archs)} launch configurations x {len(archs)} architectures "
        f"({', '.join(ARCHS[a].name for a in archs)}) = {total} compiles: {problems} cannot run, "
        f"{spilling} spill registers; "
        f"{checker.compiled} compiled now, {checker.cached} from the cache, {seconds:.0f} s."
    )
    return "\n".join([summary, "", *sections]).rstrip("\n"), problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m vllm_scaffold_testing.cuda_report", description=__doc__.split("\n")[0]
    )
    parser.add_argument("packages", nargs="*", type=Path, default=[Path(".")], help="plugin package directories")
    parser.add_argument("--arch", default=",".join(map(str, DEFAULT_ARCHS)), help="e.g. 80,89,90,100")
    parser.add_argument("--output", type=Path, help="write the report here instead of printing it")
    args = parser.parse_args(argv)
    try:
        archs = parse_archs(args.arch)
    except ValueError as error:
        parser.exit(2, f"--arch: {error}\n")
    missing = [str(p) for p in args.packages if not p.is_dir()]
    if missing:
        parser.exit(2, f"not a directory: {', '.join(missing)}; pass plugin package directories\n")
    text, problems = report([p.resolve() for p in args.packages], archs)
    command = " ".join(["python -m vllm_scaffold_testing.cuda_report", *(argv if argv is not None else sys.argv[1:])])
    text = "\n".join(
        [
            "# Triton kernels compiled for NVIDIA GPUs",
            "",
            f"Generated by `{command}` with Triton {triton_version()}. The figures come from `ptxas` (registers,",
            "spilled bytes per thread) and the compiled kernel (shared memory per block), not from a GPU; occupancy",
            "is the resident warps per SM those allow, over the SM's maximum. Spills are in bold.",
            "",
            text,
        ]
    )
    if args.output:
        args.output.write_text(text + "\n", encoding="utf-8")
    else:
        print(text)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
