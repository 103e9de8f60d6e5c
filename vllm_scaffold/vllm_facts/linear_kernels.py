"""vLLM's linear-kernel selector: the kernel kinds `register_linear_kernel` accepts, the module-level list each
kind appends to, and the in-tree kernels a registered one of the offered kinds comes after.

`doctor` checks `kernel_type` arguments against `KINDS` and reads the live tables by `table(kind)`; the
linear-kernel template names `AHEAD` in the `VLLM_DISABLED_KERNELS` value its tests and docs give. The
tables are the same in every verified release (tests/test_in_tree.py reads them from the installed source).
"""

from __future__ import annotations

KINDS: tuple[str, ...] = ("mp", "int8", "fp8", "mxfp8", "nvfp4", "mxfp4", "mxfp6")


def table(kind: str) -> str:
    """The module-level list `register_linear_kernel` appends to for `kind`."""
    return "_POSSIBLE_" + ("" if kind == "mp" else kind.upper() + "_") + "KERNELS"
