"""The `my_q` quantization method: weight-only int8 with one symmetric scale per output channel.

`register()` is called by my_q's general plugin in every vLLM process. In the front end vLLM needs the
name to accept `--quantization my_q` (or a checkpoint whose config.json says
`"quant_method": "my_q"`) and builds MyQConfig there; in each worker the config hands
every linear layer a quantize method while the model is built. A registration made from your own script would
hold in the front end and in workers forked from it, but not in spawned ones (always on CPU).

Two ways in, told apart by where the config comes from:
- online: `LLM(model=FLOAT_CHECKPOINT, quantization="my_q")`. No quantization_config in
  config.json, so vLLM calls `MyQConfig()`; the float weights load as usual and are quantized in
  `process_weights_after_loading`.
- pre-quantized: a checkpoint written by `python -m my_q.quant.quantize SRC DST`. vLLM reads
  config.json's quantization_config, calls `MyQConfig.from_config`, and loads int8 weights and
  float32 scales straight into the layers.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

import torch
from vllm.model_executor.layers.linear import (
    LinearBase,
    LinearMethodBase,
    UnquantizedLinearMethod,
    register_weight_loader_v2_supported_method,
)
from vllm.model_executor.layers.quantization import register_quantization_config
from vllm.model_executor.layers.quantization.base_config import QuantizationConfig, QuantizeMethodBase
from vllm.model_executor.layers.quantization.utils.quant_utils import is_layer_skipped
from vllm.model_executor.layers.vocab_parallel_embedding import ParallelLMHead, UnquantizedEmbeddingMethod
from vllm.model_executor.parameter import ChannelQuantScaleParameter, ModelWeightParameter
from vllm.model_executor.utils import replace_parameter

from my_q.quant.format import CHECKPOINT_FORMAT, DEFAULT_IGNORE, METHOD_NAME
from my_q.quant.kernel import (
    ACTIVATION_DTYPES,
    BACKENDS,
    int8_weight_only_linear,
    quantize_per_channel,
    select_backend,
)

# auto (Triton when it can run on the layer's device, else torch), triton, or torch.
BACKEND_ENV = "MY_Q_QUANT_BACKEND"


def register() -> None:
    """Registers MyQConfig under "my_q" in this process."""
    register_quantization_config(METHOD_NAME)(MyQConfig)


class MyQConfig(QuantizationConfig):
    """Which layers are int8, and whether their weights arrive quantized (checkpoint) or in float (online)."""

    def __init__(
        self, ignore: list[str] | tuple[str, ...] = DEFAULT_IGNORE, checkpoint_quantized: bool = False
    ):
        super().__init__()
        self.ignore = list(ignore)
        self.checkpoint_quantized = checkpoint_quantized

    def __repr__(self) -> str:
        return f"MyQConfig(ignore={self.ignore}, checkpoint_quantized={self.checkpoint_quantized})"

    def get_name(self) -> str:
        return METHOD_NAME

    def get_supported_act_dtypes(self) -> list[torch.dtype]:
        return list(ACTIVATION_DTYPES)

    @classmethod
    def get_min_capability(cls) -> int:
        # Volta, Triton's floor on CUDA. vLLM skips the check on CPU, where there is no capability.
        return 70

    @staticmethod
    def get_config_filenames() -> list[str]:
        # The pre-quantized format lives in config.json, which vLLM reads first. No file means online
        # quantization: vLLM then calls MyQConfig() with the defaults above.
        return []

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> MyQConfig:
        """The config of a checkpoint's quantization_config; a format this method cannot load is refused."""
        found = {key: config.get(key) for key in CHECKPOINT_FORMAT}
        if config.get("quant_method") != METHOD_NAME or found != CHECKPOINT_FORMAT:
            raise ValueError(
                f"{METHOD_NAME} loads checkpoints whose quantization_config has quant_method={METHOD_NAME!r} "
                f"and {CHECKPOINT_FORMAT}; this one has quant_method={config.get('quant_method')!r} "
                f"and {found}. "
                "Write one with: python -m "
                "my_q.quant.quantize SRC DST"
            )
        return cls(ignore=config.get("ignore", []), checkpoint_quantized=True)

    @classmethod
    def override_quantization_method(
        cls, hf_quant_cfg: dict[str, Any], user_quant: str | None, hf_config: Any = None
    ) -> str | None:
        # vLLM asks every registered method, custom ones first, about every quantized checkpoint: answer
        # only for checkpoints of this method, and never against an explicit --quantization naming another.
        if hf_quant_cfg.get("quant_method") == METHOD_NAME and user_quant in (None, METHOD_NAME):
            return METHOD_NAME
        return None

    def is_skipped(self, prefix: str) -> bool:
        """Whether the layer at `prefix` stays unquantized (fused layers are matched through their parts)."""
        return is_layer_skipped(prefix, self.ignore, self.packed_modules_mapping, match_mode="suffix")

    def get_quant_method(self, layer: torch.nn.Module, prefix: str) -> QuantizeMethodBase | None:
        if isinstance(layer, LinearBase):
            # A linear layer must get a method: None makes vLLM refuse to build it.
            return UnquantizedLinearMethod() if self.is_skipped(prefix) else MyQLinearMethod(self)
        if isinstance(layer, ParallelLMHead):
            return UnquantizedEmbeddingMethod() if self.is_skipped(prefix) else MyQLinearMethod(self)
        return None  # embeddings, attention, MoE: vLLM's unquantized defaults


