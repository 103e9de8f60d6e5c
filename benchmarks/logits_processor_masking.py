"""The logits-processor seam's masking kernel: Triton against eager torch, from the golden package.

    python benchmarks/logits_processor_masking.py

Runs `generated_examples/logits-processor/benchmarks/bench_logits.py` (what `new logits-processor my_lp`
generates) with that package's `src/` on the import path, so the numbers are those of the kernel users get.
On CUDA: logits [256, 128256] in fp32, fp16 and bf16. On CPU the kernel runs under TRITON_INTERPRET=1 and
the timings only show that the Triton and torch versions agree.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

GOLDEN = Path(__file__).resolve().parent.parent / "generated_examples" / "logits-processor"

if __name__ == "__main__":
    sys.path.insert(0, str(GOLDEN / "src"))
    runpy.run_path(str(GOLDEN / "benchmarks" / "bench_logits.py"), run_name="__main__")
