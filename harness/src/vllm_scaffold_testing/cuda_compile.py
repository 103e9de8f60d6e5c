"""Compiles Triton kernels for real NVIDIA GPUs on a machine without one, and measures what they use.

Used by the pytest plugin under `--cuda-arch` and by `python -m vllm_scaffold_testing.cuda_report`.
Triton's wheel ships NVIDIA's `ptxas`, so a kernel compiles to a real cubin for any architecture here; what
the cubin needs (registers, spilled bytes, shared memory) decides whether and how fast it runs on the GPU.

- `LaunchRecorder` patches Triton's launch path (`kernel[grid](...)`, interpreted or not) and records each
  launch's kernel, argument types and compile-time values. In dry-run mode it records without running, which
  is how a kernel module's `cuda_launch_configs()` is read: each entry calls the module's CUDA host path on
  shape-only ("meta") tensors, so the launch is exactly the one a GPU would get.
- `CompileChecker` compiles recorded launches for each architecture in worker processes, one per CPU
  (`cuda_compile_worker`, Triton without the interpreter), caching each result by the kernel module's source
  hash, the launch, the architecture, Triton's version and this checker's code, so an unchanged kernel costs
  nothing on the next run.
- `Arch` holds the per-architecture limits the checks and the occupancy estimate use.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import inspect
import json
import os
import queue
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from vllm_scaffold_testing import environ

CONFIGS_FUNCTION = "cuda_launch_configs"
DEFAULT_ARCHS = (80, 89, 90, 100)
# Per-warp register allocation unit and the register file of one SM (the same on every architecture here).
REGISTER_UNIT = 256
REGISTERS_PER_SM = 65536
# Shared memory the driver reserves per resident block (sm_80 and later).
RESERVED_SHARED_PER_BLOCK = 1024


@dataclass(frozen=True)
class Arch:
    """Limits of one compute capability (CUDA C Programming Guide, "Compute Capabilities")."""

    capability: int
    shared_per_block: int  # bytes a block can opt in to
    shared_per_sm: int
    threads_per_sm: int
    blocks_per_sm: int

    @property
    def name(self) -> str:
        return f"sm_{self.capability}"


ARCHS: dict[int, Arch] = {
    arch.capability: arch
    for arch in (
        Arch(80, 163 * 1024, 164 * 1024, 2048, 32),
        Arch(86, 99 * 1024, 100 * 1024, 1536, 16),
        Arch(89, 99 * 1024, 100 * 1024, 1536, 24),
        Arch(90, 227 * 1024, 228 * 1024, 2048, 32),
        Arch(100, 227 * 1024, 228 * 1024, 2048, 32),
        Arch(120, 99 * 1024, 100 * 1024, 1536, 32),
    )
}


def parse_archs(text: str) -> tuple[int, ...]:
    """`"80,89,sm_90"` -> (80, 89, 90); raises ValueError naming the unknown entry and the known ones."""
    archs: list[int] = []
    for part in (p.strip().removeprefix("sm_") for p in text.split(",")):
        if not part.isdigit() or int(part) not in ARCHS:
            known = ",".join(str(a) for a in ARCHS)
            raise ValueError(f"unknown CUDA architecture {part!r}: use a comma-separated list of {known}")
        archs.append(int(part))
    return tuple(dict.fromkeys(archs))


@dataclass(frozen=True)
class Launch:
    """One kernel launch, reduced to what decides its compiled code.

    `args`/`kwargs` hold JSON values: tensors as ("tensor", dtype, 16-byte aligned), Triton dtypes as
    ("tl", name), runtime integers by the class Triton specializes on (1, multiple of 16, other). `case` and `dtype`
    name a declared CUDA configuration; a launch recorded from a test has neither.
    """

    module: str
    kernel: str
    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...]
    case: str = ""
    dtype: str = ""

    @property
    def name(self) -> str:
        return f"{self.module}.{self.kernel}"

    @property
    def configuration(self) -> str:
        """The compile-time values of the launch, as `NAME=value` pairs."""
        return " ".join(f"{key}={_show(value)}" for key, value in self.kwargs)

    def describe(self) -> str:
        where = f"[{self.case}] " if self.case else ""
        return f"{self.name} {where}({self.configuration})"

    def request(self, arch: int) -> dict[str, Any]:
        return {
            "module": self.module,
            "kernel": self.kernel,
            "args": list(self.args),
            "kwargs": dict(self.kwargs),
            "arch": arch,
        }


def _show(value: Any) -> str:
    if isinstance(value, tuple) and value[0] == "tl":
        return str(value[1])
    return str(value)


def _specialization_class(value: int) -> int:
    """A representative of the integers Triton compiles `value` the same way as: 1 (a constant), a multiple of
    16, or any other 32-bit value; larger values stand for themselves."""
    if value == 1 or not -(2**31) <= value < 2**31:
        return value
    return 16 if value % 16 == 0 else 17


def describe_value(value: Any, *, compile_time: bool) -> Any:
    """The JSON description of one launch argument (see `Launch`); `compile_time` values are kept exactly."""
    if hasattr(value, "data_ptr") and hasattr(value, "dtype"):
        return ("tensor", str(value.dtype).removeprefix("torch."), value.data_ptr() % 16 == 0)
    if type(value).__name__ == "dtype" and hasattr(value, "primitive_bitwidth"):
        return ("tl", str(value))
    if hasattr(value, "value") and type(value).__name__ == "constexpr":
        return describe_value(value.value, compile_time=True)
    if compile_time or isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return _specialization_class(value)
    if isinstance(value, float):
        return 1.0  # floats are never specialized on
    raise TypeError(f"cannot describe kernel argument of type {type(value).__name__}")


def _compile_time_parameters(fn: Callable[..., Any]) -> tuple[list[str], set[str]]:
    """The kernel's parameter names, and those annotated `tl.constexpr`."""
    parameters = inspect.signature(fn).parameters
    return list(parameters), {name for name, p in parameters.items() if "constexpr" in str(p.annotation)}


