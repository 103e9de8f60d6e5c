"""`MyOpSiluAndMul`: vLLM's `SiluAndMul` with its forward on the Triton kernel in `kernel.py`.

Imported in every vLLM process by `my_op.vllm_plugin.register` (the `vllm.general_plugins` entry
point), which calls `register()` below before the model is built. `register()` registers the class with
`SiluAndMul.register_oot`; from then on, every `SiluAndMul(...)` a model builds in that process is a
`MyOpSiluAndMul` (CustomOp.__new__ looks the constructed class's name up in op_registry_oot).

Which forward runs is decided once per module, at construction (CustomOp.dispatch_forward):
- op enabled, CUDA (and ROCm): forward_cuda, the Triton kernel;
- op enabled, CPU: forward_cpu, the same kernel under the Triton interpreter when TRITON_INTERPRET=1 (slow,
  for checking correctness), otherwise forward_native: Triton has no CPU backend to compile for;
- op disabled: forward_native, vLLM's own PyTorch implementation.
The op is enabled by `compilation_config.custom_ops`: '+SiluAndMul' / '-SiluAndMul' (the class name: after
register_oot, '+silu_and_mul' no longer names it), over the base 'all' (the default with
enforce_eager) or 'none' (the default under torch.compile with Inductor).
"""

from __future__ import annotations

from collections import Counter

import torch
from vllm.model_executor.custom_op import op_registry_oot
from vllm.model_executor.layers.activation import SiluAndMul

from my_op.custom_op import kernel

# Eager forward calls in this process, by path: "triton" (the kernel) and "native" (PyTorch). Calls made while
# torch.compile traces are not counted: a Python side effect there would break or be baked into the graph, and
# a compiled graph runs without calling forward again.
CALLS: Counter[str] = Counter()


def count(path: str) -> None:
    if not torch.compiler.is_compiling():
        CALLS[path] += 1


class MyOpSiluAndMul(SiluAndMul):
    """silu(x[..., :d]) * x[..., d:] in one Triton kernel: LlamaMLP's activation."""

    def forward_cuda(self, x: torch.Tensor) -> torch.Tensor:
        count("triton")
        return kernel.my_op(x)

    def forward_cpu(self, x: torch.Tensor) -> torch.Tensor:
        if kernel.INTERPRETED:
            return self.forward_cuda(x)
        return self.forward_native(x)

    @staticmethod
    def forward_native(x: torch.Tensor) -> torch.Tensor:
        count("native")
        return SiluAndMul.forward_native(x)


def register() -> None:
    """Makes every `SiluAndMul` built in this process a `MyOpSiluAndMul`; later calls do nothing.

    vLLM asserts on a second registration under one name, so this checks the registry first; another
    plugin's replacement of the same op is an error rather than a silent loss of one of the two.
    """
    registered = op_registry_oot.get(SiluAndMul.__name__)
    if registered is MyOpSiluAndMul:
        return
    if registered is not None:
        raise RuntimeError(
            f"SiluAndMul is already replaced by {registered.__module__}.{registered.__qualname__}; "
            "only one plugin can replace an op: uninstall one of them or leave it out of VLLM_PLUGINS"
        )
    SiluAndMul.register_oot(MyOpSiluAndMul)
