"""Times the Triton masking kernel of `my_lp.logits` against the eager torch version.

Not loaded by vLLM: run it by hand in an environment where the package is installed
(`pip install -e .`): `python benchmarks/logits_masking.py`. On CUDA it uses logits of shape
[256, 128256] (a Llama-3 vocabulary, a full decode batch) with half of the rows selected; without CUDA
it runs the kernel under TRITON_INTERPRET=1 on a small shape, where the numbers only show that both
versions agree, not how fast the kernel is.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from functools import partial

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

from my_lp.logits.kernel import mask_to_allowed_torch, mask_to_allowed_triton  # noqa: E402


def milliseconds(fn: Callable[[], object], cuda: bool, repeats: int) -> float:
    """Median time of `fn` over `repeats` runs after one warm-up run."""
    fn()
    times = []
    for _ in range(repeats):
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
        else:
            begin = time.perf_counter()
            fn()
            times.append((time.perf_counter() - begin) * 1e3)
    return sorted(times)[len(times) // 2]


def main() -> int:
    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    shape = (256, 128256) if cuda else (8, 1000)
    dtypes = (torch.float32, torch.float16, torch.bfloat16) if cuda else (torch.float32,)
    repeats = 50 if cuda else 5
    num_rows, vocab = shape
    generator = torch.Generator().manual_seed(0)
    rows = torch.randperm(num_rows, generator=generator)[: num_rows // 2].to(device)
    allowed = torch.randint(0, vocab, (rows.numel(), 1), generator=generator).to(device)
    where = torch.cuda.get_device_name() if cuda else "CPU, Triton interpreter: correctness only, not speed"
    print(f"mask_to_allowed, logits {list(shape)}, {rows.numel()} rows selected ({where})")
    print(f"{'dtype':>10} {'triton ms':>10} {'torch ms':>10} {'speed-up':>9}  same result")
    for dtype in dtypes:
        logits = torch.randn(shape, generator=generator).to(device=device, dtype=dtype)
        out_triton, out_torch = logits.clone(), logits.clone()
        triton_ms = milliseconds(partial(mask_to_allowed_triton, out_triton, rows, allowed), cuda, repeats)
        torch_ms = milliseconds(partial(mask_to_allowed_torch, out_torch, rows, allowed), cuda, repeats)
        same = torch.equal(out_triton, out_torch)
        name = str(dtype).removeprefix("torch.")
        print(f"{name:>10} {triton_ms:>10.3f} {torch_ms:>10.3f} {torch_ms / triton_ms:>8.2f}x  {same}")
        if not same:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
