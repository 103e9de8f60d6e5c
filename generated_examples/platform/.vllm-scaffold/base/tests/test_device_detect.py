"""The my_device detector and platform class without an engine: cheap, side-effect free, OOT, CUSTOM-aware.

The detector runs in a bare interpreter to prove it imports neither torch nor vLLM and changes nothing; the
platform's hooks, class methods, are called directly on the class, with no instance (vLLM calls them on the
one instance it makes of the class).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from my_device.device.detect import ENABLE_ENV, PLATFORM_CLASS, detect

PROBE = """
import json, os, sys
before_modules, before_env = set(sys.modules), dict(os.environ)
from my_device.device.detect import detect
answers = [detect(), detect()]
heavy = sorted(m for m in set(sys.modules) - before_modules if m.split(".")[0] in {"torch", "vllm", "triton"})
print(json.dumps({"answers": answers, "heavy_imports": heavy, "env_changed": dict(os.environ) != before_env}))
"""


@pytest.mark.parametrize(("value", "expected"), [(None, None), ("0", None), ("1", PLATFORM_CLASS)])
def test_detector_is_cheap_and_side_effect_free(
    engine_env: dict[str, str], tmp_path, value: str | None, expected: str | None
) -> None:
    env = {key: val for key, val in engine_env.items() if key != ENABLE_ENV}
    if value is not None:
        env[ENABLE_ENV] = value
    completed = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, cwd=tmp_path, capture_output=True, text=True, check=True
    )
    report = json.loads(completed.stdout)
    assert report == {"answers": [expected, expected], "heavy_imports": [], "env_changed": False}
    assert list(tmp_path.iterdir()) == [], "the detector wrote files"


def test_detect_in_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENABLE_ENV, raising=False)
    assert detect() is None
    monkeypatch.setenv(ENABLE_ENV, "1")
    assert detect() == PLATFORM_CLASS


def test_the_class_is_an_out_of_tree_platform() -> None:
    pytest.importorskip("vllm")
    from vllm.platforms.interface import Platform, PlatformEnum
    from vllm.utils.import_utils import resolve_obj_by_qualname

    cls = resolve_obj_by_qualname(PLATFORM_CLASS)
    assert issubclass(cls, Platform) and cls._enum == PlatformEnum.OOT
    assert cls().is_out_of_tree() and not cls().is_cpu()


def test_attention_backend_honours_a_registered_custom_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("vllm")
    import torch
    from vllm.v1.attention.backends import registry
    from vllm.v1.attention.backends.registry import AttentionBackendEnum
    from vllm.v1.attention.selector import AttentionSelectorConfig

    from my_device.device.platform import MyDevicePlatform

    config = AttentionSelectorConfig(head_size=32, dtype=torch.float32, kv_cache_dtype=None, block_size=16)
    cpu_path = AttentionBackendEnum.CPU_ATTN.get_path()
    assert MyDevicePlatform.get_attn_backend_cls(None, config) == cpu_path
    monkeypatch.setattr(registry, "_ATTN_OVERRIDES", {})
    with pytest.raises(ValueError, match="CUSTOM"):
        MyDevicePlatform.get_attn_backend_cls(AttentionBackendEnum.CUSTOM, config)
    registry.register_backend(AttentionBackendEnum.CUSTOM, class_path="my_kernels.attention.MyBackend")
    path = MyDevicePlatform.get_attn_backend_cls(AttentionBackendEnum.CUSTOM, config)
    assert path == "my_kernels.attention.MyBackend"
