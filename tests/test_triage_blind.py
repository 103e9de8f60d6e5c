"""A fork of vLLM 0.32.0 with one edit per seam, written without reading the router, run through triage.

Each edit is what an inference team would change in vLLM's own files to get one capability (a new
attention backend, a per-request sampler parameter, a scheduling policy, ...). The fork is built from the
installed vLLM 0.32 sources: only the edited files are copied, with `vllm/_version.py` saying 0.32.0, as a
fork checkout would have them. Every edit is checked against the seam it was written for, and the lines that
only plug a new component into vLLM (a hook, an attach call, a built-in branch, a front-end caller of a worker
method) go with the component, with the plan's evidence for it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import vllm

VLLM_SOURCE = Path(vllm.__file__).parent
REPO_ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(
    vllm.__version__ != "0.32.0", reason="the fork is written against vLLM 0.32.0's sources"
)


@dataclass(frozen=True)
class Replace:
    """Replace the first `old` after `anchor` (or anywhere, without one) in a copied vLLM file."""

    path: str
    old: str
    new: str
    anchor: str = ""


@dataclass(frozen=True)
class Edit:
    """One capability of the fork: the seam it was written for, its changed files and its new files."""

    seam: str
    replaces: tuple[Replace, ...] = ()
    files: dict[str, str] = field(default_factory=dict)


ATTENTION_BACKEND = '''\
"""Triton paged attention with the block size Acme's memory system is tuned for."""

from vllm.v1.attention.backend import MultipleOf
from vllm.v1.attention.backends.triton_attn import (
    TritonAttentionBackend,
    TritonAttentionImpl,
)


class AcmeAttentionImpl(TritonAttentionImpl):
    """Triton attention that refuses sliding windows, which Acme's cache layout cannot serve."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if self.sliding_window != (-1, -1):
            raise ValueError("ACME_ATTN does not support sliding-window attention")


class AcmeAttentionBackend(TritonAttentionBackend):
    @staticmethod
    def get_supported_kernel_block_sizes(kv_cache_spec=None) -> list[int | MultipleOf]:
        return [64]

    @staticmethod
    def get_name() -> str:
        return "ACME_ATTN"

    @staticmethod
    def get_impl_cls() -> type[AcmeAttentionImpl]:
        return AcmeAttentionImpl
'''

SCHEDULER_QUEUE = '''

class ShortestPromptRequestQueue(FCFSRequestQueue):
    """Admits the waiting request with the fewest prompt tokens first (ties by arrival)."""

    def _shortest_index(self) -> int:
        if not self:
            raise IndexError("pop from an empty queue")
        return min(
            range(len(self)),
            key=lambda i: (self[i].num_prompt_tokens, self[i].arrival_time),
        )

    def pop_request(self) -> Request:
        index = self._shortest_index()
        request = self[index]
        del self[index]
        return request

    def peek_request(self) -> Request:
        return self[self._shortest_index()]


def create_request_queue(policy: SchedulingPolicy) -> RequestQueue:'''

KV_CONNECTOR = '''\
"""KV connector that keeps prompt-prefix KV blocks on Acme's shared NVMe pool."""

import os

from vllm.distributed.kv_transfer.kv_connector.v1.example_connector import (
    ExampleConnector,
)


class AcmeNVMeConnector(ExampleConnector):
    """The example connector's layout, rooted on the NVMe pool named by ACME_KV_POOL."""

    def __init__(self, vllm_config, role, kv_cache_config=None) -> None:
        super().__init__(vllm_config, role, kv_cache_config)
        pool = os.environ.get("ACME_KV_POOL")
        if pool:
            self._storage_path = pool
'''

KV_OFFLOAD = '''\
"""CPU offloading sized from a fraction of host memory instead of a byte count."""

import psutil

from vllm.v1.kv_offload.config import OffloadingConfig
from vllm.v1.kv_offload.cpu.spec import CPUOffloadingSpec


class HostFractionOffloadingSpec(CPUOffloadingSpec):
    """Takes `host_fraction` (0 to 1) from kv_connector_extra_config and sizes the CPU store with it."""

    def __init__(self, config: OffloadingConfig):
        fraction = float(config.extra_config.get("host_fraction", 0.25))
        if not 0.0 < fraction <= 1.0:
            raise ValueError(f"host_fraction must be in (0, 1], got {fraction}")
        config.extra_config["cpu_bytes_to_use"] = int(
            psutil.virtual_memory().available * fraction
        )
        super().__init__(config)
'''

MODEL = '''\
"""Acme's decoder: Llama with embeddings scaled by sqrt(hidden_size) before the first layer."""

import torch

from vllm.model_executor.models.llama import LlamaForCausalLM


