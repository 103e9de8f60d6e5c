"""How long `vllm-scaffold doctor` takes on large plugins: a synthetic 100,000-line plugin tree, and the
checkouts of real plugins you name.

`python benchmarks/doctor.py [--plugin DIR ...] [--repeat N] [--no-synthetic]` runs the whole static command,
`vllm-scaffold doctor DIR --no-live --json`, in a fresh interpreter for each plugin (start-up, imports, the
release indexes, reading and every check included), and prints the plugin's size, the command's wall and CPU
time (user + system, the figure that holds on a machine other jobs are also using), both per 100,000 lines,
and the read / static parts the report itself times. With `--repeat N` each plugin runs N times and the run
with the least CPU time is shown: the first run of a plugin fills doctor's cache (the installed vLLM's call
sites of the methods the plugin overrides) and writes the bytecode of the modules it imports, as an installed
tool has it (the runs write it even where PYTHONDONTWRITEBYTECODE is set), later runs read both.

Nothing is downloaded: `--plugin` takes a directory you checked out (a source tree with pyproject.toml or
setup.py), a wheel or an sdist. The synthetic tree is written to a temporary directory.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

SYNTHETIC_LINES = 100_000

_MODULE = '''\
"""Synthetic plugin module {index}: registrations, model code and helpers as hardware plugins write them."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import torch

from vllm.model_executor.custom_op import CustomOp
from vllm.v1.core.sched.scheduler import Scheduler

if TYPE_CHECKING:
    from vllm.config import VllmConfig

KERNEL_PATH = "{package}.module_{index}:Kernel{index}"
'''

_BLOCK = '''

class Layer{index}_{block}(torch.nn.Module):
    """A layer with a forward pass of ordinary tensor code."""

    def __init__(self, hidden: int = 64) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(hidden))
        self.scale = float(os.environ.get("SYNTH_SCALE_{block}", "1.0"))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x * self.weight
        for step in range(4):
            if step % 2:
                y = y + torch.tanh(y) * self.scale
            else:
                y = y - torch.sigmoid(y) / (step + 1)
        return torch.nn.functional.layer_norm(y, y.shape[-1:])


def helper_{index}_{block}(values: list[int], config: VllmConfig | None = None) -> dict[str, int]:
    result = {{"sum": sum(values), "max": max(values, default=0)}}
    if config is not None and getattr(config, "parallel_config", None) is not None:
        result["world"] = config.parallel_config.world_size
    return {{key: value * 2 for key, value in result.items() if value}}
'''


def synthetic_plugin(root: Path, lines: int = SYNTHETIC_LINES) -> Path:
    """A src-layout plugin of about `lines` lines: a general plugin that imports every module lazily."""
    package = "synthetic_plugin"
    source = root / "src" / package
    source.mkdir(parents=True)
    (root / "pyproject.toml").write_text(
        textwrap.dedent(f"""\
            [project]
            name = "synthetic-plugin"
            version = "0.1.0"

            [project.entry-points."vllm.general_plugins"]
            synthetic = "{package}.plugin:register"
        """),
        encoding="utf-8",
    )
    written, index, modules = 0, 0, []
    while written < lines:
        text = _MODULE.format(index=index, package=package)
        text += "".join(_BLOCK.format(index=index, block=block) for block in range(18))
        (source / f"module_{index}.py").write_text(text, encoding="utf-8")
        written += text.count("\n")
        modules.append(f"module_{index}")
        index += 1
    imports = "\n".join(f"    from {package} import {name}  # noqa: F401" for name in modules)
    (source / "__init__.py").write_text('"""Synthetic plugin."""\n', encoding="utf-8")
    (source / "plugin.py").write_text(
        f'"""The general plugin."""\n\n\ndef register() -> None:\n{imports}\n', encoding="utf-8"
    )
    return root


@dataclass(frozen=True)
class Run:
    """One `doctor --no-live --json` command on a plugin."""

    lines: int
    modules: int
    findings: int
    wall: float  # seconds, the whole command
    cpu: float  # user + system seconds of the command's process
    read: float  # the report's own timings (wall): finding and parsing the modules
    static: float  # and every static check

    def per_100k(self, seconds: float) -> float:
        return seconds * 100_000 / max(self.lines, 1)


def run_doctor(target: Path) -> Run | str:
    """The whole static command on `target` in a fresh interpreter; a string saying why when it fails."""
    command = [sys.executable, "-m", "vllm_scaffold", "doctor", str(target), "--no-live", "--json"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    # As an installed tool runs: its modules' and its dependencies' bytecode written once and read after, even
    # where this shell turns writing it off.
    environ = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    completed = subprocess.run(command, capture_output=True, text=True, check=False, env=environ)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if completed.returncode not in (0, 1):  # 1: the plugin has an error finding, which is no failure here
        return f"doctor exited {completed.returncode}: {(completed.stderr or completed.stdout).strip()[-300:]}"
    report = json.loads(completed.stdout)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    timings = report.get("timings_s", {})
    return Run(
        report["read"]["lines"],
        report["read"]["modules"],
        len(report["findings"]),
        wall,
        cpu,
        timings.get("read", 0.0),
        timings.get("static", 0.0),
    )


def measure(name: str, target: Path, repeat: int) -> str:
    """A line of the table for `target`: the run with the least CPU time of `repeat`."""
    runs = [run_doctor(target) for _ in range(repeat)]
    failed = [r for r in runs if isinstance(r, str)]
    if failed:
        return f"{name}: {failed[0]}"
    best = min((r for r in runs if isinstance(r, Run)), key=lambda r: r.cpu)
    return (
        f"{name}: {best.lines:,} lines, {best.modules} modules, {best.findings} findings; "
        f"command {best.wall:.2f} s wall, {best.cpu:.2f} s CPU = {best.per_100k(best.wall):.2f} s wall, "
        f"{best.per_100k(best.cpu):.2f} s CPU per 100k lines (read {best.read:.2f} s, static {best.static:.2f} s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--plugin",
        action="append",
        default=[],
        type=Path,
        metavar="DIR",
        help="A plugin checkout (or wheel, sdist) to measure; repeatable.",
    )
    parser.add_argument("--repeat", type=int, default=1, help="Runs per plugin; the least CPU time is shown.")
    parser.add_argument("--no-synthetic", action="store_true", help="Only the plugins --plugin names.")
    arguments = parser.parse_args()
    for plugin in arguments.plugin:
        if not plugin.exists():
            parser.error(f"--plugin {plugin}: no such file or directory; pass a plugin checkout, wheel or sdist")
    if arguments.repeat < 1:
        parser.error("--repeat takes a count of at least 1")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    if not arguments.no_synthetic:
        with tempfile.TemporaryDirectory(prefix="doctor-benchmark-") as scratch:
            print(measure("synthetic tree", synthetic_plugin(Path(scratch)), arguments.repeat))
    for plugin in arguments.plugin:
        print(measure(str(plugin), plugin.absolute(), arguments.repeat))


if __name__ == "__main__":
    main()
