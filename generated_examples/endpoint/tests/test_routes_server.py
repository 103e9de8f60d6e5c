"""`MyEndpointEndpoint` on vLLM's real OpenAI-compatible server, and only when VLLM_PLUGINS names it.

One server per VLLM_PLUGINS setting, shared by the module's tests: with `my_endpoint` named the routes answer
from the engine's configuration, bad input is a 400 and vLLM's own routes still work; with VLLM_PLUGINS
unset the routes do not exist (404: a second server, marked slow, which `pytest --slow` runs). A
factory-level test checks `init_state` without an engine.
"""

from __future__ import annotations

import asyncio
import tomllib
from argparse import Namespace
from pathlib import Path

import pytest

pytest.importorskip("vllm")

from fastapi import FastAPI  # noqa: E402
from starlette.datastructures import State  # noqa: E402
from vllm.plugins import load_endpoint_plugins  # noqa: E402

from my_endpoint.routes.plugin import PREFIX, STATE_KEY, MyEndpointEndpoint  # noqa: E402


@pytest.fixture(scope="module")
def vllm_plugins(plugin_project: Path) -> str:
    """Every entry point of this package that VLLM_PLUGINS filters: naming only the endpoint drops the rest.

    All `vllm.*` groups but `vllm.logits_processors`, which ignores VLLM_PLUGINS.
    """
    pyproject = tomllib.loads((plugin_project / "pyproject.toml").read_text(encoding="utf-8"))
    groups = pyproject["project"]["entry-points"]
    names = [name for group, entries in groups.items() if group.startswith("vllm.") for name in entries
             if group != "vllm.logits_processors"]  # fmt: skip
    assert "my_endpoint" in names and "my_endpoint" in names
    return ",".join(dict.fromkeys(names))


def test_loaded_only_when_named(plugin_site: object, vllm_plugins: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("VLLM_PLUGINS", raising=False)
    assert not any(isinstance(p, MyEndpointEndpoint) for p in load_endpoint_plugins(("generate",)))
    monkeypatch.setenv("VLLM_PLUGINS", vllm_plugins)
    assert any(isinstance(p, MyEndpointEndpoint) for p in load_endpoint_plugins(("generate",)))
    # required_tasks: a server that cannot generate (an embedding model) does not load it.
    assert not any(isinstance(p, MyEndpointEndpoint) for p in load_endpoint_plugins(("embed",)))


def test_without_an_engine_the_routes_answer_503() -> None:
    from fastapi.testclient import TestClient

    app = FastAPI()
    plugin = MyEndpointEndpoint()
    plugin.attach_router(app)
    state = State()
    asyncio.run(plugin.init_state(None, state, Namespace()))
    app.state = state
    assert getattr(app.state, STATE_KEY) is None
    assert TestClient(app).get(f"{PREFIX}/info").status_code == 503


@pytest.fixture
def enabled(module_server, vllm_plugins: str):
    return module_server(env={"VLLM_PLUGINS": vllm_plugins})


@pytest.fixture
def disabled(module_server):
    return module_server()


COMPLETION = {"prompt": "Hello world", "max_tokens": 3, "temperature": 0.0}


@pytest.mark.engine
def test_info_reports_the_served_model(enabled) -> None:
    status, body = enabled.get(f"{PREFIX}/info")
    assert status == 200, body
    assert body["plugin"] == "my_endpoint"
    assert body["max_model_len"] == 256 and body["max_num_seqs"] == 4  # the test server's settings
    assert "generate" in body["supported_tasks"]
    status, models = enabled.get("/v1/models")
    assert status == 200 and body["served_model_name"] == models["data"][0]["id"]


@pytest.mark.engine
def test_budget_answers_from_the_context_window(enabled) -> None:
    status, body = enabled.post(f"{PREFIX}/budget", {"prompt_tokens": 200, "max_tokens": 100})
    assert status == 200, body
    assert body == {"fits": False, "max_model_len": 256, "max_tokens_allowed": 56}
    status, body = enabled.post(f"{PREFIX}/budget", {"prompt_tokens": 10, "max_tokens": 20})
    assert status == 200 and body["fits"] is True, body


@pytest.mark.engine
@pytest.mark.parametrize(
    "bad",
    [{}, {"prompt_tokens": 0, "max_tokens": 5}, {"prompt_tokens": "many", "max_tokens": 5},
     {"prompt_tokens": 5, "max_tokens": 5, "unknown": 1}],
    ids=["missing", "zero", "not-a-number", "extra-field"],
)  # fmt: skip
def test_bad_input_is_400_not_500(enabled, bad: dict) -> None:
    status, body = enabled.post(f"{PREFIX}/budget", bad)
    assert status == 400, body


@pytest.mark.engine
def test_core_routes_still_work_with_the_plugin(enabled) -> None:
    status, body = enabled.post("/v1/completions", COMPLETION)
    assert status == 200 and body["choices"][0]["text"] is not None, body


@pytest.mark.engine
@pytest.mark.slow
def test_without_vllm_plugins_the_routes_do_not_exist(disabled) -> None:
    assert disabled.get(f"{PREFIX}/info")[0] == 404
    assert disabled.post(f"{PREFIX}/budget", {"prompt_tokens": 1, "max_tokens": 1})[0] == 404
    assert disabled.post("/v1/completions", COMPLETION)[0] == 200
