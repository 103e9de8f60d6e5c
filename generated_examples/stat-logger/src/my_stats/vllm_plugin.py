"""The vLLM general plugin of my_stats: where its components register with vLLM.

vLLM calls `register()` through the `vllm.general_plugins` entry point `my_stats` once in each process
it starts: the front end (EngineArgs.__post_init__), the engine core (EngineCore.__init__) and every worker
(init_worker), before any model is built. vLLM's registries are per process, so a registration made
anywhere else only holds in the process that made it. This module imports nothing heavy: it runs in all
of those processes.
"""

from __future__ import annotations

import logging
from importlib import import_module

logger = logging.getLogger(__name__)

SUPPORTED_VLLM = ">=0.32.0,<0.33"

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


def check_vllm_version() -> bool:
    """Whether the installed vLLM is inside SUPPORTED_VLLM; logs one warning when it is not."""
    import vllm
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    installed = Version(vllm.__version__)
    if SpecifierSet(SUPPORTED_VLLM).contains(installed, prereleases=True):
        return True
    logger.warning(
        "my_stats was written for vLLM %s but vLLM %s is installed: "
        "the seams it uses may have moved. Run its tests against this vLLM, or pin vLLM to %s.",
        SUPPORTED_VLLM,
        installed,
        SUPPORTED_VLLM,
    )
    return False
