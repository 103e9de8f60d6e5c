"""Running a real vLLM engine with exactly one plugin package visible.

The package under test is installed with `pip install --no-deps --target DIR` into a private directory that
is put first on `sys.path` and `PYTHONPATH`, so the test process and every process vLLM spawns (engine core,
workers, API server) see its entry points, and nothing else in the environment does. When the package is
already installed in the environment (`pip install -e .`), that installation is used as it is.
"""

from __future__ import annotations

import configparser
import contextlib
import email.parser
import gc
import importlib.metadata
import os
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

# Engine settings that fit the tiny model and a 2-core, no-GPU machine.
TINY_ENGINE_KWARGS: dict[str, object] = {
    "enforce_eager": True,
    "max_model_len": 256,
    "dtype": "float32",
    "max_num_seqs": 4,
    "max_num_batched_tokens": 256,
    "kv_cache_memory_bytes": 64 << 20,
}

ENGINE_ENV: dict[str, str] = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
    "TOKENIZERS_PARALLELISM": "false",
}

# Two CPU workers, one core each: what tensor_parallel_size=2 needs on a machine with one NUMA node.
TP2_ENV: dict[str, str] = {"VLLM_CPU_OMP_THREADS_BIND": "0|1", "VLLM_ENABLE_V1_MULTIPROCESSING": "1"}


# The pyproject table (under [tool]) where vllm-scaffold keeps a plugin's manifest. Defined here, in the
# distribution every generated plugin's tests use, and read by the tool's project model too.
MANIFEST_TABLE = "vllm-scaffold"


def declares_vllm_plugin(entry_point_groups: Iterable[str], has_manifest: bool) -> bool:
    """What makes a project a vLLM plugin: a [tool.vllm-scaffold] manifest or an entry point in a `vllm.*` group."""
    return has_manifest or any(group.startswith("vllm.") for group in entry_point_groups)


@dataclass(frozen=True)
class ProjectMetadata:
    """What a project declares, as far as running it in an engine goes."""

    name: str
    entry_point_groups: frozenset[str]
    manifest: bool  # a [tool.vllm-scaffold] table

    @property
    def is_vllm_plugin(self) -> bool:
        return declares_vllm_plugin(self.entry_point_groups, self.manifest)


@cache
def project_metadata(project: Path) -> ProjectMetadata | None:
    """The project at `project`, or None where there is none (no pyproject.toml, setup.py or setup.cfg).

    A pyproject.toml whose [project] table states the name and the entry points is read as it is. Any other
    layout (setup.py, setup.cfg, dynamic metadata) is built by its own build backend into a scratch
    directory, exactly as the private install would, and read from the metadata that writes.
    """
    pyproject = project / "pyproject.toml"
    table = tomllib.loads(pyproject.read_text(encoding="utf-8")) if pyproject.is_file() else {}
    manifest = MANIFEST_TABLE in table.get("tool", {})
    declared = table.get("project", {})
    if "name" in declared and not {"name", "entry-points"} & set(declared.get("dynamic", [])):
        return ProjectMetadata(declared["name"], frozenset(declared.get("entry-points", {})), manifest)
    if not pyproject.is_file() and not (project / "setup.py").is_file() and not (project / "setup.cfg").is_file():
        return None
    with tempfile.TemporaryDirectory(prefix="vllm-plugin-metadata-") as scratch:
        (dist_info,) = install_privately(project, Path(scratch)).glob("*.dist-info")
        name = email.parser.HeaderParser().parsestr((dist_info / "METADATA").read_text(encoding="utf-8"))["Name"]
        entry_points = configparser.ConfigParser(delimiters=("=",), interpolation=None)
        entry_points.read(dist_info / "entry_points.txt", encoding="utf-8")
    return ProjectMetadata(name, frozenset(entry_points.sections()), manifest)


def project_distribution(project: Path) -> str:
    metadata = project_metadata(project)
    if metadata is None:
        raise RuntimeError(f"{project} has no pyproject.toml, setup.py or setup.cfg")
    return metadata.name


def is_vllm_plugin_project(project: Path) -> bool:
    """A project with a [tool.vllm-scaffold] manifest or an entry point in a `vllm.*` group."""
    try:
        metadata = project_metadata(project)
    except (RuntimeError, ValueError):  # does not parse or build, or does not make one dist-info
        return False
    return metadata is not None and metadata.is_vllm_plugin


