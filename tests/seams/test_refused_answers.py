"""Every seam's bad answers, in one table: `add` refuses each in one line naming the problem and the fix,
exits 2, and leaves the host package as it was."""

from __future__ import annotations

from pathlib import Path

import pytest
from seam_helpers import assert_refused, general_plugin_host

CUSTOM_OP = "is not an op this template replaces: use the in-tree class name SiluAndMul or RMSNorm"

# seam, component name, --data answer, what the one-line refusal says
REFUSED: list[tuple[str, str, str, str]] = [
    ("attention-backend", "fast_attn", "backend_name=my_attn", "backend_name 'my_attn' must be upper-case"),
    ("attention-backend", "fast_attn", "backend_name=FAST-ATTN", "backend_name 'FAST-ATTN' must be upper-case"),
    ("attention-backend", "fast_attn", "backend_name=FLASH_ATTN", "backend_name 'FLASH_ATTN' is one of vLLM's own backends"),
    ("attention-backend", "fast_attn", "backend_name=CPU_ATTN", "backend_name 'CPU_ATTN' is one of vLLM's own backends"),
    ("attention-backend", "fast_attn", "cudagraph_support=ALWAYS", "cudagraph_support"),
    ("attention-backend", "fast_attn", "backend_name=", "backend_name '' must be upper-case"),
    ("custom-op", "act", "op=silu_and_mul", f"'silu_and_mul' {CUSTOM_OP}"),
    ("custom-op", "act", "op=RotaryEmbedding", f"'RotaryEmbedding' {CUSTOM_OP}"),
    ("custom-op", "act", "op=rmsnorm", f"'rmsnorm' {CUSTOM_OP}"),
    ("endpoint", "admin", "route_prefix=admin", "must start with '/' and hold lower-case path segments"),
    ("endpoint", "admin", "route_prefix=/Admin/", "must start with '/' and hold lower-case path segments"),
    ("endpoint", "admin", "route_prefix=/v1/mine", "is inside a path vLLM's server already uses"),
    ("endpoint", "admin", "route_prefix=/health", "is inside a path vLLM's server already uses"),
    ("io-processor", "embed_io", "max_texts=0", "must be between 1 and 4096"),
    ("io-processor", "embed_io", "max_texts=5000", "must be between 1 and 4096"),
    ("kv-connector", "disk_kv", "connector_name=disk_connector", "connector_name must be a class name"),
    ("kv-connector", "disk_kv", "connector_name=NixlConnector", "connector_name NixlConnector is registered by vLLM itself"),
    ("kv-connector", "disk_kv", "connector_name=ExampleConnector", "connector_name ExampleConnector is registered by vLLM itself"),
    ("linear-kernel", "mm", "kind=fp8", "kind 'fp8' is not offered: use int8 (W8A8 scaled-mm) or mp (weight-only mixed precision)"),
    ("linear-kernel", "mm", "platform=rocm", "'platform' is not a question of this template"),
    ("logits-processor", "only", "param_name=Target-Token", "is not a valid parameter name: use lower-case letters"),
    ("logits-processor", "only", "param_name=1st", "is not a valid parameter name"),
    ("logits-processor", "only", "param_type=float", "param_type takes one of int, list[int], got 'float'"),
    ("lora-resolver", "adapters", "dir_env=lora_dir", "dir_env 'lora_dir' must be an upper-case environment variable name"),
    ("lora-resolver", "adapters", "dir_env=VLLM_LORA_DIR", "dir_env 'VLLM_LORA_DIR' is in vLLM's own VLLM_ namespace"),
    ("model", "tiny_lm", "architecture=LlamaForCausalLM", "architecture 'LlamaForCausalLM' is already a vLLM model"),
    ("model", "tiny_lm", "architecture=Qwen2ForCausalLM", "architecture 'Qwen2ForCausalLM' is already a vLLM model"),
    ("model", "tiny_lm", "architecture=tiny-lm", "architecture 'tiny-lm' must be a Python class name"),
    ("model", "tiny_lm", "architecture=tinyLM", "architecture 'tinyLM' must be a Python class name"),
    ("platform", "accel", "enable_env=accel_on", "enable_env 'accel_on' must be an upper-case environment variable name"),
    ("platform", "accel", "enable_env=VLLM_ACCEL", "enable_env 'VLLM_ACCEL' is in vLLM's own VLLM_ namespace"),
    ("quantization", "wo", "method_name=gptq", "'gptq' is a vLLM built-in quantization method"),
    ("quantization", "wo", "method_name=Int8", "method_name 'Int8' must be lower-case letters"),
    ("quantization", "wo", "method_name=8bit", "method_name '8bit' must be lower-case letters"),
    ("quantization", "wo", "ignore=lm_head,mlp/down", "ignore entry 'mlp/down' is not a module name"),
    ("scheduler", "prio", "priority_key=not-an-identifier", "priority_key must be an identifier"),
    ("scheduler", "prio", "max_wait_s=0", "max_wait_s must be a positive number of seconds"),
    ("scheduler", "prio", "max_wait_s=-3", "max_wait_s must be a positive number of seconds"),
    ("stat-logger", "usage", "path_env=stats_file", "must be an upper-case environment variable name such as HOST_USAGE_FILE"),
    ("stat-logger", "usage", "path_env=VLLM_STATS_FILE", "is in vLLM's own VLLM_ namespace"),
    ("stat-logger", "usage", "default_path= ", "default_path must not be empty"),
    ("stat-logger", "usage", 'default_path=a"b.jsonl', "default_path takes text without a double quote"),
]  # fmt: skip


@pytest.fixture(scope="module")
def refusing_host(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One host for the whole table: every case checks that the host is left exactly as it was."""
    return general_plugin_host(tmp_path_factory.mktemp("refusing"))


@pytest.mark.parametrize(("seam", "name", "answer", "message"), REFUSED, ids=[f"{r[0]}:{r[2]}" for r in REFUSED])
def test_a_bad_answer_is_refused_in_one_line_and_nothing_is_written(
    refusing_host: Path, seam: str, name: str, answer: str, message: str
) -> None:
    assert_refused(refusing_host, [seam, name, "--data", answer], message)
