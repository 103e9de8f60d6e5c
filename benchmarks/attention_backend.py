"""Benchmark of the attention-backend template's kernels, run from the golden copy.

`python benchmarks/attention_backend.py` runs `generated_examples/attention-backend/benchmarks/
bench_attention.py`, the script every generated attention backend ships: on CUDA, decode bandwidth (batch
64, context 4096, 32 query heads, 8 KV heads, head size 128, bfloat16) and prefill TFLOP/s next to
scaled_dot_product_attention and the attention backends vLLM's platform selects from (TRITON_ATTN and
FLASH_ATTN timed at kernel level); on CPU, Triton-interpreter timings that only show the kernels run.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "generated_examples/attention-backend/benchmarks/bench_attention.py"

if __name__ == "__main__":
    sys.dont_write_bytecode = True  # the golden copy must stay byte-identical to a fresh render
    runpy.run_path(str(SCRIPT), run_name="__main__")