class AcmeForCausalLM(LlamaForCausalLM):
    def __init__(self, *, vllm_config, prefix: str = "") -> None:
        super().__init__(vllm_config=vllm_config, prefix=prefix)
        self.embedding_scale = vllm_config.model_config.hf_config.hidden_size**0.5

    def embed_input_ids(self, input_ids: torch.Tensor) -> torch.Tensor:
        return super().embed_input_ids(input_ids) * self.embedding_scale
'''

TOOL_PARSER = '''\
"""Tool calls as Acme's chat template writes them: <|tool|>{json}<|/tool|>."""

import re

from vllm.tool_parsers.hermes_tool_parser import Hermes2ProToolParser


class AcmeToolParser(Hermes2ProToolParser):
    structural_tag_model = "acme"
    tool_call_start_token: str = "<|tool|>"
    tool_call_end_token: str = "<|/tool|>"
    tool_call_regex = re.compile(r"<\\|tool\\|>(.*?)<\\|/tool\\|>|<\\|tool\\|>(.*)", re.DOTALL)
'''

REASONING_PARSER = '''\
"""Reasoning as Acme's models write it: <|think|>...<|/think|> before the answer."""

from vllm.reasoning.basic_parsers import BaseThinkingReasoningParser


class AcmeReasoningParser(BaseThinkingReasoningParser):
    @property
    def start_token(self) -> str:
        return "<|think|>"

    @property
    def end_token(self) -> str:
        return "<|/think|>"
'''

CUSTOM_OP_KERNEL = '''\
"""Fused SiLU-and-multiply in Triton, faster than the CUDA op on Acme's wide hidden sizes."""

import torch

from vllm.triton_utils import tl, triton


