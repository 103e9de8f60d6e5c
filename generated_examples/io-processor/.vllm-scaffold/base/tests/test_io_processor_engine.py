"""`my_io` inside vLLM: a tiny pooling model offline and behind the server's /pooling endpoint.

The tiny Llama becomes an embedding model with `runner="pooling", convert="embed"`. The processor's answer
is compared with vLLM's own `embed` output cut to the requested width and renormalised: equal vectors in
the processor's response format prove the request went through `parse_data`, `pre_process`, the engine
and `post_process`. The server test is marked slow (`pytest --slow` runs it).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from my_io.io_processor.processor import truncate_and_normalise

pytestmark = pytest.mark.engine

POOLING = {"runner": "pooling", "convert": "embed"}
TEXTS = ["Hello world", "The quick brown fox jumps over the lazy dog."]
DIMENSIONS = 16


def reference(embeddings: list[list[float]], dimensions: int) -> list[list[float]]:
    return [truncate_and_normalise(torch.tensor(e), dimensions).tolist() for e in embeddings]


def check(response: dict, expected: list[list[float]], prompt_tokens: list[int] | None = None) -> None:
    embeddings = response["embeddings"]
    assert [e["index"] for e in embeddings] == list(range(len(expected)))
    assert all(e["dimensions"] == len(expected[0]) for e in embeddings)
    for got, want in zip(embeddings, expected, strict=True):
        torch.testing.assert_close(torch.tensor(got["embedding"]), torch.tensor(want), rtol=1e-4, atol=1e-5)
    if prompt_tokens is not None:
        assert [e["prompt_tokens"] for e in embeddings] == prompt_tokens


def test_offline_by_argument_and_by_config_key(make_llm, tiny_llama: Path, tmp_path: Path) -> None:
    llm = make_llm(**POOLING, io_processor_plugin="my_io")
    outputs = llm.embed(TEXTS)
    plain = [output.outputs.embedding for output in outputs]
    tokens = [len(output.prompt_token_ids) for output in outputs]
    (result,) = llm.encode({"data": {"texts": TEXTS, "dimensions": DIMENSIONS}}, pooling_task="plugin")
    check(result.outputs.model_dump(), reference(plain, DIMENSIONS), tokens)
    with pytest.raises(ValueError, match="texts"):
        llm.encode({"data": {"texts": []}}, pooling_task="plugin")

    # The same model, asking for the processor in its config.json instead of an argument.
    keyed = tmp_path / "keyed-model"
    shutil.copytree(tiny_llama, keyed)
    config = json.loads((keyed / "config.json").read_text())
    (keyed / "config.json").write_text(json.dumps({**config, "io_processor_plugin": "my_io"}))
    llm = make_llm(**POOLING, model=str(keyed))
    (result,) = llm.encode({"data": {"texts": TEXTS}}, pooling_task="plugin")
    check(result.outputs.model_dump(), reference(plain, len(plain[0])))


@pytest.mark.slow
def test_pooling_endpoint(openai_server, tiny_llama: Path) -> None:
    server = openai_server(["--runner", "pooling", "--convert", "embed", "--io-processor-plugin", "my_io"])
    model = str(tiny_llama)
    status, plain = server.post("/v1/embeddings", {"model": model, "input": TEXTS})
    assert status == 200, plain
    expected = reference([item["embedding"] for item in plain["data"]], DIMENSIONS)

    request = {"model": model, "data": {"texts": TEXTS, "dimensions": DIMENSIONS}}
    status, answer = server.post("/pooling", request)
    assert status == 200, answer
    check(answer["data"], expected)

    for bad in ({"texts": []}, {"texts": TEXTS, "dimensions": 10**6}, {"texts": TEXTS, "colour": "red"}):
        status, error = server.post("/pooling", {"model": model, "data": bad})
        assert status == 400, (bad, error)
