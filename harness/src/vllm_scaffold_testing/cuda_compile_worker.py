"""The process that compiles Triton launches for NVIDIA architectures; started by `cuda_compile.CompileChecker`.

It runs without TRITON_INTERPRET, so `@triton.jit` yields compilable kernels, and needs no GPU: the target
is given explicitly and `ptxas` comes with Triton's wheel. Protocol: one JSON request per line on stdin
(module, kernel, args, kwargs, arch: see `cuda_compile.Launch`; root: the directory to import the module
from), one JSON `CompileResult` per line on stdout. The kernel's arguments go through Triton's own binder,
so signature, constants and alignment attributes are those a real launch with such arguments would get.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import re
import sys
import time
from typing import Any

import torch
import triton.language as tl
from triton import knobs
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource, compile, make_backend
from triton.runtime.jit import MockTensor, create_function_from_signature

PTXAS_NUMBERS = {
    "registers": re.compile(r"Used (\d+) registers"),
    "stack": re.compile(r"(\d+) bytes stack frame"),
    "spill_stores": re.compile(r"(\d+) bytes spill stores"),
    "spill_loads": re.compile(r"(\d+) bytes spill loads"),
}


class ShapeOnlyTensor(MockTensor):
    """A tensor argument reduced to its dtype and whether its address is 16-byte aligned."""

    def __init__(self, dtype: torch.dtype, aligned: bool) -> None:
        super().__init__(dtype)
        self.address = 0 if aligned else 8

    def data_ptr(self) -> int:  # type: ignore[override]
        return self.address


def argument(value: Any) -> Any:
    if isinstance(value, list) and value[0] == "tensor":
        return ShapeOnlyTensor(getattr(torch, value[1]), value[2])
    if isinstance(value, list) and value[0] == "tl":
        return tl.dtype(value[1])
    return value


def compile_launch(request: dict[str, Any]) -> dict[str, Any]:
    arch = request["arch"]
    result: dict[str, Any] = {"arch": arch}
    started = time.perf_counter()
    if request["root"] not in sys.path:
        sys.path.insert(0, request["root"])
    try:
        kernel = getattr(importlib.import_module(request["module"]), request["kernel"])
    except (ImportError, AttributeError) as error:  # not the kernel's fault: reported, never cached
        return {**result, "error": f"cannot load the kernel: {error}", "cacheable": False}
    try:
        target = GPUTarget("cuda", arch, 32)
        backend = make_backend(target)
        binder = create_function_from_signature(kernel.signature, kernel.params, backend)
        args = [argument(v) for v in request["args"]]
        kwargs = {k: argument(v) for k, v in request["kwargs"].items()}
        kwargs["debug"] = False
        bound, specialization, options = binder(*args, **kwargs)
        options, signature, constexprs, attrs = kernel._pack_args(backend, kwargs, bound, specialization, options)
        log = io.StringIO()
        with contextlib.redirect_stdout(log):
            compiled = compile(ASTSource(kernel, signature, constexprs, attrs), target=target, options=options.__dict__)
        for name, pattern in PTXAS_NUMBERS.items():
            found = pattern.search(log.getvalue())
            result[name] = int(found.group(1)) if found else 0
        result["shared"] = int(compiled.metadata.shared)
        result["num_warps"] = int(compiled.metadata.num_warps)
    except Exception as error:  # every failure is a result the checker reports, never a dead worker
        result["error"] = f"{type(error).__name__}: {error}"[-6000:]
    result["seconds"] = round(time.perf_counter() - started, 3)
    return result


def main() -> None:
    replies = sys.stdout
    sys.stdout = sys.stderr  # anything the compiler prints stays out of the replies
    knobs.compilation.always_compile = True  # ptxas must run to report registers and spills
    knobs.nvidia.dump_ptxas_log = True
    for line in sys.stdin:
        replies.write(json.dumps(compile_launch(json.loads(line))) + "\n")
        replies.flush()


if __name__ == "__main__":
    main()
