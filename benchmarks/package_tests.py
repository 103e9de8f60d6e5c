"""How long each generated package's own tests take: the default tier, the slow tier, and under load.

    python benchmarks/package_tests.py [SEAM ...] [--slow] [--load N] [--cache DIR]

Renders each templated seam's golden package into scratch space and runs `python -m pytest -q` in it, as
its author would (add `--slow` to time `pytest --slow`, what the generated CI runs). For each package it
prints the wall time of the whole command (interpreter start, private install and collection included), its
CPU time (user + system, the command and every process it waited for: the work itself, which a busy machine
stretches in wall time but not in CPU time), pytest's summary line and the 1-minute load average before and
after. `--load N` keeps N other engine
test runs going meanwhile (the logits-processor package's default tier, restarted whenever it ends), the
way a shared CI machine is busy. The tiny model is built once under `--cache` (default: a scratch dir).
"""

from __future__ import annotations

import argparse
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from vllm_scaffold.catalog import templated_keys
from vllm_scaffold.generate.scaffold import render_example

LOAD_SEAM = "logits-processor"


def pytest_command(slow: bool) -> list[str]:
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *(["--slow"] if slow else [])]


def package_env(cache: Path) -> dict[str, str]:
    env = {**os.environ, "VLLMSCAFFOLD_CACHE": str(cache)}
    env.pop("PYTHONPATH", None)
    return env


def load_average() -> float:
    return os.getloadavg()[0]


def children_cpu() -> float:
    """CPU seconds (user + system) of every child process waited for so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class Load:
    """Loops in their own process groups, each running a package's default test tier again and again."""

    def __init__(self, packages: list[Path], env: dict[str, str]) -> None:
        self.loops = []
        for package in packages:
            code = (
                "import subprocess\n"
                "while True:\n"
                f"    subprocess.run({pytest_command(False)!r}, cwd={str(package)!r},"
                " stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
            )
            self.loops.append(subprocess.Popen([sys.executable, "-c", code], env=env, start_new_session=True))

    def stop(self) -> None:
        for loop in self.loops:
            os.killpg(loop.pid, signal.SIGTERM)
            loop.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("seams", nargs="*", default=templated_keys(), help="templated seams (default: all)")
    parser.add_argument("--slow", action="store_true", help="time `pytest --slow` instead of `pytest`")
    parser.add_argument("--load", type=int, default=0, metavar="N", help="other engine test runs meanwhile")
    parser.add_argument("--cache", type=Path, help="VLLMSCAFFOLD_CACHE for every run (tiny model built once)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="package-tests-") as scratch:
        root = Path(scratch)
        env = package_env(args.cache or root / "cache")
        load = Load([render_example(LOAD_SEAM, root / f"load-{i}") for i in range(args.load)], env)
        tier = "pytest --slow" if args.slow else "pytest"
        print(f"{'seam':<18} {tier:>13} {'CPU':>8}  load before/after  summary")
        try:
            for key in args.seams:
                package = render_example(key, root / key)
                before, start, cpu = load_average(), time.perf_counter(), children_cpu()
                done = subprocess.run(pytest_command(args.slow), cwd=package, env=env, capture_output=True, text=True)
                seconds, cpu, after = time.perf_counter() - start, children_cpu() - cpu, load_average()
                lines = (done.stdout + done.stderr).strip().splitlines()
                summary = lines[-1].strip("= ") if lines else f"exit {done.returncode}"
                row = f"{key:<18} {seconds:>12.1f}s {cpu:>7.1f}s  {before:>5.1f} / {after:<5.1f}     {summary}"
                print(row, flush=True)
        finally:
            load.stop()


if __name__ == "__main__":
    main()
