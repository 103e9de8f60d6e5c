"""The int8 W8A8 GEMM and the activation quantizers against eager references (no vLLM needed).

On CPU the Triton kernel runs under TRITON_INTERPRET=1 (set by the test harness); int8 products accumulate
exactly in int32, so only the float epilogue (scales, bias, output cast) differs from the reference. The
`gpu` tests run float16 and bfloat16 outputs on CUDA with per-dtype tolerances. Shapes are odd on purpose:
M = 1, and N and K that are not multiples of any tile.
"""

from __future__ import annotations

import pytest
import torch

from my_k.gemm.kernel import (
    int8_scaled_mm,
    quantize_per_tensor,
    quantize_per_token,
    select_backend,
    traffic,
    triton_int8_scaled_mm,
)

# (M, N, K): small enough for the interpreter, none a multiple of its 16 x 64 x 64 tiles.
SHAPES = [(1, 1, 1), (1, 33, 47), (3, 70, 129), (17, 65, 100), (40, 130, 72)]
# Relative to the output's magnitude.
TOLERANCE = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 2e-2}


def make_case(m: int, n: int, k: int, device: str, bias_dtype: torch.dtype | None, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    a_q = torch.randint(-127, 128, (m, k), generator=generator, dtype=torch.int8)
    w_q = torch.randint(-127, 128, (n, k), generator=generator, dtype=torch.int8)
    scale_a = torch.rand(m, generator=generator) * 0.02 + 1e-3
    scale_w = torch.rand(n, generator=generator) * 0.02 + 1e-3
    bias = torch.randn(n, generator=generator).to(bias_dtype) if bias_dtype is not None else None
    tensors = [a_q, w_q, scale_a, scale_w, bias]
    return [t.to(device) if t is not None else None for t in tensors]


def reference(a_q, w_q, scale_a, scale_w, bias) -> torch.Tensor:
    exact = a_q.cpu().to(torch.float64) @ w_q.cpu().to(torch.float64).T
    out = exact * scale_a.cpu().double()[:, None] * scale_w.cpu().double()[None, :]
    return (out + bias.cpu().double() if bias is not None else out).float()


def assert_close(actual: torch.Tensor, expected: torch.Tensor, dtype: torch.dtype) -> None:
    assert actual.dtype == dtype and actual.shape == expected.shape
    error = (actual.float().cpu() - expected).abs().max().item()
    bound = TOLERANCE[dtype] * max(1.0, expected.abs().max().item())
    assert error <= bound, f"max |error| {error:.3g} > {bound:.3g}"


@pytest.mark.parametrize("bias", [False, True], ids=["no-bias", "bias"])
@pytest.mark.parametrize(("m", "n", "k"), SHAPES)
def test_triton_matches_reference_fp32(m: int, n: int, k: int, bias: bool) -> None:
    a_q, w_q, scale_a, scale_w, b = make_case(m, n, k, "cpu", torch.float32 if bias else None)
    out = triton_int8_scaled_mm(a_q, w_q, scale_a, scale_w, b, torch.float32)
    assert_close(out, reference(a_q, w_q, scale_a, scale_w, b), torch.float32)


def test_torch_fallback_matches_reference() -> None:
    a_q, w_q, scale_a, scale_w, b = make_case(5, 40, 300, "cpu", torch.float32)
    out = int8_scaled_mm(a_q, w_q, scale_a, scale_w, b, torch.float32, backend="torch")
    assert_close(out, reference(a_q, w_q, scale_a, scale_w, b), torch.float32)


def test_transposed_weight_view_is_read_through_strides() -> None:
    a_q, w_q, scale_a, scale_w, _ = make_case(4, 24, 40, "cpu", None)
    w_view = w_q.T.contiguous().T  # same values, column-major storage
    out = triton_int8_scaled_mm(a_q, w_view, scale_a, scale_w, None, torch.float32)
    assert_close(out, reference(a_q, w_q, scale_a, scale_w, None), torch.float32)


def test_per_token_quantization_is_symmetric_and_bounded() -> None:
    x = torch.randn(7, 33)
    x[2] = 0.0  # an all-zero token must not produce a zero scale
    x_q, scale = quantize_per_token(x)
    assert x_q.dtype == torch.int8 and scale.shape == (7,) and torch.all(scale > 0)
    assert torch.equal(x_q[2], torch.zeros(33, dtype=torch.int8))
    assert torch.all(x_q.abs().amax(dim=1)[[0, 1, 3, 4, 5, 6]] == 127)
    assert torch.all((x_q.float() * scale[:, None] - x).abs() <= scale[:, None] / 2 + 1e-7)


def test_static_quantization_uses_the_given_scale_and_saturates() -> None:
    x = torch.tensor([[0.5, -1.0, 30.0]])
    x_q, scale = quantize_per_tensor(x, torch.tensor([0.1]))
    assert x_q.tolist() == [[5, -10, 127]] and scale.tolist() == pytest.approx([0.1])


def test_quantized_linear_tracks_the_float_product() -> None:
    generator = torch.Generator().manual_seed(1)
    x, weight = torch.randn(6, 96, generator=generator), torch.randn(50, 96, generator=generator)
    x_q, scale_x = quantize_per_token(x)
    w_q, scale_w = quantize_per_token(weight)  # per output channel = per row of the weight
    out = int8_scaled_mm(x_q, w_q, scale_x, scale_w, None, torch.float32, backend="triton")
    relative = (out - x @ weight.T).norm() / (x @ weight.T).norm()
    assert relative < 0.02, f"W8A8 relative error {relative:.3g}"


def test_backend_selection_and_input_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    cpu = torch.device("cpu")
    assert select_backend("auto", cpu) == "triton"  # the harness set TRITON_INTERPRET=1
    with pytest.raises(ValueError, match="unknown int8 GEMM backend"):
        select_backend("cublas", cpu)
    a_q, w_q, scale_a, scale_w, _ = make_case(2, 8, 16, "cpu", None)
    with pytest.raises(ValueError, match="int8"):
        int8_scaled_mm(a_q.float(), w_q, scale_a, scale_w)
    monkeypatch.delenv("TRITON_INTERPRET")
    assert select_backend("auto", cpu) == "torch"
    with pytest.raises(RuntimeError, match="TRITON_INTERPRET=1"):
        select_backend("triton", cpu)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize(("m", "n", "k"), [*SHAPES, (16, 4096, 4096), (128, 1000, 4096), (2048, 512, 333)])
def test_triton_matches_reference_on_cuda(m: int, n: int, k: int, dtype: torch.dtype) -> None:
    a_q, w_q, scale_a, scale_w, b = make_case(m, n, k, "cuda", dtype)
    out = int8_scaled_mm(a_q, w_q, scale_a, scale_w, b, dtype, backend="triton")
    assert_close(out, reference(a_q, w_q, scale_a, scale_w, b), dtype)


@pytest.mark.parametrize(
    ("bias", "expected"), [(False, (10 + 15 + 20 + 12, 72)), (True, (10 + 15 + 20 + 18, 78))]
)
def test_traffic_matches_a_hand_count(bias: bool, expected: tuple[int, int]) -> None:
    """M=2, N=3, K=5, fp16 out: a_q 10 and w_q 15 bytes, 2 + 3 float32 scales, y 6 x 2 bytes (+ 3 fp16
    biases); 2 x 2 x 3 x 5 ops of products, 2 scale multiplies (+ 1 bias add) for each of the 6 outputs."""
    assert traffic(2, 3, 5, torch.float16, bias=bias) == expected
