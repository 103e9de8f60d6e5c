"""Registers the CUSTOM attention backend; called by `my_attn.vllm_plugin.register`.

vLLM runs the package's general plugin once in every process (front end, engine core, each worker) before
any model is built. The front end only validates the name a user selects; each worker resolves the name to
the class path registered here when it builds its attention layers, and caches the answer per process.
Only the path is registered: the backend module (torch, Triton) is imported by the workers that use it.
"""

from __future__ import annotations

import logging

from vllm.v1.attention.backends.registry import AttentionBackendEnum, register_backend

logger = logging.getLogger(__name__)

BACKEND_NAME = "CUSTOM"
BACKEND_PATH = "my_attn.attention.backend.MyAttnBackend"


def register() -> None:
    """Makes `--attention-backend CUSTOM` resolve to MyAttnBackend in this process."""
    # CUSTOM is a single slot: a second plugin registering it silently replaces the first. Say so.
    slot = AttentionBackendEnum.CUSTOM
    if slot.is_overridden() and slot.get_path() != BACKEND_PATH:
        logger.warning(
            "attention backend CUSTOM was registered by another plugin (%s); %s replaces it",
            slot.get_path(),
            BACKEND_PATH,
        )
    register_backend(slot, BACKEND_PATH)