@triton.jit
def _silu_and_mul_kernel(x_ptr, out_ptr, d, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < d
    gate = tl.load(x_ptr + row * 2 * d + cols, mask=mask).to(tl.float32)
    up = tl.load(x_ptr + row * 2 * d + d + cols, mask=mask).to(tl.float32)
    out = gate / (1.0 + tl.exp(-gate)) * up
    tl.store(out_ptr + row * d + cols, out.to(out_ptr.dtype.element_ty), mask=mask)


def silu_and_mul(x: torch.Tensor) -> torch.Tensor:
    d = x.shape[-1] // 2
    rows = x.numel() // x.shape[-1]
    x2 = x.reshape(rows, 2 * d).contiguous()
    out = torch.empty((rows, d), dtype=x.dtype, device=x.device)
    block = 1024
    _silu_and_mul_kernel[(rows, triton.cdiv(d, block))](x2, out, d, BLOCK=block)
    return out.reshape(*x.shape[:-1], d)
'''

QUANTIZATION = '''\
"""acme_int8: int8 weights, one float32 scale per output channel, dequantized at matmul time."""

from typing import Any

import torch

from vllm.model_executor.layers.linear import LinearBase, LinearMethodBase
from vllm.model_executor.layers.quantization import QuantizationMethods
from vllm.model_executor.layers.quantization.base_config import QuantizationConfig
from vllm.model_executor.parameter import ChannelQuantScaleParameter, ModelWeightParameter


class AcmeInt8Config(QuantizationConfig):
    def __init__(self, ignore: list[str]) -> None:
        super().__init__()
        self.ignore = ignore

    @classmethod
    def get_name(cls) -> QuantizationMethods:
        return "acme_int8"

    @classmethod
    def get_supported_act_dtypes(cls) -> list[torch.dtype]:
        return [torch.float16, torch.bfloat16]

    @classmethod
    def get_min_capability(cls) -> int:
        return 75

    @staticmethod
    def get_config_filenames() -> list[str]:
        return []

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> "AcmeInt8Config":
        return cls(ignore=list(config.get("ignore", [])))

    def get_quant_method(self, layer: torch.nn.Module, prefix: str):
        if isinstance(layer, LinearBase) and not any(n in prefix for n in self.ignore):
            return AcmeInt8LinearMethod()
        return None


class AcmeInt8LinearMethod(LinearMethodBase):
    def create_weights(
        self,
        layer: torch.nn.Module,
        input_size_per_partition: int,
        output_partition_sizes: list[int],
        input_size: int,
        output_size: int,
        params_dtype: torch.dtype,
        **extra_weight_attrs,
    ) -> None:
        weight_loader = extra_weight_attrs["weight_loader"]
        rows = sum(output_partition_sizes)
        layer.register_parameter(
            "weight",
            ModelWeightParameter(
                data=torch.empty(rows, input_size_per_partition, dtype=torch.int8),
                input_dim=1,
                output_dim=0,
                weight_loader=weight_loader,
            ),
        )
        layer.register_parameter(
            "weight_scale",
            ChannelQuantScaleParameter(
                data=torch.empty(rows, dtype=torch.float32),
                output_dim=0,
                weight_loader=weight_loader,
            ),
        )

    def apply(
        self, layer: torch.nn.Module, x: torch.Tensor, bias: torch.Tensor | None = None
    ) -> torch.Tensor:
        weight = layer.weight.to(x.dtype) * layer.weight_scale.to(x.dtype)[:, None]
        return torch.nn.functional.linear(x, weight, bias)
'''

LINEAR_KERNEL = '''\
"""W8A8 int8 GEMM on CPU through torch._int_mm, for hosts without oneDNN's int8 path."""

import torch

from vllm.model_executor.kernels.linear.scaled_mm.cpu import CPUInt8ScaledMMLinearKernel


class AcmeIntMMLinearKernel(CPUInt8ScaledMMLinearKernel):
    def process_weights_after_loading(self, layer: torch.nn.Module) -> None:
        self.linear_method = self._apply_int_mm

    def _apply_int_mm(
        self, layer: torch.nn.Module, x: torch.Tensor, bias: torch.Tensor | None = None
    ) -> torch.Tensor:
        w_q_name, w_s_name, _, _, _ = self.layer_param_names
        weight = getattr(layer, w_q_name)
        weight_scale = getattr(layer, w_s_name)
        x_scale = x.abs().amax(dim=-1, keepdim=True).clamp(min=1e-8) / 127.0
        x_q = (x / x_scale).round().clamp(-128, 127).to(torch.int8)
        acc = torch._int_mm(x_q, weight.t().contiguous())
        out = acc.to(torch.float32) * x_scale * weight_scale.view(1, -1)
        if bias is not None:
            out = out + bias
        return out.to(x.dtype)
'''

STAT_LOGGER = '''

class JsonlStatLogger(StatLoggerBase):
    """Appends one JSON line per logging interval to the file named by VLLM_ACME_STATS_FILE."""

    def __init__(self, vllm_config: VllmConfig, engine_index: int = 0):
        self.engine_index = engine_index
        self.path = os.environ["VLLM_ACME_STATS_FILE"]
        self.prompt_tokens = 0
        self.generation_tokens = 0
        self.running = 0
        self.waiting = 0

    def record(
        self,
        scheduler_stats: SchedulerStats | None,
        iteration_stats: IterationStats | None,
        mm_cache_stats: MultiModalCacheStats | None = None,
        engine_idx: int = 0,
    ):
        if iteration_stats is not None:
            self.prompt_tokens += iteration_stats.num_prompt_tokens
            self.generation_tokens += iteration_stats.num_generation_tokens
        if scheduler_stats is not None:
            self.running = scheduler_stats.num_running_reqs
            self.waiting = scheduler_stats.num_waiting_reqs

    def log_engine_initialized(self):
        self._write({"event": "engine_initialized"})

    def log(self):
        self._write(
            {
                "prompt_tokens": self.prompt_tokens,
                "generation_tokens": self.generation_tokens,
                "running": self.running,
                "waiting": self.waiting,
            }
        )
        self.prompt_tokens = self.generation_tokens = 0

    def _write(self, record: dict) -> None:
        record.update(engine=self.engine_index, time=time.time())
        with open(self.path, "a") as f:
            f.write(json.dumps(record) + "\\n")


class AggregatedLoggingStatLogger('''

ENDPOINT = '''\
"""GET /acme/info: what Acme's gateway needs to size requests for this server."""

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse

router = APIRouter(prefix="/acme")


@router.get("/info")
async def info(raw_request: Request) -> JSONResponse:
    engine_client = raw_request.app.state.engine_client
    model_config = engine_client.model_config
    return JSONResponse(
        {
            "model": model_config.model,
            "max_model_len": model_config.max_model_len,
            "max_num_seqs": engine_client.vllm_config.scheduler_config.max_num_seqs,
        }
    )


def attach_router(app: FastAPI) -> None:
    app.include_router(router)
'''

PLATFORM = '''\
"""Acme's accelerator card: a CPU-hosted device driven through Acme's runtime."""

from vllm.platforms.cpu import CpuPlatform
from vllm.platforms.interface import PlatformEnum


class AcmePlatform(CpuPlatform):
    _enum = PlatformEnum.OOT
    device_name: str = "acme"
    device_type: str = "cpu"
    dispatch_key: str = "CPU"

    @classmethod
    def get_device_name(cls, device_id: int = 0) -> str:
        return "Acme A1"
'''

PLATFORM_DETECTOR = '''

def acme_platform_plugin() -> str | None:
    """Acme's card is present when its runtime library can be found."""
    import ctypes.util

    if ctypes.util.find_library("acmert") is None:
        return None
    return "vllm.platforms.acme.AcmePlatform"


builtin_platform_plugins = {
    "acme": acme_platform_plugin,'''

LORA_RESOLVER = '''\
"""Resolves a LoRA name through a JSON map of adapter names to directories (VLLM_LORA_MAP_FILE)."""

import json
import os

from vllm import envs
from vllm.lora.request import LoRARequest
from vllm.lora.resolver import LoRAResolver, LoRAResolverRegistry


class MapFileResolver(LoRAResolver):
    def __init__(self, map_file: str) -> None:
        self.map_file = map_file

    async def resolve_lora(self, base_model_name: str, lora_name: str) -> LoRARequest | None:
        with open(self.map_file) as f:
            adapters = json.load(f)
        path = adapters.get(lora_name)
        if path is None or not os.path.isdir(path):
            return None
        return LoRARequest(lora_name=lora_name, lora_int_id=abs(hash(lora_name)), lora_path=path)


def register_map_file_resolver() -> None:
    map_file = os.environ.get("VLLM_LORA_MAP_FILE")
    if map_file and envs.VLLM_ALLOW_RUNTIME_LORA_UPDATING:
        LoRAResolverRegistry.register_resolver("Map File Resolver", MapFileResolver(map_file))
'''

IO_PROCESSOR = '''\
"""Built-in IO processor: texts in, their embeddings cut to `dimensions` and re-normalised out."""

from collections.abc import Sequence

import torch
from pydantic import BaseModel, Field

from vllm.outputs import PoolingRequestOutput
from vllm.plugins.io_processors.interface import IOProcessor


class TruncatedEmbedRequest(BaseModel):
    texts: list[str] = Field(min_length=1)
    dimensions: int = Field(ge=1)


class TruncatedEmbedProcessor(IOProcessor[TruncatedEmbedRequest, list[list[float]]]):
    def parse_data(self, data: object) -> TruncatedEmbedRequest:
        request = TruncatedEmbedRequest.model_validate(data)
        self.dimensions = request.dimensions
        return request

    def pre_process(self, prompt: TruncatedEmbedRequest, request_id=None, **kwargs):
        return [{"prompt": text} for text in prompt.texts]

    def post_process(
        self, model_output: Sequence[PoolingRequestOutput], request_id=None, **kwargs
    ) -> list[list[float]]:
        embeddings = []
        for output in model_output:
            vector = output.outputs.data[: self.dimensions].float()
            embeddings.append(torch.nn.functional.normalize(vector, dim=0).tolist())
        return embeddings
'''

ENV_OVERRIDE = """

# ============================================================
# Acme: allocator defaults for every vLLM process
# ============================================================
# Expandable segments stop the fragmentation Acme's long-context traffic causes;
# a user's own PYTORCH_CUDA_ALLOC_CONF still wins.
os.environ.setdefault("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
"""

EDITS: dict[str, Edit] = {
    "new ACME_ATTN attention backend": Edit(
        seam="attention-backend",
        files={"vllm/v1/attention/backends/acme_attn.py": ATTENTION_BACKEND},
        replaces=(
            Replace(
                "vllm/v1/attention/backends/registry.py",
                '    TRITON_ATTN = "vllm.v1.attention.backends.triton_attn.TritonAttentionBackend"\n',
                '    TRITON_ATTN = "vllm.v1.attention.backends.triton_attn.TritonAttentionBackend"\n'
                '    ACME_ATTN = "vllm.v1.attention.backends.acme_attn.AcmeAttentionBackend"\n',
            ),
        ),
    ),
    "per-request forced_token_id through the sampler": Edit(
        seam="logits-processor",
        replaces=(
            Replace(
                "vllm/sampling_params.py",
                "    extra_args: dict[str, Any] | None = None\n",
                "    forced_token_id: int | None = None\n"
                '    """If set, the request can only emit this token id."""\n'
                "    extra_args: dict[str, Any] | None = None\n",
            ),
            Replace(
                "vllm/v1/worker/gpu_input_batch.py",
                "        self.bad_words_token_ids: dict[int, list[list[int]]] = {}\n",
                "        self.bad_words_token_ids: dict[int, list[list[int]]] = {}\n"
                "        # req_index -> forced token id\n"
                "        self.forced_token_ids: dict[int, int] = {}\n",
            ),
            Replace(
                "vllm/v1/worker/gpu_input_batch.py",
                "        elif pooling_params := request.pooling_params:\n",
                "            if sampling_params.forced_token_id is not None:\n"
                "                self.forced_token_ids[req_index] = sampling_params.forced_token_id\n"
                "        elif pooling_params := request.pooling_params:\n",
            ),
            Replace(
                "vllm/v1/worker/gpu_input_batch.py",
                "        self.bad_words_token_ids.pop(req_index, None)\n",
                "        self.bad_words_token_ids.pop(req_index, None)\n"
                "        self.forced_token_ids.pop(req_index, None)\n",
            ),
            Replace(
                "vllm/v1/worker/gpu_input_batch.py",
                "        swap_dict_values(self.bad_words_token_ids, i1, i2)\n",
                "        swap_dict_values(self.bad_words_token_ids, i1, i2)\n"
                "        swap_dict_values(self.forced_token_ids, i1, i2)\n",
            ),
            Replace(
                "vllm/v1/worker/gpu_input_batch.py",
                "            bad_words_token_ids = self.bad_words_token_ids.pop(last_req_index, None)\n",
                "            forced_token_id = self.forced_token_ids.pop(last_req_index, None)\n"
                "            if forced_token_id is not None:\n"
                "                self.forced_token_ids[empty_index] = forced_token_id\n"
                "            bad_words_token_ids = self.bad_words_token_ids.pop(last_req_index, None)\n",
            ),
            Replace(
                "vllm/v1/worker/gpu_input_batch.py",
                "            bad_words_token_ids=self.bad_words_token_ids,\n",
                "            bad_words_token_ids=self.bad_words_token_ids,\n"
                "            forced_token_ids=self.forced_token_ids,\n",
            ),
            Replace(
                "vllm/v1/sample/metadata.py",
                "    spec_token_ids: list[list[int]] | None = None\n",
                "    spec_token_ids: list[list[int]] | None = None\n"
                "    # req_index -> the only token id the request may emit\n"
                "    forced_token_ids: dict[int, int] | None = None\n",
            ),
            Replace(
                "vllm/v1/sample/sampler.py",
                "        # Sample the next token.\n",
                "        if sampling_metadata.forced_token_ids:\n"
                "            for req_index, token_id in sampling_metadata.forced_token_ids.items():\n"
                '                logits[req_index].fill_(float("-inf"))\n'
                "                logits[req_index, token_id] = 0.0\n"
                "        # Sample the next token.\n",
                anchor="    def forward(",
            ),
        ),
    ),
    "shortest-prompt-first scheduling policy": Edit(
        seam="scheduler",
        replaces=(
            Replace(
                "vllm/v1/core/sched/request_queue.py",
                '    PRIORITY = "priority"\n',
                '    PRIORITY = "priority"\n    SHORTEST_PROMPT = "shortest_prompt"\n',
            ),
            Replace(
                "vllm/v1/core/sched/request_queue.py",
                "\n\ndef create_request_queue(policy: SchedulingPolicy) -> RequestQueue:",
                SCHEDULER_QUEUE,
            ),
            Replace(
                "vllm/v1/core/sched/request_queue.py",
                "    elif policy == SchedulingPolicy.FCFS:\n",
                "    elif policy == SchedulingPolicy.SHORTEST_PROMPT:\n"
                "        return ShortestPromptRequestQueue()\n"
                "    elif policy == SchedulingPolicy.FCFS:\n",
            ),
            Replace(
                "vllm/config/scheduler.py",
                'SchedulerPolicy = Literal["fcfs", "priority"]',
                'SchedulerPolicy = Literal["fcfs", "priority", "shortest_prompt"]',
            ),
        ),
    ),
    "AcmeNVMeConnector KV connector": Edit(
        seam="kv-connector",
        files={"vllm/distributed/kv_transfer/kv_connector/v1/acme_nvme_connector.py": KV_CONNECTOR},
        replaces=(
            Replace(
                "vllm/distributed/kv_transfer/kv_connector/factory.py",
                'KVConnectorFactory.register_connector(\n    "HF3FSKVConnector",',
                "KVConnectorFactory.register_connector(\n"
                '    "AcmeNVMeConnector",\n'
                '    "vllm.distributed.kv_transfer.kv_connector.v1.acme_nvme_connector",\n'
                '    "AcmeNVMeConnector",\n'
                ")\n"
                'KVConnectorFactory.register_connector(\n    "HF3FSKVConnector",',
            ),
        ),
    ),
    "HostFractionOffloadingSpec offloading spec": Edit(
        seam="kv-offload",
        files={"vllm/v1/kv_offload/host_fraction_spec.py": KV_OFFLOAD},
        replaces=(
            Replace(
                "vllm/v1/kv_offload/factory.py",
                'OffloadingSpecFactory.register_spec(\n    "TieringOffloadingSpec",',
                "OffloadingSpecFactory.register_spec(\n"
                '    "HostFractionOffloadingSpec",\n'
                '    "vllm.v1.kv_offload.host_fraction_spec",\n'
                '    "HostFractionOffloadingSpec",\n'
                ")\n"
                "OffloadingSpecFactory.register_spec(\n"
                '    "TieringOffloadingSpec",',
            ),
        ),
    ),
    "AcmeForCausalLM model": Edit(
        seam="model",
        files={"vllm/model_executor/models/acme.py": MODEL},
        replaces=(
            Replace(
                "vllm/model_executor/models/registry.py",
                '    "LlamaForCausalLM": ("llama", "LlamaForCausalLM"),\n',
                '    "AcmeForCausalLM": ("acme", "AcmeForCausalLM"),\n'
                '    "LlamaForCausalLM": ("llama", "LlamaForCausalLM"),\n',
            ),
        ),
    ),
    "acme tool parser": Edit(
        seam="tool-parser",
        files={"vllm/tool_parsers/acme_tool_parser.py": TOOL_PARSER},
        replaces=(
            Replace(
                "vllm/tool_parsers/__init__.py",
                '    "hermes": (\n',
                '    "acme": (\n        "acme_tool_parser",\n        "AcmeToolParser",\n    ),\n    "hermes": (\n',
            ),
        ),
    ),
    "acme reasoning parser": Edit(
        seam="reasoning-parser",
        files={"vllm/reasoning/acme_reasoning_parser.py": REASONING_PARSER},
        replaces=(
            Replace(
                "vllm/reasoning/__init__.py",
                '    "deepseek_r1": (  # name\n',
                '    "acme": (\n        "acme_reasoning_parser",\n        "AcmeReasoningParser",\n    ),\n'
                '    "deepseek_r1": (  # name\n',
            ),
        ),
    ),
    "Triton SiluAndMul.forward_cuda": Edit(
        seam="custom-op",
        files={"vllm/model_executor/layers/acme_silu_and_mul.py": CUSTOM_OP_KERNEL},
        replaces=(
            Replace(
                "vllm/model_executor/layers/activation.py",
                "        d = x.shape[-1] // 2\n"
                "        output_shape = x.shape[:-1] + (d,)\n"
                "        out = torch.empty(output_shape, dtype=x.dtype, device=x.device)\n"
                "        self.op(out, x)\n"
                "        return out\n",
                "        from vllm.model_executor.layers.acme_silu_and_mul import silu_and_mul\n\n"
                "        return silu_and_mul(x)\n",
                anchor="class SiluAndMul(",
            ),
        ),
    ),
    "acme_int8 quantization method": Edit(
        seam="quantization",
        files={"vllm/model_executor/layers/quantization/acme_int8.py": QUANTIZATION},
        replaces=(
            Replace(
                "vllm/model_executor/layers/quantization/__init__.py",
                'QuantizationMethods = Literal[\n    "awq",\n',
                'QuantizationMethods = Literal[\n    "acme_int8",\n    "awq",\n',
            ),
            Replace(
                "vllm/model_executor/layers/quantization/__init__.py",
                "    method_to_config: dict[str, type[QuantizationConfig]] = {\n",
                "    from .acme_int8 import AcmeInt8Config\n\n"
                "    method_to_config: dict[str, type[QuantizationConfig]] = {\n"
                '        "acme_int8": AcmeInt8Config,\n',
            ),
        ),
    ),
    "torch._int_mm int8 linear kernel on CPU": Edit(
        seam="linear-kernel",
        files={"vllm/model_executor/kernels/linear/scaled_mm/acme_int_mm.py": LINEAR_KERNEL},
        replaces=(
            Replace(
                "vllm/model_executor/kernels/linear/__init__.py",
                "from vllm.model_executor.kernels.linear.scaled_mm.cpu import (\n",
                "from vllm.model_executor.kernels.linear.scaled_mm.acme_int_mm import (\n"
                "    AcmeIntMMLinearKernel,\n"
                ")\n"
                "from vllm.model_executor.kernels.linear.scaled_mm.cpu import (\n",
            ),
            Replace(
                "vllm/model_executor/kernels/linear/__init__.py",
                "    PlatformEnum.CPU: [ZentorchInt8ScaledMMLinearKernel, CPUInt8ScaledMMLinearKernel],\n",
                "    PlatformEnum.CPU: [\n"
                "        ZentorchInt8ScaledMMLinearKernel,\n"
                "        AcmeIntMMLinearKernel,\n"
                "        CPUInt8ScaledMMLinearKernel,\n"
                "    ],\n",
            ),
        ),
    ),
    "JSON-lines stat logger": Edit(
        seam="stat-logger",
        replaces=(
            Replace(
                "vllm/v1/metrics/loggers.py",
                "import logging\nimport time\n",
                "import json\nimport logging\nimport os\nimport time\n",
            ),
            Replace(
                "vllm/v1/metrics/loggers.py",
                "\n\nclass AggregatedLoggingStatLogger(",
                STAT_LOGGER,
            ),
            Replace(
                "vllm/v1/metrics/loggers.py",
                "        custom_prometheus_logger: bool = False\n",
                '        if os.environ.get("VLLM_ACME_STATS_FILE"):\n'
                "            stat_logger_factories.append(JsonlStatLogger)\n"
                "        custom_prometheus_logger: bool = False\n",
            ),
        ),
    ),
    "GET /acme/info route": Edit(
        seam="endpoint",
        files={"vllm/entrypoints/serve/acme/__init__.py": "", "vllm/entrypoints/serve/acme/api_router.py": ENDPOINT},
        replaces=(
            Replace(
                "vllm/entrypoints/serve/__init__.py",
                "    attach_tokenize_router(app)\n",
                "    attach_tokenize_router(app)\n\n"
                "    from vllm.entrypoints.serve.acme.api_router import (\n"
                "        attach_router as attach_acme_router,\n"
                "    )\n\n"
                "    attach_acme_router(app)\n",
            ),
        ),
    ),
    "AcmePlatform": Edit(
        seam="platform",
        files={"vllm/platforms/acme.py": PLATFORM},
        replaces=(
            Replace(
                "vllm/platforms/__init__.py",
                "\n\nbuiltin_platform_plugins = {\n",
                PLATFORM_DETECTOR + "\n",
            ),
        ),
    ),
    "map-file LoRA resolver": Edit(
        seam="lora-resolver",
        files={"vllm/plugins/lora_resolvers/map_file_resolver.py": LORA_RESOLVER},
        replaces=(
            Replace(
                "vllm/plugins/lora_resolvers/filesystem_resolver.py",
                '        LoRAResolverRegistry.register_resolver("Filesystem Resolver", fs_resolver)\n',
                '        LoRAResolverRegistry.register_resolver("Filesystem Resolver", fs_resolver)\n'
                "    from vllm.plugins.lora_resolvers.map_file_resolver import (\n"
                "        register_map_file_resolver,\n"
                "    )\n\n"
                "    register_map_file_resolver()\n",
            ),
        ),
    ),
    "weight_checksums over collective_rpc": Edit(
        seam="worker-extension",
        replaces=(
            Replace(
                "vllm/v1/worker/gpu_worker.py",
                "    def check_health(self) -> None:\n",
                "    def weight_checksums(self) -> dict[str, str]:\n"
                '        """SHA-256 prefix of each parameter as this rank holds it."""\n'
                "        import hashlib\n\n"
                "        return {\n"
                "            name: hashlib.sha256(\n"
                "                param.detach().cpu().contiguous().view(torch.uint8).numpy()\n"
                "            ).hexdigest()[:16]\n"
                "            for name, param in self.get_model().named_parameters()\n"
                "        }\n\n"
                "    def check_health(self) -> None:\n",
            ),
            Replace(
                "vllm/entrypoints/llm.py",
                "    def collective_rpc(\n",
                "    def weight_checksums(self) -> list[dict[str, str]]:\n"
                '        """Each worker\'s parameter checksums, to check a weight update reached every rank."""\n'
                '        return self.collective_rpc("weight_checksums")\n\n'
                "    def collective_rpc(\n",
            ),
        ),
    ),
    "built-in truncated-embedding IO processor": Edit(
        seam="io-processor",
        files={"vllm/plugins/io_processors/truncated_embed.py": IO_PROCESSOR},
        replaces=(
            Replace(
                "vllm/plugins/io_processors/__init__.py",
                '    logger.debug("IOProcessor plugin to be loaded %s", model_plugin)\n',
                '    if model_plugin == "truncated_embed":\n'
                "        from vllm.plugins.io_processors.truncated_embed import (\n"
                "            TruncatedEmbedProcessor,\n"
                "        )\n\n"
                "        return TruncatedEmbedProcessor(vllm_config, renderer)\n\n"
                '    logger.debug("IOProcessor plugin to be loaded %s", model_plugin)\n',
            ),
        ),
    ),
    "allocator default in every process": Edit(
        seam="general-plugin",
        replaces=(
            Replace(
                "vllm/env_override.py",
                "    _install_force_first_config()\n",
                "    _install_force_first_config()\n" + ENV_OVERRIDE,
            ),
        ),
    ),
    "get_open_port honours ACME_PORT_BASE": Edit(
        seam="patch",
        replaces=(
            Replace(
                "vllm/utils/network_utils.py",
                "    reserved_port_range = _get_reserved_port_range()\n    port = _get_open_port()\n",
                "    reserved_port_range = _get_reserved_port_range()\n"
                '    port_base = os.environ.get("ACME_PORT_BASE")\n'
                "    port = _get_open_port(\n"
                "        start_port=int(port_base) if port_base else None, max_attempts=1000\n"
                "    )\n",
            ),
        ),
    ),
}


def write_fork(root: Path) -> Path:
    """Copy the files the edits touch from vLLM 0.32 into `root/vllm`, then apply every edit.

    `vllm/__init__.py` comes along unchanged, and `vllm/_version.py` says 0.32.0, as in a fork's checkout.
    """
    texts: dict[str, str] = {}
    for edit in EDITS.values():
        for rep in edit.replaces:
            if rep.path not in texts:
                texts[rep.path] = (VLLM_SOURCE.parent / rep.path).read_text()
            text = texts[rep.path]
            start = text.index(rep.anchor) if rep.anchor else 0
            at = text.index(rep.old, start)
            texts[rep.path] = text[:at] + rep.new + text[at + len(rep.old) :]
        for path, body in edit.files.items():
            assert not (VLLM_SOURCE.parent / path).exists(), f"{path} is vLLM's own file"
            texts[path] = body
    texts["vllm/__init__.py"] = (VLLM_SOURCE / "__init__.py").read_text()
    texts["vllm/_version.py"] = "__version__ = version = '0.32.0'\n__version_tuple__ = version_tuple = (0, 32, 0)\n"
    for path, text in texts.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return root


@pytest.fixture(scope="module")
def triage_plan(tmp_path_factory) -> dict:
    fork = write_fork(tmp_path_factory.mktemp("blind-fork"))
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    result = subprocess.run(
        [sys.executable, "-m", "vllm_scaffold", "triage", str(fork), "--base", "0.32.0", "--json"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def edit_paths(edit: Edit) -> set[str]:
    return {rep.path for rep in edit.replaces} | set(edit.files)


@pytest.mark.parametrize("name", list(EDITS))
def test_each_edit_routes_to_its_seam(triage_plan: dict, name: str):
    edit = EDITS[name]
    paths = edit_paths(edit)
    routes = {s["symbol"]: s["route"] for s in triage_plan["symbols"] if s["file"] in paths}
    assert routes, f"triage reported no symbol of {name}"
    wrong = {symbol: route for symbol, route in routes.items() if route != edit.seam}
    assert not wrong, f"{name}: meant for {edit.seam}, triage said {wrong}"


def test_wiring_and_queues_say_why(triage_plan: dict):
    """The lines that plug a component in, and the scheduling policy, are features with their evidence."""
    features = {
        (f["rule"], tuple(f["names"])): f["evidence"]
        for f in triage_plan["features"]
        if f["rule"] in {"wiring", "request_queues"}
    }
    assert features == {
        ("wiring", ("JsonlStatLogger",)): ["vllm.plugins.load_plugins_by_group"],
        ("wiring", ("attach_router",)): ["vllm.plugins.load_plugins_by_group"],
        ("wiring", ("TruncatedEmbedProcessor",)): ["vllm.plugins.load_plugins_by_group"],
        ("wiring", ("Worker.weight_checksums",)): [
            "vllm.v1.executor.abstract.Executor.collective_rpc",
            "vllm.v1.worker.worker_base.WorkerWrapperBase.init_worker",
        ],
        ("request_queues", ("ShortestPromptRequestQueue",)): [
            "vllm.config.scheduler.SchedulerConfig.scheduler_cls",
            "vllm.v1.core.sched.scheduler.Scheduler.__init__",
        ],
    }


def test_the_endpoint_keeps_its_routers_prefix(triage_plan: dict):
    commands = [c for c in triage_plan["plan"]["commands"] if " endpoint " in c]
    assert commands == ["vllm-scaffold add endpoint acme --data route_prefix=/acme"]


def test_only_the_port_patch_is_left(triage_plan: dict):
    """Every other edit is a component: the plan has one patch and nothing that stays a fork."""
    plan = triage_plan["plan"]
    assert (plan["patches"], plan["forks"]) == (1, 0)


def test_edits_touch_disjoint_files():
    """Each file belongs to one edit, so triage's per-file symbols name the edit they come from."""
    seen: dict[str, str] = {}
    for name, edit in EDITS.items():
        for path in edit_paths(edit):
            assert path not in seen, f"{path} is edited by both {seen[path]} and {name}"
            seen[path] = name


def test_every_seam_page_has_one_edit():
    seams = {page.stem for page in (REPO_ROOT / "docs" / "seams").glob("*.md")}
    assert sorted(edit.seam for edit in EDITS.values()) == sorted(seams)


def test_fork_edits_apply_to_vllm_sources(tmp_path):
    fork = write_fork(tmp_path)
    for edit in EDITS.values():
        for rep in edit.replaces:
            assert rep.new in (fork / rep.path).read_text()
