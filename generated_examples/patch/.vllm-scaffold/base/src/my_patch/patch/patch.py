"""my_patch's patch of vLLM's `vllm.config.model:ModelConfig.get_vocab_size` (method): why, and how it stays
safe.

Why: record which processes reach the target.
Remove when: vLLM gains a supported hook for this.

`apply()` runs in every vLLM process that loads the general plugins (the front end, the engine core, each
worker), called from `my_patch.vllm_plugin.register` before vLLM builds the model. It wraps the target once
per process; a second call does nothing. Before wrapping, it compares the parameters of the target it finds
with the ones this wrapper was written for in the installed release (`EXPECTED_PARAMETERS`, from
vllm-scaffold's release index; the package's manifest records the same per release, with a hash of the
target's source that `vllm-scaffold doctor --vllm VERSION` compares). When they differ the target is left
alone, and register() raises with the reason (on_mismatch=raise).

The wrapper has exactly the target's parameters and calls the original; put your change in the marked place.
Parameters with defaults are written `= ...` and take vLLM's own defaults when the patch is applied
(copied from the target, whose parameters have just been checked to match).

Set MY_PATCH_MY_PATCH_TRACE_FILE to a path to see which processes reach the wrapper: each
appends one line "pid<TAB>process name<TAB>main module" the first time it calls it (the tests use this).
"""

from __future__ import annotations

import functools
import importlib
import inspect
import logging
import multiprocessing
import os
import sys
from collections.abc import Callable
from typing import Any

PACKAGE = "my_patch"
TARGET = "vllm.config.model:ModelConfig.get_vocab_size"
ON_MISMATCH = "raise"  # "raise": register() stops vLLM; "skip": one log line, target left unpatched
TRACE_ENV = "MY_PATCH_MY_PATCH_TRACE_FILE"
# The target's parameters (names, kinds, which have defaults) in each vLLM release the package declares.
EXPECTED_PARAMETERS: dict[str, tuple[str, ...]] = {
    "0.31.0": ("self",),
    "0.32.0": ("self",),
    "0.33.0": ("self",),
    "0.34.0": ("self",),
}
# Marks the wrapper, so that a second apply() in one process sees the target is already wrapped.
MARK = "__my_patch_my_patch__"

logger = logging.getLogger(__name__)
original: Callable[..., Any] | None = None  # the target as vLLM defines it, set by apply()
reached = False  # whether this process has called the wrapper yet


def patched_get_vocab_size(self: Any) -> Any:
    """Replaces `vllm.config.model:ModelConfig.get_vocab_size` in every process `apply()` ran in."""
    record_reached()
    assert original is not None
    # ---- your change: read or replace the arguments before this call, or the result after it ----
    result = original(self)
    # -----------------------------------------------------------------------------------------------
    return result


setattr(patched_get_vocab_size, MARK, True)


def apply() -> None:
    """Wraps the target in this process, once; raises or logs (ON_MISMATCH) when its parameters changed."""
    global original
    owner, attribute = target_owner()
    current = inspect.getattr_static(owner, attribute)
    function = unwrap_descriptor(current)
    if getattr(function, MARK, False):
        return
    problem = mismatch(function)
    if problem:
        if ON_MISMATCH == "raise":
            raise RuntimeError(problem)
        logger.warning("%s", problem)
        return
    original = function
    patched_get_vocab_size.__defaults__ = function.__defaults__
    patched_get_vocab_size.__kwdefaults__ = function.__kwdefaults__
    functools.update_wrapper(patched_get_vocab_size, function)
    setattr(owner, attribute, patched_get_vocab_size)


def target_owner() -> tuple[Any, str]:
    """(the module or class that holds the target, the target's name in it)."""
    owner: Any = importlib.import_module("vllm.config.model")
    for part in "ModelConfig.get_vocab_size".split(".")[:-1]:
        owner = getattr(owner, part)
    return owner, "get_vocab_size"


def unwrap_descriptor(value: Any) -> Any:
    """The plain function behind a class attribute (a classmethod, staticmethod or property's)."""
    if isinstance(value, (classmethod, staticmethod)):
        return value.__func__
    if isinstance(value, property):
        return value.fget
    if isinstance(value, functools.cached_property):
        return value.func
    return value


def parameters(function: Callable[..., Any]) -> tuple[str, ...]:
    """The parameters as the release index writes them: ("self", "x", "y=", "*", "z=", "**kwargs")."""
    parts: list[str] = []
    listed = list(inspect.signature(function, follow_wrapped=False).parameters.values())
    for i, param in enumerate(listed):
        default = "" if param.default is inspect.Parameter.empty else "="
        if param.kind is param.VAR_POSITIONAL:
            parts.append(f"*{param.name}")
        elif param.kind is param.VAR_KEYWORD:
            parts.append(f"**{param.name}")
        else:
            if param.kind is param.KEYWORD_ONLY and not any(part.startswith("*") for part in parts):
                parts.append("*")
            parts.append(f"{param.name}{default}")
        if param.kind is param.POSITIONAL_ONLY and (
            i + 1 == len(listed) or listed[i + 1].kind is not param.POSITIONAL_ONLY
        ):
            parts.append("/")
    return tuple(parts)


def installed_release() -> str:
    from vllm import __version__

    return __version__.split("+")[0]


def mismatch(function: Callable[..., Any]) -> str:
    """Why the live target cannot be wrapped ("" when it can): its parameters are not the expected ones."""
    release = installed_release()
    expected = EXPECTED_PARAMETERS.get(release)
    declared = release
    if expected is None:  # a release the package does not declare: the newest one it was written for
        declared = list(EXPECTED_PARAMETERS)[-1]
        expected = EXPECTED_PARAMETERS[declared]
    live = parameters(function)
    if live == expected:
        return ""
    return (
        f"{PACKAGE} did not patch {TARGET}: in vLLM {release} it takes ({','.join(live)}), the patch "
        f"expects ({','.join(expected)}) as in vLLM {declared}; review the patch against this release"
    )


def record_reached() -> None:
    """Notes the first call in this process: one line in the trace file when TRACE_ENV names one."""
    global reached
    if reached:
        return
    reached = True
    path = os.environ.get(TRACE_ENV)
    if not path:
        return
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    main_module = spec.name if spec is not None else "-"
    line = f"{os.getpid()}\t{multiprocessing.current_process().name}\t{main_module}\n".encode()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)
