"""pytest plugin (entry point `pytest11`) with the fixtures every generated plugin's tests use.

Loaded in any pytest run of an environment where vllm-scaffold-testing is installed; it imports neither
vLLM nor Triton at load time, so kernel tests also run where vLLM is absent.

- `gpu` marker: skipped with a clear reason when CUDA is not available.
- `slow` marker and `--slow` option: tests that start extra processes (multiprocessing, tensor parallelism,
  the HTTP server) are deselected from a plain `pytest` run, so the inner loop stays short; `pytest --slow`
  (what the generated CI runs) runs them as well, and so does a `-m` expression that names `slow`.
- `--cuda-arch 80,89,90,100`: every Triton launch a test makes is also compiled for those NVIDIA
  architectures, without a GPU (see `vllm_scaffold_testing.cuda_checks`).
- Without CUDA, `TRITON_INTERPRET=1` is set before any test module imports Triton, so `@triton.jit`
  kernels run on CPU tensors through the interpreter.
- `tiny_llama`: a tiny random Llama with its tokenizer, built once per session (or once per cache
  directory named by VLLMSCAFFOLD_CACHE).
- `plugin_site`: the package under test, visible to this process and every process it starts.
- `engine_env`, `run_python`: engine subprocesses; `make_llm`: in-process engines torn down after the test;
  `openai_server`: vLLM's HTTP server, its log attached to the report when the test fails.
- `ray_engine_env`: environment for an engine script that starts its own Ray cluster (`local_ray_cluster`);
  `ray_cluster`: a separately started one, shared by the session. Both skip when Ray is not installed and
  fail the test when one of their Ray processes outlives it (after ending it). See `scale_out`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from vllm_scaffold_testing import engine, environ, scale_out, tiny_model
from vllm_scaffold_testing.attention import cpu_attention_override  # noqa: F401
from vllm_scaffold_testing.kernels import disabled_kernels  # noqa: F401
from vllm_scaffold_testing.server import SERVER_DEFAULTS, OpenAIServer
from vllm_scaffold_testing.shared import _attach_shared_server_logs, module_llm, module_server  # noqa: F401

_SITE = pytest.StashKey[Path | None]()
_CUDA_CHECKS = pytest.StashKey[Any]()


def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--slow",
        action="store_true",
        default=False,
        help="also run tests marked slow (multiprocessing, tensor parallelism, the HTTP server)",
    )
    parser.addoption(
        "--cuda-arch",
        metavar="ARCHS",
        default=None,
        help="also compile every Triton launch and declared CUDA configuration for these NVIDIA "
        "architectures, e.g. 80,89,90,100 (no GPU needed; results cached in $VLLMSCAFFOLD_CACHE)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gpu: needs a CUDA device; skipped without one")
    config.addinivalue_line(
        "markers", "slow: starts extra processes (multiprocessing, tensor parallelism, the HTTP server); needs --slow"
    )
    config.addinivalue_line("markers", "engine: starts a real vLLM engine")
    if "TRITON_INTERPRET" not in os.environ and not cuda_available():
        os.environ["TRITON_INTERPRET"] = "1"
    _use_release_cache()
    archs = config.getoption("cuda_arch", None)
    if archs:
        _register_cuda_checks(config, archs)
    # Before collection, so test modules can import the package under test.
    config.stash[_SITE] = _expose_plugin_under_test(Path(config.rootpath))


def _use_release_cache() -> None:
    """VLLM_CACHE_ROOT: this release's own directory (engine.release_cache_root), unless set to another place.

    A value naming another release's directory was inherited from a test run of that release (a suite that
    runs a package's tests against several releases): it is replaced, so each release keeps its own.
    """
    ours = engine.release_cache_root()
    current = os.environ.get("VLLM_CACHE_ROOT")
    if ours is None:
        return
    if current is None or (Path(current).parent == Path(ours).parent and Path(current).name.startswith("release-")):
        os.environ["VLLM_CACHE_ROOT"] = ours


def _register_cuda_checks(config: pytest.Config, archs: str) -> None:
    from vllm_scaffold_testing.cuda_checks import CudaCompileChecks
    from vllm_scaffold_testing.cuda_compile import parse_archs

    try:
        checks = CudaCompileChecks(parse_archs(archs))
    except ValueError as error:
        raise pytest.UsageError(f"--cuda-arch: {error}") from None
    checks.start()
    config.stash[_CUDA_CHECKS] = checks
    config.pluginmanager.register(checks, "vllm-scaffold-cuda-checks")


def pytest_unconfigure(config: pytest.Config) -> None:
    checks = config.stash.get(_CUDA_CHECKS, None)
    if checks is not None:
        checks.stop()
    site = config.stash.get(_SITE, None)
    if site is not None:
        shutil.rmtree(site, ignore_errors=True)


def _expose_plugin_under_test(root: Path) -> Path | None:
    """Installs the vLLM plugin at `root` privately unless the environment already has it; None if not a plugin."""
    if not engine.is_vllm_plugin_project(root):
        return None
    if engine.installed_in_environment(engine.project_distribution(root)):
        return None
    site = engine.install_privately(root, Path(tempfile.mkdtemp(prefix="vllm-plugin-site-")))
    engine.expose(site)
    return site


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _deselect_slow(config, items)
    if not any(item.get_closest_marker("gpu") for item in items) or cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device (torch.cuda.is_available() is False)")
    for item in items:
        if item.get_closest_marker("gpu"):
            item.add_marker(skip)


def _deselect_slow(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Without --slow, tests marked slow are deselected (reported as such), unless `-m` names the marker."""
    if config.getoption("slow") or "slow" in (config.getoption("markexpr") or ""):
        return
    slow = [item for item in items if item.get_closest_marker("slow")]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if not item.get_closest_marker("slow")]


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Directory of a tiny random-weight Llama (float32) and its tokenizer."""
    cache = environ.setting(environ.CACHE_ENV)
    base = Path(cache) if cache else tmp_path_factory.mktemp("models")
    return tiny_model.cached_tiny_llama(base)


@pytest.fixture(scope="session")
def plugin_project(pytestconfig: pytest.Config) -> Path:
    """The plugin package under test: the pytest root directory, which holds its pyproject.toml."""
    root = Path(pytestconfig.rootpath)
    if not (root / "pyproject.toml").is_file():
        pytest.fail(f"{root} has no pyproject.toml: run pytest from the plugin package's directory")
    return root


@pytest.fixture(scope="session")
def plugin_site(pytestconfig: pytest.Config, plugin_project: Path) -> Path | None:
    """The private directory the package under test was installed into (None: installed in the environment).

    Either way, this process and every process it starts see the package's entry points.
    """
    return pytestconfig.stash.get(_SITE, None)


@pytest.fixture
def engine_env(plugin_site: Path | None) -> dict[str, str]:
    """Environment for an engine subprocess: offline, plugin visible, multiprocessing off (override as needed)."""
    return engine.engine_environment()


@pytest.fixture
def run_python(engine_env: dict[str, str]) -> Callable[..., Any]:
    """`run_python(code, env=None, timeout=900)`: run a script in a fresh interpreter with the plugin visible."""

    def run(code: str, *, env: Mapping[str, str] | None = None, timeout: float = 900):
        return engine.run_python(code, env={**engine_env, **(env or {})}, timeout=timeout)

    return run


@pytest.fixture
def llm_kwargs(tiny_llama: Path) -> dict[str, Any]:
    """Keyword arguments of `vllm.LLM` for the tiny model on a small CPU machine."""
    return {"model": str(tiny_llama), **engine.TINY_ENGINE_KWARGS}


@pytest.fixture
def make_llm(
    plugin_site: Path | None, llm_kwargs: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[..., Any]]:
    """`make_llm(**overrides)`: an in-process `vllm.LLM` on the tiny model, shut down after the test."""
    for key, value in engine.ENGINE_ENV.items():
        monkeypatch.setenv(key, value)
    created: list[Any] = []

    def make(**overrides: Any) -> Any:
        llm = engine.start_llm(**{**llm_kwargs, **overrides})
        created.append(llm)
        return llm

    yield make
    engine.shutdown_engines(created)


@pytest.fixture
def openai_server(
    request: pytest.FixtureRequest, tiny_llama: Path, engine_env: dict[str, str], tmp_path: Path
) -> Iterator[Callable[..., OpenAIServer]]:
    """`openai_server(args=(), env=None)`: vLLM's OpenAI server on the tiny model, stopped after the test."""
    servers: list[OpenAIServer] = []

    def start(args: Sequence[str] = (), env: Mapping[str, str] | None = None) -> OpenAIServer:
        log = tmp_path / f"server-{len(servers)}.log"
        server = OpenAIServer(tiny_llama, [*SERVER_DEFAULTS, *args], {**engine_env, **(env or {})}, log)
        servers.append(server)
        return server

    yield start
    failed = getattr(request.node, "rep_call", None) is not None and request.node.rep_call.failed
    for server in servers:
        server.stop()
        if failed:
            request.node.add_report_section("call", f"vllm server log ({server.log_path})", server.log_tail())


