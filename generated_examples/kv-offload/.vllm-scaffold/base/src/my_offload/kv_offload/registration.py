"""Registers MyOffloadOffloadingSpec with vLLM's offloading-spec factory, in every vLLM process.

Called from `my_offload.vllm_plugin.register` (the package's general plugin), which vLLM runs in the front
end, the engine core and each worker. The OffloadingConnector resolves `spec_name` through
OffloadingSpecFactory in the engine core (scheduler side) and in each worker, and the factory's registry is
per process: registering only in a launch script leaves those processes unable to find the name wherever
they are spawned rather than forked (always on CPU). The
registration is lazy (module path and class name), so nothing heavy is imported until a process builds the
spec.

The factory refuses a name twice (ValueError), vLLM registers its own specs when the factory is imported, and
a general plugin can be called more than once in a process. A second call here returns at once; a name taken
by vLLM or another plugin is reported with an error log naming the fix instead of raising: an exception here
would stop every vLLM process of this environment, including the ones that never offload.
"""

from __future__ import annotations

import logging

logger = logging.getLogger(__name__)

SPEC_NAME = "MyOffloadOffloadingSpec"
MODULE_PATH = "my_offload.kv_offload.spec"

_registered = False


def register() -> bool:
    """Registers SPEC_NAME once per process; False (with an error log) when the name is already taken."""
    global _registered
    if _registered:
        return True
    from vllm.v1.kv_offload.factory import OffloadingSpecFactory

    try:
        OffloadingSpecFactory.register_spec(SPEC_NAME, MODULE_PATH, SPEC_NAME)
    except ValueError:
        logger.error(
            "Offloading spec name %r is already registered (by vLLM or another plugin), so spec_name=%r "
            "would not select %s.%s. Rename the spec, or select it without the registry: "
            "kv_connector_extra_config={'spec_name': %r, 'spec_module_path': %r}.",
            SPEC_NAME,
            SPEC_NAME,
            MODULE_PATH,
            SPEC_NAME,
            SPEC_NAME,
            MODULE_PATH,
        )
        return False
    _registered = True
    return True
