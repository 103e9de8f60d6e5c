"""`MyKInt8ScaledMMLinearKernel`: an int8 W8A8 kernel for vLLM's linear-kernel selector.

`register()` is called by my_k's general plugin in every vLLM process and appends the class to vLLM's
int8 ScaledMM kernel lists for CUDA and CPU. The selector runs in the worker while quantized layers are built:
a quantization method with int8 weights and int8 activations (compressed-tensors W8A8, ...) calls
`init_int8_linear_kernel`, which walks the platform's list in order and takes the first kernel that is not in
VLLM_DISABLED_KERNELS and whose `is_supported` and `can_implement` both say yes. Registered kernels come after
every in-tree one, so this kernel is chosen only once VLLM_DISABLED_KERNELS names all the in-tree kernels
ahead of it: `python -c "from my_k.gemm.linear_kernel import disabled_kernels_value as v;
print(v('cpu'))"` prints the value (`cuda` for CUDA). `--linear-backend` cannot select it: its values form a
closed list of in-tree backends.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence

import torch
from vllm.model_executor.kernels.linear import register_linear_kernel
from vllm.model_executor.kernels.linear.scaled_mm.ScaledMMLinearKernel import (
    Int8ScaledMMLinearKernel,
    Int8ScaledMMLinearLayerConfig,
)
from vllm.model_executor.utils import replace_parameter
from vllm.platforms import PlatformEnum, current_platform

from my_k.gemm.kernel import (
    BACKENDS,
    int8_scaled_mm,
    quantize_per_tensor,
    quantize_per_token,
    select_backend,
)

# The in-tree int8 kernels ahead of this one, per platform: VLLM_DISABLED_KERNELS must name all of them.
IN_TREE_KERNELS: dict[str, tuple[str, ...]] = {
    "cpu": (
        "ZentorchInt8ScaledMMLinearKernel",
        "CPUInt8ScaledMMLinearKernel",
    ),
    "cuda": (
        "CutlassInt8ScaledMMLinearKernel",
        "TritonInt8ScaledMMLinearKernel",
        "HummingInt8ScaledMMLinearKernel",
    ),
}
PLATFORMS: dict[str, PlatformEnum] = {"cpu": PlatformEnum.CPU, "cuda": PlatformEnum.CUDA}
# Compute capability 8.0 (Ampere): int8 tensor-core MMA in Triton.
MIN_CUDA_CAPABILITY = 80
# auto (Triton when it can run on the layer's device, else torch), triton, or torch.
BACKEND_ENV = "MY_K_GEMM_BACKEND"


def disabled_kernels_value(platform: str) -> str:
    """The VLLM_DISABLED_KERNELS value that lets the selector reach this kernel on `platform` (cpu, cuda)."""
    return ",".join(IN_TREE_KERNELS[platform])


def register() -> None:
    """Appends the kernel to vLLM's int8 ScaledMM lists for CPU and CUDA in this process."""
    for platform in PLATFORMS.values():
        register_linear_kernel(MyKInt8ScaledMMLinearKernel, platform, "int8")


class MyKInt8ScaledMMLinearKernel(Int8ScaledMMLinearKernel):
    """Symmetric int8 activations (per token, or one static scale) times int8 weights (per channel or tensor).

    `calls` counts GEMMs per backend in this process: the tests read it through `LLM.apply_model` to show that
    the layers ran this kernel, not only that the selector picked it.
    """

    def __init__(self, c: Int8ScaledMMLinearLayerConfig, layer_param_names: Sequence[str]) -> None:
        super().__init__(c, layer_param_names)
        self.backend = os.environ.get(BACKEND_ENV, "auto")
        if self.backend not in BACKENDS:
            raise ValueError(f"{BACKEND_ENV}={self.backend!r}: use one of {', '.join(BACKENDS)}")
        self.calls: Counter[str] = Counter()

    @classmethod
    def is_supported(cls, compute_capability: int | None = None) -> tuple[bool, str | None]:
        # vLLM prefixes the reason with the class name; it is what a user reads when no kernel can be found.
        if current_platform.is_cpu():
            return True, None
        if not current_platform.is_cuda():
            return False, f"runs on CUDA and CPU only, not on {current_platform.device_name}"
        if compute_capability is not None and compute_capability < MIN_CUDA_CAPABILITY:
            return False, (
                f"needs compute capability {MIN_CUDA_CAPABILITY} or higher for int8 tensor cores, "
                f"this GPU has {compute_capability}"
            )
        return True, None

    @classmethod
    def can_implement(cls, c: Int8ScaledMMLinearLayerConfig) -> tuple[bool, str | None]:
        if not c.input_symmetric:
            return False, (
                "cannot apply asymmetric activation quantization (input zero points / azp): "
                "quantize activations symmetrically"
            )
        return True, None

    def process_weights_after_loading(self, layer: torch.nn.Module) -> None:
        weight_name, scale_name, input_scale_name, zero_point_name, azp_name = self.layer_param_names
        weight = torch.nn.Parameter(getattr(layer, weight_name).data.contiguous(), requires_grad=False)
        replace_parameter(layer, weight_name, weight)
        # One float32 scale per output channel, whatever the checkpoint stored: per-channel [N, 1], or one
        # scale per logical matrix of a fused layer (QKV, gate/up) when the weights are per-tensor.
        scale = getattr(layer, scale_name).data.to(torch.float32)
        if not self.config.is_channelwise:
            widths = torch.tensor(layer.logical_widths, device=scale.device)
            scale = torch.repeat_interleave(scale.reshape(-1).expand(len(layer.logical_widths)), widths)
        scale = torch.nn.Parameter(scale.reshape(-1).contiguous(), requires_grad=False)
        replace_parameter(layer, scale_name, scale)
        if self.config.is_static_input_scheme:
            input_scale = getattr(layer, input_scale_name).data.to(torch.float32).max()
            replace_parameter(layer, input_scale_name, torch.nn.Parameter(input_scale, requires_grad=False))
        else:
            setattr(layer, input_scale_name, None)
        setattr(layer, zero_point_name, None)  # symmetric only (can_implement)
        setattr(layer, azp_name, None)

    def apply_weights(
        self, layer: torch.nn.Module, x: torch.Tensor, bias: torch.Tensor | None = None
    ) -> torch.Tensor:
        weight, weight_scale, input_scale, _, _ = self._get_layer_params(layer)
        x_2d = x.reshape(-1, x.shape[-1])
        if input_scale is not None:
            x_q, x_scale = quantize_per_tensor(x_2d, input_scale)
        else:
            x_q, x_scale = quantize_per_token(x_2d)
        backend = select_backend(self.backend, x.device)
        self.calls[backend] += 1
        out = int8_scaled_mm(x_q, weight, x_scale, weight_scale, bias, x.dtype, backend=backend)
        return out.reshape(*x.shape[:-1], weight.shape[0])
