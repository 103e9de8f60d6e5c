"""`MyEndpointEndpoint`: routes under `/my_endpoint/` on vLLM's OpenAI-compatible server.

vLLM loads it in each API-server process, only when VLLM_PLUGINS names the entry point `my_endpoint`
(`vllm.endpoint_plugins` group): `build_app` calls the class (a zero-argument factory) and
`attach_router` after vLLM's own routers; `init_app_state` then calls `init_state` with the engine client.
VLLM_PLUGINS is one allowlist for every plugin group: name this package's other entry points there too.

Routes:
- `GET /my_endpoint/info`: the served model and its limits, read from the engine client;
- `POST /my_endpoint/budget`: given a prompt length in tokens and the `max_tokens` a client wants, whether
  the request fits the context window and the largest `max_tokens` that does. Bad input is a 400 (vLLM's
  server turns request-validation errors into 400s), not a 500.

This plugin only reads configuration; behaviour inside the engine belongs in a `vllm.general_plugins` entry.
"""

from __future__ import annotations

from argparse import Namespace
from typing import TYPE_CHECKING

from fastapi import APIRouter, FastAPI, HTTPException, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.datastructures import State

if TYPE_CHECKING:
    from vllm.engine.protocol import EngineClient
    from vllm.tasks import SupportedTask

PREFIX = "/my_endpoint"
STATE_KEY = "my_endpoint_limits"


class ModelLimits(BaseModel):
    """What `init_state` reads from the engine client once; answered by GET /my_endpoint/info."""

    plugin: str
    served_model_name: str
    max_model_len: int
    max_num_seqs: int
    supported_tasks: list[str]


class BudgetRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    prompt_tokens: int = Field(ge=1, description="length of the prompt, in tokens")
    max_tokens: int = Field(ge=1, description="how many tokens the client wants to generate")


class BudgetResponse(BaseModel):
    fits: bool
    max_model_len: int
    max_tokens_allowed: int


router = APIRouter(prefix=PREFIX, tags=["my_endpoint"])


def limits(request: Request) -> ModelLimits:
    found = getattr(request.app.state, STATE_KEY, None)
    if found is None:
        # init_state got no engine. vLLM passes None only on its render-only server, which does not load this
        # plugin (required_tasks): a caller of init_state(None, ...) outside vLLM's servers gets here.
        raise HTTPException(status_code=503, detail="my_endpoint: this server has no engine")
    return found


@router.get("/info")
async def info(request: Request) -> ModelLimits:
    return limits(request)


@router.post("/budget")
async def budget(body: BudgetRequest, request: Request) -> BudgetResponse:
    max_model_len = limits(request).max_model_len
    allowed = max(0, max_model_len - body.prompt_tokens)
    return BudgetResponse(
        fits=body.prompt_tokens + body.max_tokens <= max_model_len,
        max_model_len=max_model_len,
        max_tokens_allowed=allowed,
    )


class MyEndpointEndpoint:
    """The object vLLM's `load_endpoint_plugins` gets from the entry point (the class is the factory)."""

    # The entry-point name. vLLM never reads this: VLLM_PLUGINS and its logs use the entry-point name.
    name = "my_endpoint"
    # The routes read a generating model's limits: not loaded on servers without the generate task.
    required_tasks: tuple[SupportedTask, ...] | None = ("generate",)

    def attach_router(self, app: FastAPI) -> None:
        app.include_router(router)

    async def init_state(self, engine_client: EngineClient | None, state: State, args: Namespace) -> None:
        if engine_client is None:
            setattr(state, STATE_KEY, None)
            return
        model_config = engine_client.model_config
        setattr(
            state,
            STATE_KEY,
            ModelLimits(
                plugin=self.name,
                served_model_name=model_config.served_model_name,
                max_model_len=model_config.max_model_len,
                max_num_seqs=engine_client.vllm_config.scheduler_config.max_num_seqs,
                supported_tasks=list(await engine_client.get_supported_tasks()),
            ),
        )
