"""Two plugins installed side by side that claim the same things: the site the environment codes
(`doctor --installed`) are shown on, by tests/test_doctor_reading.py and by the codes' examples
(tests/test_code_examples.py).

The packages are fx_env_alpha and fx_env_beta; the examples in codes.toml call them plugin_a and plugin_b
(`EXAMPLE_NAMES`).
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.helpers import build_file_tree
from vllm_scaffold.doctor.report.findings import Finding
from vllm_scaffold.doctor.runner import diagnose_installed
from vllm_scaffold_testing.engine import install_privately

ENVIRONMENT_CODES = {
    "env-platforms-conflict",
    "env-platforms-several",
    "env-custom-attention-twice",
    "env-kv-connector-twice",
    "env-quantization-twice",
    "env-plugins-drops",
}
# What the live probe is run with: alpha's general plugin and both platform detectors, so beta's general
# plugin is left out (env-plugins-drops) and both detectors claim the machine (env-platforms-conflict).
LIVE_PLUGINS = "fx_env_alpha,fx_env_alpha_platform,fx_env_beta_platform"
# The fixture's names -> the names the examples use.
EXAMPLE_NAMES = {
    "fx_env_alpha": "plugin_a",
    "fx_env_beta": "plugin_b",
    "fx-env-alpha": "plugin-a",
    "fx-env-beta": "plugin-b",
}


def clashing_plugin(name: str) -> dict[str, str]:
    """Plugin fx-env-NAME: its general plugin and platform detector claim what the other one claims too."""
    package = f"fx_env_{name}"
    pyproject = f"""
        [build-system]
        requires = ["hatchling>=1.21"]
        build-backend = "hatchling.build"

        [project]
        name = "fx-env-{name}"
        version = "0.1.0"

        [project.entry-points."vllm.general_plugins"]
        {package} = "{package}.plugin:register"

        [project.entry-points."vllm.platform_plugins"]
        {package}_platform = "{package}.plugin:detect"

        [tool.hatch.build.targets.wheel]
        packages = ["src/{package}"]
        """
    plugin = f'''
        """The general plugin and the platform detector, both claiming what the other package claims too."""


        def detect() -> str | None:
            """Claims every machine."""
            return "{package}.platform.Platform"


        def register() -> None:
            from vllm.distributed.kv_transfer.kv_connector.factory import KVConnectorFactory
            from vllm.model_executor.layers.quantization import register_quantization_config
            from vllm.model_executor.layers.quantization.base_config import QuantizationConfig
            from vllm.v1.attention.backends.registry import AttentionBackendEnum, register_backend

            register_backend(AttentionBackendEnum.CUSTOM, class_path="{package}.backend.Backend")
            KVConnectorFactory.register_connector("SharedConnector", "{package}.connector", "Connector")

            @register_quantization_config("shared_quant")
            class SharedQuantConfig(QuantizationConfig):
                """Registered under the name the other package registers too."""
        '''
    return {
        "pyproject.toml": pyproject,
        f"src/{package}/__init__.py": '"""One of two plugins installed side by side that claim the same things."""\n',
        f"src/{package}/plugin.py": plugin,
    }


def build(site: Path, scratch: Path) -> Path:
    """fx-env-alpha and fx-env-beta installed side by side into `site`, built from sources under `scratch`."""
    for name in ("alpha", "beta"):
        install_privately(build_file_tree(clashing_plugin(name), scratch / name), site)
    return site


def environ_for(site: Path) -> dict[str, str]:
    """This process's environment with only `site` on the path and no plugin selection of its own."""
    environ = {k: v for k, v in os.environ.items() if k not in {"VLLM_PLUGINS", "VLLM_TARGET_DEVICE"}}
    environ["PYTHONPATH"] = str(site)
    return environ


def live_findings(site: Path) -> list[Finding]:
    """The environment findings of `doctor --installed` with the live probe, run with LIVE_PLUGINS."""
    return diagnose_installed(live=True, vllm_plugins=LIVE_PLUGINS, environ=environ_for(site)).environment.findings


def sources(site: Path) -> list[str]:
    """The text of every module the two plugins install, with the examples' names."""
    texts = []
    for path in sorted(site.glob("fx_env_*/**/*.py")):
        text = path.read_text(encoding="utf-8")
        for ours, theirs in EXAMPLE_NAMES.items():
            text = text.replace(ours, theirs)
        texts.append(text)
    return texts
