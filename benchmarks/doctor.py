"""How long `vllm-scaffold doctor` takes on large plugins: a real one downloaded by pinned version, and a
synthetic 100,000-line plugin tree.

`python benchmarks/doctor.py [--skip-download]` prints, for each plugin, its size and doctor's time
(static checks only, the live probe off) in three parts: `read` (finding and parsing every module), `static`
(every check) and the CPU time of both, the figure that holds on a machine other jobs are also using.
The real plugin is fetched with `pip download --no-deps` into $VLLMSCAFFOLD_CACHE/doctor-benchmark (the
system temp directory by default); without a registry it is skipped with the reason. The process is set up as
the command line sets up its own (`short_lived_process`: what a run builds is not rescanned by Python's cyclic
collector).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from vllm_scaffold.doctor.reading.collector import short_lived_process
from vllm_scaffold.doctor.runner import diagnose, diagnose_package, open_package

REAL = ("vllm-kunlun==0.11.1", "lmcache==0.5.6")  # a hardware platform plugin; the largest published connector
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


def download(requirement: str, into: Path) -> Path | str:
    """The wheel (or sdist) of `requirement`, downloaded once; a string saying why when it cannot be."""
    name = requirement.split("==")[0].replace("-", "_")
    found = sorted(into.glob(f"{name}-*"))
    if found:
        return found[0]
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(into), requirement]
    completed = subprocess.run(command, capture_output=True, text=True, check=False)
    found = sorted(into.glob(f"{name}-*"))
    if completed.returncode != 0 or not found:
        return f"pip download {requirement} failed: {(completed.stderr or completed.stdout).strip()[-300:]}"
    return found[0]


def measure(target: Path | str) -> str:
    """Doctor on `target`, static checks only: wall time of each part, CPU time of reading and of checking."""
    with tempfile.TemporaryDirectory(prefix="doctor-benchmark-") as scratch:
        wall, cpu = time.perf_counter(), time.process_time()
        package = open_package(target, Path(scratch))
        read_wall, read_cpu = time.perf_counter() - wall, time.process_time() - cpu
        cpu = time.process_time()
        report = diagnose_package(package, live=False)
        static_cpu = time.process_time() - cpu
    return (
        f"{report.read['lines']:>7,} lines, {report.read['modules']:>4} modules: read {read_wall:.2f} s "
        f"(CPU {read_cpu:.2f} s), static checks {report.timings['static']:.2f} s (CPU {static_cpu:.2f} s); "
        f"{len(report.findings)} findings"
    )


def main() -> None:
    short_lived_process()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-download", action="store_true", help="Only the synthetic tree.")
    arguments = parser.parse_args()
    diagnose(Path(__file__).parents[1] / "generated_examples" / "general-plugin", live=False)  # vLLM facts cached
    with tempfile.TemporaryDirectory(prefix="doctor-benchmark-") as scratch:
        print(f"synthetic-plugin: {measure(synthetic_plugin(Path(scratch)))}")
    if arguments.skip_download:
        return
    cache = Path(os.environ.get("VLLMSCAFFOLD_CACHE", tempfile.gettempdir())) / "doctor-benchmark"
    cache.mkdir(parents=True, exist_ok=True)
    for requirement in REAL:
        archive = download(requirement, cache)
        print(f"{requirement}: {archive}" if isinstance(archive, str) else f"{requirement}: {measure(archive)}")


if __name__ == "__main__":
    main()