@register_weight_loader_v2_supported_method
class MyQLinearMethod(LinearMethodBase):
    """int8 weight [N, K] plus float32 scale [N] per layer; `apply` runs the int8 GEMM.

    Both parameters are vLLM parameter classes (ModelWeightParameter, ChannelQuantScaleParameter) and the
    class is registered for weight-loader v2, so vLLM places each checkpoint shard itself: q/k/v into QKV,
    gate/up into the merged MLP projection, and the slice of a tensor-parallel rank. `calls` counts GEMMs per
    backend in this process, which is how the tests show the layer really went through this method.
    """

    def __init__(self, config: MyQConfig):
        self.config = config
        self.backend = os.environ.get(BACKEND_ENV, "auto")
        if self.backend not in BACKENDS:
            raise ValueError(f"{BACKEND_ENV}={self.backend!r}: use one of {', '.join(BACKENDS)}")
        self.calls: Counter[str] = Counter()

    def create_weights(
        self,
        layer: torch.nn.Module,
        input_size_per_partition: int,
        output_partition_sizes: list[int],
        input_size: int,
        output_size: int,
        params_dtype: torch.dtype,
        **extra_weight_attrs: Any,
    ) -> None:
        weight_loader = extra_weight_attrs["weight_loader"]
        rows = sum(output_partition_sizes)
        layer.logical_widths = output_partition_sizes
        weight_dtype = torch.int8 if self.config.checkpoint_quantized else params_dtype
        weight = ModelWeightParameter(
            data=torch.empty(rows, input_size_per_partition, dtype=weight_dtype),
            input_dim=1,
            output_dim=0,
            weight_loader=weight_loader,
        )
        layer.register_parameter("weight", weight)
        if self.config.checkpoint_quantized:
            scale = ChannelQuantScaleParameter(
                data=torch.empty(rows, dtype=torch.float32), output_dim=0, weight_loader=weight_loader
            )
            layer.register_parameter("weight_scale", scale)

    def process_weights_after_loading(self, layer: torch.nn.Module) -> None:
        if self.config.checkpoint_quantized:
            return
        # Online: every shard of this rank is loaded; quantize it in place of the float weight.
        weight_q, scale = quantize_per_channel(layer.weight.data)
        replace_parameter(layer, "weight", weight_q)
        layer.register_parameter("weight_scale", torch.nn.Parameter(scale, requires_grad=False))

    def apply(
        self, layer: torch.nn.Module, x: torch.Tensor, bias: torch.Tensor | None = None
    ) -> torch.Tensor:
        backend = select_backend(self.backend, x.device)
        self.calls[backend] += 1
        return int8_weight_only_linear(x, layer.weight, layer.weight_scale, bias, backend=backend)
