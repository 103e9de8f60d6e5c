"""`MyIoProcessor`: the IO processor behind the `my_io` entry point.

Loaded in vLLM's front end (the `LLM` process offline, the API server online) when the pooling IO
processors are set up and the model asks for `my_io`. It never runs in the engine core or the workers:
it turns a request's `data` into prompts before the engine sees them and the engine's pooled outputs into
the response after.

Request (`data` of a POST /pooling body, or `LLM.encode({"data": ...}, pooling_task="plugin")`):
    {"texts": ["...", ...], "dimensions": 64}        # dimensions optional: the model's full width
Response (`data` of the answer):
    {"embeddings": [{"index": 0, "embedding": [...], "dimensions": 64, "prompt_tokens": 5}, ...]}

The model runs its `embed` pooling task; each embedding is cut to the first `dimensions` components and
L2-normalised again, so every returned vector has unit length.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from pydantic import BaseModel, ConfigDict, Field
from vllm.config import VllmConfig
from vllm.outputs import PoolingRequestOutput
from vllm.plugins.io_processors.interface import IOProcessor
from vllm.pooling_params import PoolingParams
from vllm.renderers import BaseRenderer

MAX_TEXTS = 16


class MyIoRequest(BaseModel):
    """What a client sends as `data`; anything else is refused (HTTP 400 online)."""

    model_config = ConfigDict(extra="forbid")

    texts: list[str] = Field(min_length=1, max_length=MAX_TEXTS)
    dimensions: int | None = Field(default=None, ge=1)


class MyIoEmbedding(BaseModel):
    index: int
    embedding: list[float]
    dimensions: int
    prompt_tokens: int


class MyIoResponse(BaseModel):
    embeddings: list[MyIoEmbedding]


class MyIoProcessor(IOProcessor[MyIoRequest, MyIoResponse]):
    """Validates embedding requests, runs the model's `embed` task, truncates and renormalises the result."""

    def __init__(self, vllm_config: VllmConfig, renderer: BaseRenderer) -> None:
        super().__init__(vllm_config, renderer)
        self.hidden_size = vllm_config.model_config.get_hidden_size()
        # Each request's width from pre_process to post_process, by request id (None offline).
        self._dimensions: dict[str | None, int] = {}

    def parse_data(self, data: object) -> MyIoRequest:
        """Validates `data`; raises ValueError (pydantic's ValidationError is one): HTTP 400 online."""
        request = MyIoRequest.model_validate(data)
        if request.dimensions is not None and request.dimensions > self.hidden_size:
            raise ValueError(f"dimensions={request.dimensions} exceeds the model's width {self.hidden_size}")
        return request

    def merge_pooling_params(self, params: PoolingParams | None = None) -> PoolingParams:
        """Asks the model for its `embed` task."""
        merged = params or PoolingParams()
        merged.task = "embed"
        return merged

    def pre_process(self, prompt: MyIoRequest, request_id: str | None = None, **kwargs: object) -> list[str]:
        self._dimensions[request_id] = prompt.dimensions or self.hidden_size
        return list(prompt.texts)

    def post_process(
        self, model_output: Sequence[PoolingRequestOutput], request_id: str | None = None, **kwargs: object
    ) -> MyIoResponse:
        dimensions = self._dimensions.pop(request_id)
        embeddings = []
        for index, output in enumerate(model_output):
            vector = truncate_and_normalise(output.outputs.data, dimensions)
            embeddings.append(
                MyIoEmbedding(
                    index=index,
                    embedding=vector.tolist(),
                    dimensions=dimensions,
                    prompt_tokens=len(output.prompt_token_ids),
                )
            )
        return MyIoResponse(embeddings=embeddings)


def truncate_and_normalise(vector: torch.Tensor, dimensions: int) -> torch.Tensor:
    """The first `dimensions` components of `vector`, scaled to unit L2 norm (in float32)."""
    head = vector.reshape(-1)[:dimensions].float()
    return head / head.norm().clamp_min(1e-12)