def installed_in_environment(dist_name: str) -> bool:
    try:
        importlib.metadata.distribution(dist_name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def install_privately(project: Path, target: Path) -> Path:
    """`pip install --no-deps --target target project`, without a build-isolation download."""
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation"]
    command += ["--target", str(target), str(project)]
    completed = subprocess.run(command, capture_output=True, text=True, check=False)
    if completed.returncode != 0:
        raise RuntimeError(f"installing {project} failed:\n{completed.stdout}\n{completed.stderr}")
    return target


def expose(site: Path) -> None:
    """Puts `site` first on this process's import path and on PYTHONPATH for every child process."""
    if str(site) not in sys.path:
        sys.path.insert(0, str(site))
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if str(site) not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([str(site), *paths])
    importlib.invalidate_caches()


def release_cache_root() -> str | None:
    """A vLLM cache directory for the installed vLLM release alone (None when vLLM is not installed).

    vLLM caches what it learns about a model class (its "model info", found by importing vLLM in a fresh
    interpreter at every engine start that misses) in one file per class under VLLM_CACHE_ROOT, whatever the
    release. Test runs of two releases on one machine (a plugin tested against each release it supports) would
    then find each other's entry stale and pay that interpreter on every engine start; one directory per
    release keeps each cache warm. It sits in vLLM's default cache directory.
    """
    distributions = importlib.metadata.packages_distributions().get("vllm")
    if not distributions:
        return None
    version = importlib.metadata.version(distributions[0])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "vllm", f"release-{version}")


def entry_point_site(root: Path, distribution: str, group: str, name: str, target: str) -> Path:
    """A directory holding only the metadata of `distribution`, whose one entry point is `name = target`.

    On PYTHONPATH it makes vLLM load `target` as a plugin of `group` (e.g. `vllm.general_plugins`) in every
    process that sees it, without installing anything.
    """
    dist_info = root / f"{distribution.replace('-', '_')}-0.dist-info"
    dist_info.mkdir(parents=True, exist_ok=True)
    (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {distribution}\nVersion: 0\n", encoding="utf-8")
    (dist_info / "entry_points.txt").write_text(f"[{group}]\n{name} = {target}\n", encoding="utf-8")
    return root


def engine_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for an engine subprocess: this one, offline, in-process by default, plus `extra`."""
    env = {**os.environ, **ENGINE_ENV}
    env.update(extra or {})
    return env


def shutdown_engines(llms: list[object]) -> None:
    """Shuts down in-process `vllm.LLM` engines and frees what vLLM keeps per process, so another can start.

    Empties `llms` first, so the one garbage collection vLLM's cleanup runs can free the engines.
    """
    if not llms:
        return
    from vllm.distributed.parallel_state import cleanup_dist_env_and_memory

    while llms:
        llms.pop().llm_engine.engine_core.shutdown()  # type: ignore[attr-defined]
    cleanup_dist_env_and_memory()


def start_llm(**kwargs: Any) -> Any:
    """`vllm.LLM(**kwargs)` in this process, with the objects that exist before it frozen while it starts.

    vLLM runs five full garbage collections while it starts an engine; with torch, transformers and vLLM
    imported, each walks every object of the process (about a second of CPU in all on a small machine, more
    wall time when the machine is busy). Frozen (`gc.freeze`), the objects that were there before are skipped;
    they are unfrozen as soon as the engine is up, so nothing that becomes garbage later is kept.
    """
    from vllm import LLM

    gc.freeze()
    try:
        return LLM(**kwargs)
    finally:
        gc.unfreeze()


@contextlib.contextmanager
def in_process_llm(**kwargs: Any) -> Iterator[Any]:
    """A `vllm.LLM` in this process (engine core and worker included), shut down on exit.

    For a reference run inside a fixture of any scope: a fresh interpreter would pay vLLM's import again.
    """
    import pytest

    with pytest.MonkeyPatch.context() as patch:
        for key, value in ENGINE_ENV.items():
            patch.setenv(key, value)
        llms = [start_llm(**kwargs)]
        try:
            yield llms[0]
        finally:
            shutdown_engines(llms)


def run_python(
    code: str, *, env: Mapping[str, str] | None = None, timeout: float = 900, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Runs `code` as a script in a fresh interpreter (vLLM spawns workers, so keep a __main__ guard).

    Fails the calling test with the script's output when it exits non-zero or times out.
    """
    import pytest

    try:
        completed = subprocess.run(
            [sys.executable, "-c", code],
            env=dict(env) if env is not None else engine_environment(),
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=cwd,
            check=False,
        )
    except subprocess.TimeoutExpired as expired:
        output = (expired.stdout or b"").decode() if isinstance(expired.stdout, bytes) else expired.stdout or ""
        pytest.fail(f"script timed out after {timeout}s; output tail:\n{output[-6000:]}")
    if completed.returncode != 0:
        tail = (completed.stdout + completed.stderr)[-8000:]
        pytest.fail(f"script exited {completed.returncode}; output tail:\n{tail}")
    return completed
