"""`MyIoProcessor` on its own: request validation, post-processing, the entry point.

No engine: the processor gets a stand-in config that only answers the model width, and post-processing
gets stand-in pooling outputs. `test_io_processor_engine.py` runs the same processor inside vLLM.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
from collections.abc import AsyncGenerator
from types import SimpleNamespace

import pytest

pytest.importorskip("vllm")

import torch  # noqa: E402
from vllm.utils.import_utils import resolve_obj_by_qualname  # noqa: E402

from my_io.io_processor.entry import processor_class  # noqa: E402
from my_io.io_processor.processor import (  # noqa: E402
    MAX_TEXTS,
    MyIoProcessor,
    MyIoResponse,
    truncate_and_normalise,
)

WIDTH = 8


@pytest.fixture
def processor() -> MyIoProcessor:
    config = SimpleNamespace(model_config=SimpleNamespace(get_hidden_size=lambda: WIDTH))
    return MyIoProcessor(config, renderer=None)  # type: ignore[arg-type]


def pooled(*vectors: list[float]) -> list[SimpleNamespace]:
    """Stand-ins for PoolingRequestOutput: the pooled vector and three prompt tokens each."""
    pooled_outputs = [SimpleNamespace(data=torch.tensor(v)) for v in vectors]
    return [SimpleNamespace(outputs=o, prompt_token_ids=[1, 2, 3]) for o in pooled_outputs]


def test_the_entry_point_names_this_processor(plugin_site) -> None:
    entry_points = importlib.metadata.entry_points(group="vllm.io_processor_plugins")
    declared = {ep.name: ep.value for ep in entry_points}["my_io"]
    assert declared == "my_io.io_processor.entry:processor_class"
    assert resolve_obj_by_qualname(processor_class()) is MyIoProcessor


def test_valid_requests_become_prompts(processor: MyIoProcessor) -> None:
    request = processor.parse_data({"texts": ["a", "b"], "dimensions": 4})
    assert processor.pre_process(request, request_id="r1") == ["a", "b"]
    assert processor.pre_process(processor.parse_data({"texts": ["c"]})) == ["c"]


@pytest.mark.parametrize(
    "data",
    [
        {"texts": []},
        {"texts": ["x"] * (MAX_TEXTS + 1)},
        {"texts": "not a list"},
        {"texts": ["x"], "dimensions": 0},
        {"texts": ["x"], "dimensions": WIDTH + 1},
        {"texts": ["x"], "unknown": 1},
        {"prompt": "x"},
        None,
    ],
)
def test_bad_requests_raise_value_error(processor: MyIoProcessor, data: object) -> None:
    with pytest.raises(ValueError):
        processor.parse_data(data)


def test_post_process_truncates_and_renormalises(processor: MyIoProcessor) -> None:
    processor.pre_process(processor.parse_data({"texts": ["a", "b"], "dimensions": 2}), request_id="r")
    result = processor.post_process(pooled([3.0, 4.0, 9.0], [0.0, -2.0, 1.0]), request_id="r")
    assert isinstance(result, MyIoResponse)
    assert [e.embedding for e in result.embeddings] == [pytest.approx([0.6, 0.8]), pytest.approx([0.0, -1.0])]
    assert [(e.index, e.dimensions, e.prompt_tokens) for e in result.embeddings] == [(0, 2, 3), (1, 2, 3)]


def test_async_post_process_orders_outputs_by_index(processor: MyIoProcessor) -> None:
    outputs = pooled([1.0, 0.0], [0.0, 1.0])

    async def arrive_reversed() -> AsyncGenerator[tuple[int, SimpleNamespace]]:
        for item in reversed(list(enumerate(outputs))):
            yield item

    async def run() -> MyIoResponse:
        request = processor.parse_data({"texts": ["a", "b"]})
        await processor.pre_process_async(request, request_id="async")
        return await processor.post_process_async(arrive_reversed(), request_id="async")

    result = asyncio.run(run())
    assert [e.embedding[:2] for e in result.embeddings] == [[1.0, 0.0], [0.0, 1.0]]


@pytest.mark.parametrize("dimensions", [1, 5, 16])
def test_truncate_and_normalise_matches_torch(dimensions: int) -> None:
    vector = torch.randn(16, generator=torch.Generator().manual_seed(dimensions))
    expected = torch.nn.functional.normalize(vector[:dimensions], dim=0)
    torch.testing.assert_close(truncate_and_normalise(vector, dimensions), expected)
