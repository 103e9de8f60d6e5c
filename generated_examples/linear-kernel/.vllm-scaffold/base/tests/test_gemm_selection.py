"""How vLLM's linear-kernel selector sees MyKInt8ScaledMMLinearKernel, without starting an engine.

The selector (`init_int8_linear_kernel`) is the function vLLM's int8 W8A8 schemes call while building a layer;
calling it here shows the priority order, the effect of VLLM_DISABLED_KERNELS and the reason strings a user
reads when no kernel fits. The kernel's weight processing and GEMM then run on a hand-built layer.
"""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("vllm")

from vllm.model_executor.kernels.linear import (  # noqa: E402
    _POSSIBLE_INT8_KERNELS,
    init_int8_linear_kernel,
)
from vllm.model_executor.kernels.linear.scaled_mm.ScaledMMLinearKernel import (  # noqa: E402
    Int8ScaledMMLinearLayerConfig,
)
from vllm.platforms import PlatformEnum  # noqa: E402

from my_k import vllm_plugin  # noqa: E402
from my_k.gemm.kernel import quantize_per_token  # noqa: E402
from my_k.gemm.linear_kernel import (  # noqa: E402
    IN_TREE_KERNELS,
    MyKInt8ScaledMMLinearKernel,
    disabled_kernels_value,
)

KERNEL = MyKInt8ScaledMMLinearKernel
PARAM_NAMES = ["weight", "weight_scale", "input_scale", "input_zero_point", "azp_adj"]


def layer_config(channelwise: bool, static_input: bool, symmetric: bool) -> Int8ScaledMMLinearLayerConfig:
    return Int8ScaledMMLinearLayerConfig(
        is_channelwise=channelwise, is_static_input_scheme=static_input, input_symmetric=symmetric
    )


def select(symmetric: bool = True) -> object:
    return init_int8_linear_kernel(
        is_channelwise=True, is_static_input_scheme=False, input_symmetric=symmetric, module_name="test"
    )


def test_registered_after_the_in_tree_kernels() -> None:
    vllm_plugin.register()
    for platform, name in ((PlatformEnum.CPU, "cpu"), (PlatformEnum.CUDA, "cuda")):
        names = [kernel.__name__ for kernel in _POSSIBLE_INT8_KERNELS[platform]]
        assert names.count(KERNEL.__name__) == 1, names
        ahead = names[: names.index(KERNEL.__name__)]
        assert ahead == list(IN_TREE_KERNELS[name])  # exactly what VLLM_DISABLED_KERNELS must name


def test_in_tree_kernel_wins_until_disabled(disabled_kernels) -> None:
    vllm_plugin.register()
    disabled_kernels(None)
    assert type(select()).__name__ in IN_TREE_KERNELS["cpu"]
    disabled_kernels(disabled_kernels_value("cpu"))
    assert type(select()) is KERNEL
    disabled_kernels(disabled_kernels_value("cpu").replace(",", ", "))  # vLLM does not strip spaces
    assert type(select()) is not KERNEL


def test_reasons_name_the_problem(disabled_kernels) -> None:
    vllm_plugin.register()
    config = layer_config(channelwise=True, static_input=False, symmetric=False)
    supported, reason = KERNEL.can_implement(config)
    assert not supported and "asymmetric activation quantization" in reason
    assert KERNEL.is_supported() == (True, None)  # CPU
    disabled_kernels(disabled_kernels_value("cpu"))
    with pytest.raises(ValueError, match=f"{KERNEL.__name__} cannot apply asymmetric"):
        select(symmetric=False)


class FusedLayer(torch.nn.Module):
    """What a compressed-tensors W8A8 scheme leaves on a fused layer before process_weights_after_loading."""

    def __init__(self, weight: torch.Tensor, weight_scale: torch.Tensor, widths: list[int], input_scale=None):
        super().__init__()
        self.logical_widths = widths
        self.weight = torch.nn.Parameter(weight, requires_grad=False)
        self.weight_scale = torch.nn.Parameter(weight_scale, requires_grad=False)
        self.input_scale = None if input_scale is None else torch.nn.Parameter(input_scale)
        self.input_zero_point = None
        self.azp_adj = None


def test_per_tensor_fused_weights_and_static_activations() -> None:
    generator = torch.Generator().manual_seed(0)
    widths = [24, 8, 8]  # q, k, v of a QKV layer, one weight scale each
    weight_q = torch.randint(-127, 128, (40, 32), generator=generator, dtype=torch.int8)
    per_tensor = torch.tensor([0.01, 0.02, 0.03])
    layer = FusedLayer(weight_q, per_tensor, widths, input_scale=torch.tensor([0.05]))
    kernel = KERNEL(layer_config(channelwise=False, static_input=True, symmetric=True), PARAM_NAMES)
    kernel.process_weights_after_loading(layer)
    assert layer.weight_scale.shape == (40,)
    expected_scales = [0.01, 0.01, 0.02, 0.02, 0.03, 0.03]  # first and last row of q, k and v
    assert layer.weight_scale[[0, 23, 24, 31, 32, 39]].tolist() == pytest.approx(expected_scales)

    x = torch.randn(5, 32, generator=generator)
    out = kernel.apply_weights(layer, x)
    x_q = torch.round(x / 0.05).clamp(-127, 127)
    expected = (x_q * 0.05) @ (weight_q.float() * layer.weight_scale[:, None]).T
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-4)
    assert kernel.calls == {"triton": 1}


def test_dynamic_per_token_activations_with_bias() -> None:
    generator = torch.Generator().manual_seed(1)
    weight_q = torch.randint(-127, 128, (20, 48), generator=generator, dtype=torch.int8)
    scale = torch.rand(20, 1, generator=generator) * 0.01
    layer = FusedLayer(weight_q, scale, [20])
    kernel = KERNEL(layer_config(channelwise=True, static_input=False, symmetric=True), PARAM_NAMES)
    kernel.process_weights_after_loading(layer)
    x, bias = torch.randn(2, 3, 48, generator=generator), torch.randn(20, generator=generator)
    out = kernel.apply_weights(layer, x, bias)
    x_q, x_scale = quantize_per_token(x.reshape(6, 48))
    expected = (x_q.float() * x_scale[:, None]) @ (weight_q.float() * scale).T + bias
    assert out.shape == (2, 3, 20)
    torch.testing.assert_close(out.reshape(6, 20), expected, rtol=1e-5, atol=1e-4)
