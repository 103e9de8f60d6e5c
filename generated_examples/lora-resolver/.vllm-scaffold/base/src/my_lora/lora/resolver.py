"""`MyLoraResolver`: finds LoRA adapters by name under the directory MY_LORA_ADAPTER_DIR names.

Loaded by the OpenAI server (the front end): `register()` runs from `my_lora.vllm_plugin.register`
in every vLLM process, and the server snapshots the registered resolvers when it builds its model list.
With VLLM_ALLOW_RUNTIME_LORA_UPDATING=1 and --enable-lora, a request whose `model` is not a served name
reaches `resolve_lora`; the adapter it returns is loaded into the engine and serves that request and every
later one with the same name.

An adapter name is one path component: letters, digits, '.', '_' and '-', not starting with '.'. Names with
'/' or '..', and names whose directory resolves outside the adapter root (through a symbolic link), are
refused, so a request can never make the server read an arbitrary directory.
"""

from __future__ import annotations

import json
import logging
import os
import re
import zlib
from pathlib import Path

from vllm.lora.request import LoRARequest
from vllm.lora.resolver import LoRAResolver, LoRAResolverRegistry

logger = logging.getLogger(__name__)

DIR_ENV = "MY_LORA_ADAPTER_DIR"
RESOLVER_NAME = "my_lora.my_lora"
CHECK_BASE_MODEL = True
ADAPTER_CONFIG = "adapter_config.json"
_ADAPTER_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*\Z")


def is_safe_adapter_name(name: str) -> bool:
    """Whether `name` is a single, non-hidden path component without '..'."""
    return bool(_ADAPTER_NAME.match(name)) and ".." not in name


class MyLoraResolver(LoRAResolver):
    """Resolves `lora_name` to `root/lora_name` when that directory holds a LoRA adapter (peft layout)."""

    def __init__(self, root: Path, *, check_base_model: bool = CHECK_BASE_MODEL) -> None:
        self.root = root.resolve()
        self.check_base_model = check_base_model

    def adapter_dir(self, lora_name: str) -> Path | None:
        """The adapter directory for `lora_name`, or None when the name is unsafe or has no adapter."""
        if not is_safe_adapter_name(lora_name):
            logger.warning("%s: refusing LoRA name %r: not a single path component", RESOLVER_NAME, lora_name)
            return None
        candidate = (self.root / lora_name).resolve()
        if candidate.parent != self.root:
            logger.warning("%s: refusing LoRA name %r: it leaves %s", RESOLVER_NAME, lora_name, self.root)
            return None
        if not (candidate / ADAPTER_CONFIG).is_file():
            return None
        return candidate

    def matches(self, adapter: Path, base_model_name: str) -> bool:
        """Whether the adapter's config says it is a LoRA adapter for `base_model_name`."""
        try:
            config = json.loads((adapter / ADAPTER_CONFIG).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as error:
            logger.warning("%s: unreadable %s: %s", RESOLVER_NAME, adapter / ADAPTER_CONFIG, error)
            return False
        if config.get("peft_type") != "LORA":
            return False
        base = config.get("base_model_name_or_path")
        if self.check_base_model and base and base != base_model_name:
            logger.warning("%s: %s adapts %s, not %s", RESOLVER_NAME, adapter, base, base_model_name)
            return False
        return True

    async def resolve_lora(self, base_model_name: str, lora_name: str) -> LoRARequest | None:
        adapter = self.adapter_dir(lora_name)
        if adapter is None or not self.matches(adapter, base_model_name):
            return None
        # The server replaces the id with its own counter; a stable positive one keeps offline use valid.
        return LoRARequest(
            lora_name=lora_name, lora_int_id=zlib.crc32(lora_name.encode()) or 1, lora_path=str(adapter)
        )


def register() -> None:
    """Registers the resolver when MY_LORA_ADAPTER_DIR is set; runs once in every vLLM process."""
    configured = os.environ.get(DIR_ENV)
    if not configured:
        logger.debug("%s is not set: LoRA resolver %s is not registered", DIR_ENV, RESOLVER_NAME)
        return
    root = Path(configured)
    if not root.is_dir():
        # Raising stops every vLLM process: a mistyped directory would otherwise make every adapter a 404.
        raise ValueError(f"{DIR_ENV}={configured!r} is not a directory: point it at the adapters' folder")
    LoRAResolverRegistry.register_resolver(RESOLVER_NAME, MyLoraResolver(root))