@pytest.fixture(scope="session")
def ray_platform_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory that, on PYTHONPATH, makes vLLM run on `RayCpuPlatform`; skips the test without Ray."""
    if not scale_out.ray_available():
        pytest.skip("Ray is not installed: pip install 'vllm-scaffold-testing[ray]'")
    return scale_out.ray_platform_site(tmp_path_factory.mktemp("ray-platform"))


@pytest.fixture
def ray_engine_env(engine_env: dict[str, str], ray_platform_path: Path) -> Iterator[dict[str, str]]:
    """Environment for a script whose front end starts Ray itself with `scale_out.local_ray_cluster()`.

    After the test, no process of that cluster may be left: any that is gets ended and fails the test.
    """
    temp_dir = scale_out.new_ray_temp_dir()
    env = scale_out.with_path_first(engine_env, ray_platform_path)
    yield {**env, **scale_out.RAY_ENGINE_ENV, scale_out.RAY_TEMP_DIR_ENV: str(temp_dir)}
    _stop_and_check(temp_dir, "the engine script's Ray cluster")


@pytest.fixture(scope="session")
def ray_cluster(ray_platform_path: Path, plugin_site: Path | None) -> Iterator[scale_out.RayCluster]:
    """A Ray cluster started with `ray start --head` for the session, as in a multi-node deployment.

    Its nodes have vLLM and the Ray platform but not the privately installed package under test: that
    reaches the workers through `ray_cluster.runtime_env(plugin_site)`. Join it from an engine script with
    `scale_out.joined_ray_cluster(address, runtime_env)` and `ray_cluster.client_env` in the environment.
    """
    env = scale_out.with_path_first(engine.engine_environment(), ray_platform_path, drop=plugin_site)
    cluster = scale_out.RayCluster(env)
    yield cluster
    cluster.stop()
    _stop_and_check(cluster.temp_dir, "the separately started Ray cluster")


def _stop_and_check(temp_dir: Path, what: str) -> None:
    stragglers = scale_out.stop_cluster(temp_dir)
    shutil.rmtree(temp_dir, ignore_errors=True)
    if stragglers:
        pytest.fail(f"processes of {what} were still running after the test (now ended): {stragglers}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report
