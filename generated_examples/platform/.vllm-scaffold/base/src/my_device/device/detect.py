"""The `vllm.platform_plugins` entry point `my_device`: says whether this platform's device is present.

vLLM calls it in every process, the first time anything reads `vllm.platforms.current_platform`, and a
second time when it wins. It must therefore be cheap and free of side effects: no imports of torch or
vLLM, no device initialisation, no files, no logging configuration. It returns the platform class's
dotted path (dots only, no colon) or None.

The reference device is the CPU itself, which every machine has, so presence is an explicit opt-in:
MY_DEVICE_PLATFORM=1. Installing this package never takes over a machine on its own. For real hardware,
replace `device_present` with a cheap probe of the device (a /dev node, a driver library's presence).
"""

from __future__ import annotations

import os

ENABLE_ENV = "MY_DEVICE_PLATFORM"
PLATFORM_CLASS = "my_device.device.platform.MyDevicePlatform"


def device_present() -> bool:
    return os.environ.get(ENABLE_ENV) == "1"


def detect() -> str | None:
    return PLATFORM_CLASS if device_present() else None
