"""The resolver inside vLLM's OpenAI server: a request naming an adapter loads it and generates with it.

One server on the tiny model with --enable-lora and VLLM_ALLOW_RUNTIME_LORA_UPDATING=1, and
MY_LORA_ADAPTER_DIR naming a directory that holds one adapter written offline. The adapter changes
greedy tokens, so a completion that differs from the base model's proves the resolver was reached and the
adapter applied.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from vllm_scaffold_testing.lora import LORA_RANK, write_tiny_lora

from my_lora.lora.resolver import DIR_ENV

pytestmark = pytest.mark.engine

PROMPT = {"prompt": "Hello world", "max_tokens": 8, "temperature": 0.0}


def test_requests_naming_an_adapter_resolve_and_others_are_refused(
    openai_server, tiny_llama: Path, tmp_path: Path
) -> None:
    root = tmp_path / "adapters"
    write_tiny_lora(tiny_llama, root / "tiny-lora")
    write_tiny_lora(tiny_llama, tmp_path / "outside")  # a real adapter the server must not reach
    server = openai_server(
        ["--enable-lora", "--max-lora-rank", str(LORA_RANK), "--max-loras", "1"],
        env={"VLLM_ALLOW_RUNTIME_LORA_UPDATING": "1", DIR_ENV: str(root)},
    )

    status, base = server.post("/v1/completions", {"model": str(tiny_llama), **PROMPT})
    assert status == 200, base
    status, adapted = server.post("/v1/completions", {"model": "tiny-lora", **PROMPT})
    assert status == 200, adapted
    assert adapted["model"] == "tiny-lora"
    assert adapted["choices"][0]["text"] != base["choices"][0]["text"], "the adapter changed nothing"
    status, models = server.get("/v1/models")
    assert "tiny-lora" in {model["id"] for model in models["data"]}

    status, missing = server.post("/v1/completions", {"model": "no-such-adapter", **PROMPT})
    assert status == 404, missing
    for escape in ("../outside", "tiny-lora/../../outside", str(tmp_path / "outside")):
        status, refused = server.post("/v1/completions", {"model": escape, **PROMPT})
        assert status == 404, (escape, refused)
    status, models = server.get("/v1/models")
    assert {model["id"] for model in models["data"]} == {str(tiny_llama), "tiny-lora"}
