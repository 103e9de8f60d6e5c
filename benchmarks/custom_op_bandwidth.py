"""The custom-op seam's Triton kernels against vLLM's in-tree ops, both references in one run.

    python benchmarks/custom_op_bandwidth.py [--dtype bfloat16] [--peak-gbps 4800]

Runs the benchmark each generated package ships (`benchmarks/bench_custom_op.py`): the golden package
`generated_examples/custom-op` (SiluAndMul), then `new custom-op my_norm --data op=RMSNorm` rendered into a
temporary directory. Each runs in its own interpreter with its package's `src/` on the import path. On CUDA:
GB/s and share of peak for 1, 64 and 4096 tokens at hidden sizes 4096 and 14336. On CPU the kernels run
under TRITON_INTERPRET=1 on small shapes, and the timings only show that the ops run.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from vllm_scaffold.generate.scaffold import new_package

GOLDEN = Path(__file__).resolve().parent.parent / "generated_examples" / "custom-op"
SCRIPT = Path("benchmarks") / "bench_custom_op.py"


def run(package: Path) -> None:
    subprocess.run([sys.executable, str(package / SCRIPT), *sys.argv[1:]], cwd=package, check=True)


if __name__ == "__main__":
    run(GOLDEN)
    with tempfile.TemporaryDirectory() as scratch:
        norm = new_package("custom-op", "my_norm", Path(scratch) / "my_norm", {"op": "RMSNorm"}, dry_run=False).root
        run(norm)
