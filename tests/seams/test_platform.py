"""The platform template: its question, the entry point it adds, and `add` next to another component."""

from __future__ import annotations

import tomllib
from pathlib import Path

from seam_helpers import add_into


def test_add_next_to_a_general_plugin_declares_the_detector(host: Path) -> None:
    add_into(host, "platform", "accel", "enable_env=HOST_ACCEL")
    pyproject = tomllib.loads((host / "pyproject.toml").read_text())
    assert pyproject["project"]["entry-points"]["vllm.platform_plugins"] == {"accel": "host.accel.detect:detect"}
    detect = (host / "src/host/accel/detect.py").read_text()
    assert 'ENABLE_ENV = "HOST_ACCEL"' in detect
    assert 'PLATFORM_CLASS = "host.accel.platform.AccelPlatform"' in detect
    assert 'WORKER_CLASS = "host.accel.worker.AccelWorker"' in (host / "src/host/accel/platform.py").read_text()
    component = pyproject["tool"]["vllm-scaffold"]["components"][1]
    assert component["object"] == "host.accel.platform:AccelPlatform"
    assert component["enable"][0].startswith("HOST_ACCEL=1")
