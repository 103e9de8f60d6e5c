"""The `--cuda-arch` option of the pytest plugin: every Triton launch a test makes also compiles for real GPUs.

Registered by `vllm_scaffold_testing.plugin` when the option is given. While a test runs (under the
interpreter on a machine without CUDA), its launches are recorded; after it passes, each distinct launch is
compiled for every listed architecture (see `cuda_compile`), and so is every configuration the kernel
module declares for its CUDA path (`cuda_launch_configs()`), the first time a test launches one of its
kernels. A launch that does not compile, or needs more shared memory than the architecture has, fails the
test with the kernel, its configuration and the compiler's message; a declared configuration that spills
registers is a `CudaSpillWarning`. Results are cached (see `cuda_compile.cache_dir`).
"""

from __future__ import annotations

import sys
import time
import warnings
from collections.abc import Iterator

import pytest

from vllm_scaffold_testing.cuda_compile import (
    ARCHS,
    CONFIGS_FUNCTION,
    CompileChecker,
    LaunchRecorder,
    declared_launches,
    failures,
    spills,
)


class CudaSpillWarning(UserWarning):
    """A configuration the CUDA path launches keeps part of its state in local memory on some architecture."""


class CudaCompileChecks:
    """The pytest hooks of `--cuda-arch`."""

    def __init__(self, archs: tuple[int, ...]) -> None:
        self.recorder = LaunchRecorder()
        self.checker = CompileChecker(archs)
        self._modules_seen: set[str] = set()
        self._spills_warned: set[str] = set()
        self._seconds = 0.0
        self._launches = 0

    def start(self) -> None:
        self.recorder.install()

    def stop(self) -> None:
        self.recorder.uninstall()
        self.checker.close()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Iterator[None]:
        with self.recorder.capture() as launches:
            result = yield
        started = time.perf_counter()
        launches = list(launches) + self._newly_declared(launches)
        results = self.checker.results(launches)
        self._launches += len({launch for launch, _ in results})
        self._seconds += time.perf_counter() - started
        for message in spills(results):
            if message not in self._spills_warned:
                self._spills_warned.add(message)
                warnings.warn(CudaSpillWarning(message), stacklevel=1)
        problems = failures(results)
        if problems:
            pytest.fail("Triton kernels that cannot run on a GPU:\n" + "\n".join(problems), pytrace=False)
        return result

    def _newly_declared(self, launches: list) -> list:
        declared = []
        for module_name in dict.fromkeys(launch.module for launch in launches):
            if module_name in self._modules_seen:
                continue
            self._modules_seen.add(module_name)
            module = sys.modules.get(module_name)
            if module is not None and hasattr(module, CONFIGS_FUNCTION):
                declared.extend(declared_launches(module, self.recorder))
        return declared

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        archs = ", ".join(ARCHS[a].name for a in self.checker.archs)
        terminalreporter.write_sep("-", "CUDA compile checks")
        terminalreporter.write_line(
            f"{self._launches} Triton launches checked for {archs}: {self.checker.compiled} compiled, "
            f"{self.checker.cached} from the cache ({self.checker.cache}), {self._seconds:.1f} s"
        )
