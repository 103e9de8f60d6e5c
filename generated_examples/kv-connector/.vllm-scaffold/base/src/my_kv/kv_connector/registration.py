"""Registers MyKvConnector with vLLM's KV-connector factory, in every vLLM process.

Called from `my_kv.vllm_plugin.register` (the package's general plugin), which vLLM runs once in the
front end, the engine core and each worker. All three resolve `kv_transfer_config.kv_connector` through
KVConnectorFactory, whose registry is per process: registering only in your launch script would leave the
engine core and the workers unable to find the name wherever they are spawned rather than forked (always on
CPU). The registration is lazy (module path and class
name), so nothing heavy is imported until a process actually builds the connector.

The factory refuses a name twice (ValueError), and vLLM registers its own connectors at import. A name
taken by vLLM or by another plugin is reported with an error log naming the fix instead of raising: an
exception here would stop every vLLM process of this environment, including the ones that never use
this connector.
"""

from __future__ import annotations

import logging

logger = logging.getLogger(__name__)

CONNECTOR_NAME = "MyKvConnector"
MODULE_PATH = "my_kv.kv_connector.connector"

_registered = False


def register() -> bool:
    """Registers CONNECTOR_NAME once per process; False (with an error log) when the name is already taken."""
    global _registered
    if _registered:
        return True
    from vllm.distributed.kv_transfer.kv_connector.factory import KVConnectorFactory

    try:
        KVConnectorFactory.register_connector(CONNECTOR_NAME, MODULE_PATH, CONNECTOR_NAME)
    except ValueError:
        logger.error(
            "KV connector name %r is already registered (by vLLM or another plugin), so kv_connector=%r "
            "would not select %s.%s. Rename the connector, or select it without the registry: "
            "kv_transfer_config={'kv_connector': %r, 'kv_connector_module_path': %r, 'kv_role': 'kv_both'}.",
            CONNECTOR_NAME,
            CONNECTOR_NAME,
            MODULE_PATH,
            CONNECTOR_NAME,
            CONNECTOR_NAME,
            MODULE_PATH,
        )
        return False
    _registered = True
    return True
