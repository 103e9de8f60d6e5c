"""vLLM's linear-kernel selector: the kernel kinds `register_linear_kernel` accepts, the module-level list each
kind appends to, and the in-tree kernels a registered kernel of the kinds the template offers comes after.

`doctor` checks `kernel_type` arguments against `kinds(version)`, the kinds the release accepts (the fact
`linear-kernel-kinds` in facts.toml, checked against each release's source), and reads the live lists by
`table(kind)`; the
linear-kernel template renders `AHEAD` into the `VLLM_DISABLED_KERNELS` value its code, tests and docs give.
`AHEAD` is read from the engine-tested release's source: tests/test_in_tree.py compares it with the installed
vLLM's lists.
"""

from __future__ import annotations

from vllm_scaffold.vllm_facts.facts import holding


def kinds(version: str | None) -> tuple[str, ...]:
    """The `kernel_type` values `register_linear_kernel` of vLLM `version` accepts (None: the reference
    release's; a release the facts do not name: the newest older one's)."""
    return holding("linear-kernel-kinds", version).kinds


# kind -> platform -> the in-tree kernels of that list, in the order the selector tries them (vLLM 0.32).
AHEAD: dict[str, dict[str, tuple[str, ...]]] = {
    "int8": {
        "cpu": ("ZentorchInt8ScaledMMLinearKernel", "CPUInt8ScaledMMLinearKernel"),
        "cuda": (
            "CutlassInt8ScaledMMLinearKernel",
            "TritonInt8ScaledMMLinearKernel",
            "HummingInt8ScaledMMLinearKernel",
        ),
    },
    "mp": {
        "cpu": ("Dynamic4bitLinearKernel", "ZentorchWNA16LinearKernel", "CPUWNA16LinearKernel"),
        "cuda": (
            "CutlassW4A8LinearKernel",
            "MacheteLinearKernel",
            "MarlinLinearKernel",
            "ConchLinearKernel",
            "ExllamaLinearKernel",
            "TritonW4A16LinearKernel",
            "HummingLinearKernel",
        ),
    },
}


def table(kind: str) -> str:
    """The module-level list `register_linear_kernel` appends to for `kind`."""
    return "_POSSIBLE_" + ("" if kind == "mp" else kind.upper() + "_") + "KERNELS"
