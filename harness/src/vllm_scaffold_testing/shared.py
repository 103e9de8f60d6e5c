"""Engines and servers shared by every test of one module, so a test file pays each start-up once.

`module_llm(**overrides)` returns one in-process `vllm.LLM` on the tiny model per distinct set of overrides;
`module_server(args=(), env=None)` returns one OpenAI-compatible server per distinct arguments and
environment. Both are torn down when the module's last test has run; a failing test gets the shared
servers' log tails attached to its report.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from vllm_scaffold_testing import engine
from vllm_scaffold_testing.server import SERVER_DEFAULTS, OpenAIServer


@pytest.fixture(scope="module")
def module_llm(plugin_site: Path | None, tiny_llama: Path) -> Iterator[Callable[..., Any]]:
    """`module_llm(**overrides)`: an in-process `vllm.LLM` shared by the module's tests (one per overrides)."""
    engines: dict[str, Any] = {}
    with pytest.MonkeyPatch.context() as patch:
        for key, value in engine.ENGINE_ENV.items():
            patch.setenv(key, value)

        def get(**overrides: Any) -> Any:
            key = repr(sorted(overrides.items()))
            if key not in engines:
                engines[key] = engine.start_llm(**{"model": str(tiny_llama), **engine.TINY_ENGINE_KWARGS, **overrides})
            return engines[key]

        yield get
        llms = list(engines.values())
        engines.clear()
        engine.shutdown_engines(llms)


@pytest.fixture(scope="module")
def module_server(
    plugin_site: Path | None, tiny_llama: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[..., OpenAIServer]]:
    """`module_server(args=(), env=None)`: vLLM's HTTP server shared by the module's tests (one per settings)."""
    servers: dict[str, OpenAIServer] = {}
    logs = tmp_path_factory.mktemp("servers")

    def get(args: Sequence[str] = (), env: Mapping[str, str] | None = None) -> OpenAIServer:
        key = repr((tuple(args), sorted((env or {}).items())))
        if key not in servers:
            log = logs / f"server-{len(servers)}.log"
            servers[key] = OpenAIServer(tiny_llama, [*SERVER_DEFAULTS, *args], engine.engine_environment(env), log)
        return servers[key]

    get.servers = servers  # type: ignore[attr-defined]
    yield get
    for server in servers.values():
        server.stop()


@pytest.fixture(autouse=True)
def _attach_shared_server_logs(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if "module_server" not in request.fixturenames:
        return
    report = getattr(request.node, "rep_call", None)
    if report is None or not report.failed:
        return
    for server in request.getfixturevalue("module_server").servers.values():
        request.node.add_report_section("call", f"vllm server log ({server.log_path})", server.log_tail())
