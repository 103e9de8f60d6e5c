"""The vLLM general plugin of my_io: where its components register with vLLM.

vLLM calls `register()` through the `vllm.general_plugins` entry point `my_io` once in each process
it starts: the front end (EngineArgs.__post_init__), the engine core (EngineCore.__init__) and every worker
(init_worker), before any model is built. A registration made anywhere else holds in its process and in
those forked from it afterwards, never in spawned ones (on CPU, every engine process). This module imports
nothing heavy: it runs in all of those processes.
"""

from __future__ import annotations

import logging
from importlib import import_module

logger = logging.getLogger(__name__)

SUPPORTED_VLLM = ">=0.31.0,<=0.34.0"
# The releases inside SUPPORTED_VLLM this package's templates were verified on by vllm-scaffold: the
# generated tests that start vLLM ran inside the CPU engine of ENGINE_TESTED_VLLM, and the use of vLLM
# (imports, base classes, overrides, calls) was checked against the sources of API_CHECKED_VLLM.
# register() warns on any other release.
ENGINE_TESTED_VLLM: tuple[str, ...] = ("0.31.0", "0.32.0")
API_CHECKED_VLLM: tuple[str, ...] = ("0.33.0", "0.34.0")

# "module:function" of each component that registers something with vLLM, called in this order.
# `vllm-scaffold add` appends one line per such component.
COMPONENT_REGISTRATIONS: list[str] = []

_registered = False


def register() -> None:
    """Registers every component once per process; later calls in the same process do nothing."""
    global _registered
    if _registered:
        return
    # Set first: vLLM never retries a plugin in a process, and a half-done registration must not be repeated.
    _registered = True
    check_vllm_version()
    for target in COMPONENT_REGISTRATIONS:
        module_name, _, function_name = target.partition(":")
        getattr(import_module(module_name), function_name)()


def vllm_support(version: str) -> str:
    """How `version` was verified: "engine-tested", "api-checked" or "unknown"."""
    from packaging.version import Version

    public = Version(version).public  # a local label (+cpu) is the same release
    if public in ENGINE_TESTED_VLLM:
        return "engine-tested"
    return "api-checked" if public in API_CHECKED_VLLM else "unknown"


def check_vllm_version() -> bool:
    """Whether the installed vLLM is a verified release; logs one warning when it is not."""
    import vllm

    kind = vllm_support(vllm.__version__)
    if kind != "unknown":
        logger.debug("my_io runs on vLLM %s (%s)", vllm.__version__, kind)
        return True
    logger.warning(
        "my_io was verified on vLLM %s (range %s) "
        "but vLLM %s is installed: the seams it uses may have moved. "
        "Check it with `vllm-scaffold doctor --vllm %s` and run its tests against this vLLM.",
        ", ".join(ENGINE_TESTED_VLLM + API_CHECKED_VLLM),
        SUPPORTED_VLLM,
        vllm.__version__,
        vllm.__version__,
    )
    return False
