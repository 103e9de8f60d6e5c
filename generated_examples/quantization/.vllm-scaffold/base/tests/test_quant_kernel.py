"""The int8 weight-only GEMM against an eager float32 reference (no vLLM needed).

On CPU the Triton kernel runs under TRITON_INTERPRET=1 (set by the test harness) in float32; the `gpu` tests
run float16 and bfloat16 on CUDA with per-dtype tolerances. Shapes are odd on purpose: M = 1, and N and K that
are not multiples of any tile.
"""

from __future__ import annotations

import pytest
import torch

from my_q.quant.kernel import (
    dequantize,
    int8_weight_only_linear,
    quantize_per_channel,
    select_backend,
    traffic,
    triton_int8_weight_only_gemm,
)

# (M, N, K): small enough for the interpreter, none a multiple of its 16 x 64 x 64 tiles.
SHAPES = [(1, 1, 1), (1, 33, 47), (3, 70, 129), (17, 65, 100), (40, 130, 72)]
# Relative to the output's magnitude; bfloat16 keeps 8 mantissa bits.
TOLERANCE = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 2e-2}


def make_case(m: int, n: int, k: int, dtype: torch.dtype, device: str, bias: bool, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(m, k, generator=generator).to(device=device, dtype=dtype)
    weight_q, scale = quantize_per_channel(torch.randn(n, k, generator=generator))
    b = torch.randn(n, generator=generator).to(device=device, dtype=dtype) if bias else None
    return x, weight_q.to(device), scale.to(device), b


def reference(x, weight_q, scale, bias) -> torch.Tensor:
    out = x.float() @ dequantize(weight_q, scale).T
    return out + bias.float() if bias is not None else out


def assert_close(actual: torch.Tensor, expected: torch.Tensor, dtype: torch.dtype) -> None:
    assert actual.dtype == dtype and actual.shape == expected.shape
    error = (actual.float() - expected).abs().max().item()
    bound = TOLERANCE[dtype] * max(1.0, expected.abs().max().item())
    assert error <= bound, f"max |error| {error:.3g} > {bound:.3g}"


@pytest.mark.parametrize("bias", [False, True], ids=["no-bias", "bias"])
@pytest.mark.parametrize(("m", "n", "k"), SHAPES)
def test_triton_matches_reference_fp32(m: int, n: int, k: int, bias: bool) -> None:
    x, weight_q, scale, b = make_case(m, n, k, torch.float32, "cpu", bias)
    out = triton_int8_weight_only_gemm(x, weight_q, scale, b)
    assert_close(out, reference(x, weight_q, scale, b), torch.float32)


@pytest.mark.parametrize("backend", ["triton", "torch"])
def test_leading_dims_and_strided_activations(backend: str) -> None:
    x, weight_q, scale, b = make_case(6, 40, 24, torch.float32, "cpu", True)
    x3 = x.T.contiguous().T.reshape(2, 3, 24)  # column-major storage: the kernel reads it through its strides
    out = int8_weight_only_linear(x3, weight_q, scale, b, backend=backend)
    assert out.shape == (2, 3, 40)
    assert_close(out.reshape(6, 40), reference(x, weight_q, scale, b), torch.float32)


def test_quantize_per_channel_is_symmetric_and_bounded() -> None:
    weight = torch.randn(9, 31)
    weight[3] = 0.0  # an all-zero channel must not produce a zero scale
    weight_q, scale = quantize_per_channel(weight)
    assert weight_q.dtype == torch.int8 and scale.dtype == torch.float32 and scale.shape == (9,)
    assert weight_q.abs().max().item() == 127 and torch.all(scale > 0)
    assert torch.equal(weight_q[3], torch.zeros(31, dtype=torch.int8))
    # Rounding to the nearest step: every weight is within half a step of its dequantized value.
    assert torch.all((dequantize(weight_q, scale) - weight).abs() <= scale[:, None] / 2 + 1e-7)


def test_backend_selection() -> None:
    cpu = torch.device("cpu")
    assert select_backend("torch", cpu) == "torch"
    assert select_backend("auto", cpu) == "triton"  # the harness set TRITON_INTERPRET=1
    with pytest.raises(ValueError, match="unknown int8 GEMM backend"):
        select_backend("cutlass", cpu)


def test_forced_triton_without_interpreter_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRITON_INTERPRET")
    assert select_backend("auto", torch.device("cpu")) == "torch"
    with pytest.raises(RuntimeError, match="TRITON_INTERPRET=1"):
        select_backend("triton", torch.device("cpu"))


def test_rejects_unsupported_inputs() -> None:
    x, weight_q, scale, _ = make_case(2, 8, 16, torch.float32, "cpu", False)
    with pytest.raises(TypeError, match="activations"):
        int8_weight_only_linear(x.double(), weight_q, scale)
    with pytest.raises(ValueError, match="int8"):
        int8_weight_only_linear(x, weight_q.float(), scale)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize(("m", "n", "k"), [*SHAPES, (16, 4096, 4096), (128, 1000, 4096), (2048, 512, 333)])
def test_triton_matches_reference_on_cuda(m: int, n: int, k: int, dtype: torch.dtype) -> None:
    x, weight_q, scale, b = make_case(m, n, k, dtype, "cuda", True)
    out = int8_weight_only_linear(x, weight_q, scale, b, backend="triton")
    assert_close(out, reference(x, weight_q, scale, b), dtype)


@pytest.mark.parametrize(("bias", "expected"), [(False, (32 + 15 + 12, 66)), (True, (32 + 15 + 12 + 6, 72))])
def test_traffic_matches_a_hand_count(bias: bool, expected: tuple[int, int]) -> None:
    """M=2, N=3, K=5, fp16: x 10 and y 6 elements of 2 bytes, 15 weight bytes, 3 float32 scales (+ 3 fp16
    biases); 2 x 2 x 3 x 5 FLOPs of products, 6 scale multiplies (+ 6 bias adds)."""
    assert traffic(2, 3, 5, torch.float16, bias=bias) == expected
