"""How fast the tool answers: `--help`, and `new` per templated seam against raw copier.

    python benchmarks/generation.py [--repeat N]

Prints, for each templated seam, the median time of `vllm_scaffold.generate.scaffold.new_package` (everything
`new` does: two copier renders, pyproject and plugin-module edits, checks, the move into place) and of
raw `copier.run_copy` of the same two templates with the same answers, in the same warm process, taking
turns; their ratio is the tool's own overhead, by the wall clock and by CPU time (this process and its
children, which a busy machine does not stretch), with the median over the seams at the end. It also prints
the wall time of `vllm-scaffold --help` and of a whole `vllm-scaffold new` command, interpreter start included.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import copier

from vllm_scaffold import vllm_facts
from vllm_scaffold.catalog import load_catalog
from vllm_scaffold.generate import names
from vllm_scaffold.generate.component import seam_facts
from vllm_scaffold.generate.rendering import templates_root
from vllm_scaffold.generate.scaffold import new_package

CLI = [sys.executable, "-m", "vllm_scaffold"]


def cpu_seconds() -> float:
    """CPU time of this process and of the children it waited for (copier's git, ruff): what a busy machine
    does not stretch, unlike the wall clock."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(action: Callable[[Path], object]) -> tuple[float, float]:
    """Wall and CPU seconds of one `action` on a fresh destination."""
    with tempfile.TemporaryDirectory() as scratch:
        wall, cpu = time.perf_counter(), cpu_seconds()
        action(Path(scratch) / "pkg")
        return time.perf_counter() - wall, cpu_seconds() - cpu


def medians(actions: list[Callable[[Path], object]], repeat: int) -> list[tuple[float, float]]:
    """Median wall and CPU seconds of each action, the actions taking turns so that a change in the machine's
    load falls on all of them alike."""
    timings: list[list[tuple[float, float]]] = [[] for _ in actions]
    for _ in range(repeat):
        for action, runs in zip(actions, timings, strict=True):
            runs.append(timed(action))
    return [(statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs)) for runs in timings]


def raw_copier(key: str, package: str) -> Callable[[Path], object]:
    """copier alone: the package skeleton, then the seam template, with the answers `new` passes."""
    seam = load_catalog()[key]

    def run(dest: Path) -> None:
        skeleton = {
            "package": package,
            "package_dir": f"src/{package}",
            "dist_name": names.dist_name(package),
            "env_prefix": names.env_prefix(package),
        }
        copier.run_copy(str(templates_root() / "package"), dest, data=skeleton, defaults=True, quiet=True, unsafe=True)
        context = {
            **skeleton,
            "seam": key,
            "name": package,
            "module": seam.module,
            "class_prefix": names.class_prefix(package),
            "vllm_range": vllm_facts.declared_range(),
            **seam_facts(seam),
        }
        copier.run_copy(
            str(templates_root() / seam.template), dest, data=context, defaults=True, quiet=True, unsafe=True
        )

    return run


def command_seconds(args: list[str], repeat: int) -> float:
    timings = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as scratch:
            start = time.perf_counter()
            subprocess.run([*args], cwd=scratch, check=True, capture_output=True)
            timings.append(time.perf_counter() - start)
    return statistics.median(timings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    repeat = parser.parse_args().repeat

    print(f"vllm-scaffold --help: {command_seconds([*CLI, '--help'], repeat) * 1000:.0f} ms (median of {repeat})")
    print(
        "vllm-scaffold new general-plugin (whole command): "
        f"{command_seconds([*CLI, 'new', 'general-plugin', 'bench', '--defaults'], repeat) * 1000:.0f} ms"
    )
    print(f"\n{'seam':<20} {'new (ms)':>10} {'raw copier (ms)':>16} {'ratio':>7} {'CPU ratio':>10}")
    ratios: list[float] = []
    cpu_ratios: list[float] = []
    for seam in load_catalog().values():
        if not seam.has_template:
            continue
        package = seam.example or "bench"
        (new, new_cpu), (raw, raw_cpu) = medians(
            [
                lambda dest, key=seam.key, package=package: new_package(key, package, dest, {}, dry_run=False),
                raw_copier(seam.key, package),
            ],
            repeat,
        )
        ratios.append(new / raw)
        cpu_ratios.append(new_cpu / raw_cpu)
        print(f"{seam.key:<20} {new * 1000:>10.0f} {raw * 1000:>16.0f} {ratios[-1]:>6.2f}x {cpu_ratios[-1]:>9.2f}x")
    print(f"{'median over the seams':<48} {statistics.median(ratios):>6.2f}x {statistics.median(cpu_ratios):>9.2f}x")
    shutil.rmtree(Path(tempfile.gettempdir()) / "bench", ignore_errors=True)


if __name__ == "__main__":
    main()
