"""The linear-kernel seam's int8 W8A8 Triton GEMM against torch's own int8 GEMM, in one run.

    python benchmarks/linear_kernel_gemm.py [--dtype float16|bfloat16]

Times the kernel module of the golden package (`generated_examples/linear-kernel`, i.e. what
`new linear-kernel my_k --defaults` generates): int8 activations and weights, int32 accumulation, per-token and
per-channel scales, output in float16/bfloat16. On CUDA: M in {1, 16, 128, 2048}, N = K = 4096, TFLOP/s
(TOPS) of the Triton GEMM and of `torch._scaled_mm` with the same operands and scales, and the Triton share
of it; where this torch build's `_scaled_mm` refuses int8, `torch._int_mm` plus the same scale epilogue in
torch is the reference instead (the line says which). On CPU the kernel runs under TRITON_INTERPRET=1 on
small shapes: those timings only show that it runs, nothing about GPU speed.
"""

from __future__ import annotations

from collections.abc import Callable

from quantization_gemm import report, seconds, setup


def torch_reference(a_q, w_q, scale_a, scale_w, dtype) -> tuple[str, Callable[[], object]]:
    """`torch._scaled_mm` on int8 operands when this build accepts them, else `_int_mm` + epilogue.

    `_int_mm` needs more than 16 rows: smaller M is zero-padded to 32 rows (timed with the padding).
    """
    import torch

    rows = a_q.shape[0]
    padded = torch.nn.functional.pad(a_q, (0, 0, 0, 32 - rows)) if rows <= 16 else a_q
    scale_padded = torch.nn.functional.pad(scale_a, (0, padded.shape[0] - rows))

    def scaled_mm():
        return torch._scaled_mm(a_q, w_q.T, scale_a=scale_a[:, None], scale_b=scale_w[None, :], out_dtype=dtype)

    def int_mm():
        acc = torch._int_mm(padded, w_q.T)
        return (acc.float() * scale_padded[:, None] * scale_w[None, :]).to(dtype)[:rows]

    try:
        scaled_mm()
        return "_scaled_mm", scaled_mm
    except RuntimeError:
        return "_int_mm+epilogue", int_mm


def main() -> None:
    bench = setup(__doc__.splitlines()[0], "linear-kernel/src/my_k/gemm/kernel.py")
    import torch

    kernel, cuda, device, dtype = bench.kernel, bench.cuda, bench.device, bench.dtype
    for m, n, k in bench.shapes:
        a_q, scale_a = kernel.quantize_per_token(torch.randn(m, k, device=device))
        w_q, scale_w = kernel.quantize_per_token(torch.randn(n, k, device=device))

        def triton_call(a_q=a_q, w_q=w_q, scale_a=scale_a, scale_w=scale_w):
            return kernel.triton_int8_scaled_mm(a_q, w_q, scale_a, scale_w, None, dtype)

        if cuda:
            name, reference = torch_reference(a_q, w_q, scale_a, scale_w, dtype)
        else:
            name = "float64 fallback"

            def reference(a_q=a_q, w_q=w_q, scale_a=scale_a, scale_w=scale_w):
                return kernel.torch_int8_scaled_mm(a_q, w_q, scale_a, scale_w, None, dtype)

        error = (triton_call().float() - reference().float()).abs().max().item()
        report("w8a8", m, n, k, seconds(triton_call, cuda, 5), seconds(reference, cuda, 5), name)
        print(f"{'':<14} max |triton - {name}| = {error:.3g}")


if __name__ == "__main__":
    main()