@dataclass
class CompileResult:
    """What one launch compiled to for one architecture (or why it did not)."""

    arch: int
    registers: int = 0
    spill_stores: int = 0
    spill_loads: int = 0
    stack: int = 0
    shared: int = 0
    num_warps: int = 0
    error: str = ""
    seconds: float = 0.0
    cacheable: bool = True  # False when the kernel could not even be loaded: nothing was compiled

    @property
    def spills(self) -> int:
        return self.spill_stores

    @property
    def shared_over_limit(self) -> bool:
        return self.shared > ARCHS[self.arch].shared_per_block

    def occupancy(self) -> float:
        """Resident warps per SM over the maximum: the standard occupancy estimate from registers, shared memory
        and threads of one block (no account of the kernel's own scheduling)."""
        arch = ARCHS[self.arch]
        if self.error or not self.num_warps:
            return 0.0
        threads = self.num_warps * 32
        registers_per_warp = -(-max(self.registers, 1) * 32 // REGISTER_UNIT) * REGISTER_UNIT
        by_registers = (REGISTERS_PER_SM // registers_per_warp) // self.num_warps
        by_threads = arch.threads_per_sm // threads
        by_shared = arch.shared_per_sm // (self.shared + RESERVED_SHARED_PER_BLOCK)
        blocks = min(by_registers, by_threads, by_shared, arch.blocks_per_sm)
        return blocks * threads / arch.threads_per_sm

    def problem(self) -> str:
        """Why the launch cannot run on the architecture ('' when it can)."""
        arch = ARCHS[self.arch]
        if self.error:
            return f"does not compile for {arch.name}:\n{self.error}"
        if self.shared_over_limit:
            return f"needs {self.shared} bytes of shared memory; {arch.name} allows {arch.shared_per_block} per block"
        return ""


def cache_dir() -> Path:
    """Where compile results are kept: $VLLMSCAFFOLD_CACHE/cuda-compile, else the user's cache directory."""
    base = environ.setting(environ.CACHE_ENV) or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "vllm-scaffold"
    )
    return Path(base) / "cuda-compile"


@cache
def _checker_hash() -> str:
    """This checker's own code (the compiling worker and what reads its results): a change to it is a new key."""
    digest = hashlib.sha256()
    for path in (Path(__file__), Path(__file__).with_name("cuda_compile_worker.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _source_hash(module: str) -> str:
    loaded = sys.modules.get(module)
    path = getattr(loaded, "__file__", None)
    return hashlib.sha256(Path(path).read_bytes()).hexdigest() if path else "unknown"


def _import_root(module: str) -> str:
    """The directory `module` is imported from (for `a.b.c` in /x/a/b/c.py: /x)."""
    path = Path(getattr(sys.modules.get(module), "__file__", None) or ".").resolve()
    depth = module.count(".") + (path.name == "__init__.py")
    return str(path.parents[depth])


class LaunchRecorder:
    """Records every Triton launch while installed; in dry-run mode the kernels do not run."""

    def __init__(self) -> None:
        self.launches: list[Launch] = []
        self.dry_run = False
        self._originals: list[tuple[type, Callable[..., Any]]] = []

    def install(self) -> None:
        from triton.runtime.interpreter import InterpretedFunction
        from triton.runtime.jit import JITFunction

        for cls in (JITFunction, InterpretedFunction):
            original = cls.run
            self._originals.append((cls, original))
            cls.run = self._wrap(original)  # type: ignore[method-assign]

    def uninstall(self) -> None:
        for cls, original in self._originals:
            cls.run = original  # type: ignore[method-assign]
        self._originals.clear()

    def _wrap(self, original: Callable[..., Any]) -> Callable[..., Any]:
        recorder = self

        def run(kernel: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
            if not warmup:
                recorder.record(kernel, args, kwargs)
                if recorder.dry_run:
                    return None
            return original(kernel, *args, grid=grid, warmup=warmup, **kwargs)

        return run

    def record(self, kernel: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        fn = kernel.fn
        names, compile_time = _compile_time_parameters(fn)
        # Trailing compile-time values passed by position (as wrap_triton does) become keywords, which is how
        # the configuration is shown; binding by name compiles the same kernel.
        while args and len(args) <= len(names) and names[len(args) - 1] in compile_time:
            kwargs = {names[len(args) - 1]: args[-1], **kwargs}
            args = args[:-1]
        self.launches.append(
            Launch(
                module=fn.__module__,
                kernel=fn.__qualname__,
                args=tuple(
                    describe_value(a, compile_time=n in compile_time) for n, a in zip(names, args, strict=False)
                ),
                # keywords that are not parameters are launch options (num_warps, num_stages): kept exactly
                kwargs=tuple(
                    (k, describe_value(v, compile_time=k in compile_time or k not in names)) for k, v in kwargs.items()
                ),
            )
        )

    @contextmanager
    def capture(self, *, dry_run: bool = False) -> Iterator[list[Launch]]:
        """The launches made inside the block (run, or only recorded when `dry_run`)."""
        saved, self.launches, self.dry_run = self.launches, [], dry_run
        try:
            yield self.launches
        finally:
            self.launches, self.dry_run = saved, False


def declared_launches(module: Any, recorder: LaunchRecorder) -> list[Launch]:
    """The launches `module.cuda_launch_configs()` declares for the CUDA path, labelled with case and dtype."""
    import torch

    launches: list[Launch] = []
    for case, dtype, call in getattr(module, CONFIGS_FUNCTION)():
        with recorder.capture(dry_run=True) as made, _cuda_host_path():
            call()
        if not made:
            raise RuntimeError(
                f"{module.__name__}.{CONFIGS_FUNCTION}(): {case!r} ({dtype}) launched no Triton kernel; each entry's "
                "call must reach a launch (wrap_triton, for one, launches nothing for meta tensors)"
            )
        dtype_name = str(dtype).removeprefix("torch.") if isinstance(dtype, torch.dtype) else str(dtype)
        launches.extend(Launch(m.module, m.kernel, m.args, m.kwargs, case=case, dtype=dtype_name) for m in made)
    return launches


@contextmanager
def _cuda_host_path() -> Iterator[None]:
    """Host code that asks `TRITON_INTERPRET` picks its CUDA path while the declared configurations are read."""
    saved = os.environ.pop("TRITON_INTERPRET", None)
    try:
        yield
    finally:
        if saved is not None:
            os.environ["TRITON_INTERPRET"] = saved


class CompileWorker:
    """One `cuda_compile_worker` process: a launch in, its result out."""

    def __init__(self) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        env.pop("TRITON_INTERPRET", None)
        env.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
        self.log = tempfile.NamedTemporaryFile("w+", prefix="cuda-compile-", suffix=".log", delete=False)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "vllm_scaffold_testing.cuda_compile_worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            env=env,
        )

    def compile(self, launch: Launch, arch: int) -> CompileResult:
        assert self.process.stdin is not None and self.process.stdout is not None
        line = ""
        if self.process.poll() is None:
            request = {**launch.request(arch), "root": _import_root(launch.module)}
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
            line = self.process.stdout.readline()
        if not line:
            log = Path(self.log.name).read_text()[-4000:]
            return CompileResult(arch=arch, error=f"the compile worker exited:\n{log}", cacheable=False)
        return CompileResult(**json.loads(line))

    def close(self) -> None:
        self.process.communicate()
        self.log.close()
        os.unlink(self.log.name)


def default_jobs() -> int:
    """Compile processes to run side by side: one per CPU this process may use, at most 8."""
    return max(1, min(8, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))


@dataclass
class CompileChecker:
    """Compiles launches for `archs`, once each per session and once each ever while the cache holds them."""

    archs: tuple[int, ...]
    cache: Path = field(default_factory=cache_dir)
    jobs: int = field(default_factory=default_jobs)
    compiled: int = 0
    cached: int = 0
    _results: dict[str, CompileResult] = field(default_factory=dict)
    _idle: queue.SimpleQueue[CompileWorker] = field(default_factory=queue.SimpleQueue)
    _workers: list[CompileWorker] = field(default_factory=list)

    def key(self, launch: Launch, arch: int) -> str:
        request = launch.request(arch)
        text = json.dumps([triton_version(), _checker_hash(), _source_hash(launch.module), request], sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()

    def results(self, launches: Iterable[Launch]) -> list[tuple[Launch, CompileResult]]:
        """Every (launch, arch) result, compiling what neither this session nor the cache has."""
        pairs = [(launch, arch) for launch in dict.fromkeys(launches) for arch in self.archs]
        missing: dict[str, tuple[Launch, int]] = {}
        for launch, arch in pairs:
            key = self.key(launch, arch)
            stored = self.cache / f"{key}.json"
            if key in self._results or key in missing:
                continue
            if stored.is_file():
                self._results[key] = CompileResult(**json.loads(stored.read_text()))
                self.cached += 1
            else:
                missing[key] = (launch, arch)
        with ThreadPoolExecutor(max_workers=self.jobs) as pool:
            for key, result in zip(missing, pool.map(self._compile, missing.values()), strict=True):
                self._store(key, result)
        return [(launch, self._results[self.key(launch, arch)]) for launch, arch in pairs]

    def _compile(self, item: tuple[Launch, int]) -> CompileResult:
        try:
            worker = self._idle.get_nowait()
        except queue.Empty:
            worker = CompileWorker()
            self._workers.append(worker)
        try:
            return worker.compile(item[0], item[1])
        finally:
            self._idle.put(worker)

    def _store(self, key: str, result: CompileResult) -> None:
        self.compiled += 1
        self._results[key] = result
        if not result.cacheable:
            return
        self.cache.mkdir(parents=True, exist_ok=True)
        stored = self.cache / f"{key}.json"
        temporary = stored.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps(asdict(result)))
        temporary.replace(stored)

    def close(self) -> None:
        for worker in self._workers:
            worker.close()
        self._workers.clear()
        self._idle = queue.SimpleQueue()


def triton_version() -> str:
    return importlib.metadata.version("triton")


def failures(results: Iterable[tuple[Launch, CompileResult]]) -> list[str]:
    """One message per launch that cannot run on an architecture: kernel, configuration, compiler message."""
    return [f"{launch.describe()} {result.problem()}" for launch, result in results if result.problem()]


def spills(results: Iterable[tuple[Launch, CompileResult]]) -> list[str]:
    """One line per declared CUDA configuration that spills registers to local memory."""
    return [
        f"{launch.describe()} spills {result.spill_stores} bytes per thread on {ARCHS[result.arch].name} "
        f"({result.registers} registers)"
        for launch, result in results
        if launch.case and not result.error and result.spills
    ]
