"""`triage`: fork fixtures built from a real release's sources with scripted edits, each routed as expected.

A fixture is a few files of vLLM 0.32.0 taken from its wheel (downloaded once into the cache, as
`doctor --vllm` does), edited the way a fork edits them, plus new files; the fork declares 0.32.0 in
`vllm/_version.py`, so triage compares it with that release's wheel. Every edit checks that the text it
replaces is there, so a fixture cannot silently stop editing anything.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable
from pathlib import Path
from textwrap import dedent

import pytest

from tests.helpers import run_cli
from vllm_scaffold.errors import ScaffoldError
from vllm_scaffold.route.triage import triage

RELEASE = "0.32.0"


@pytest.fixture(scope="session")
def wheel() -> Path:
    from vllm_scaffold.vllm_facts.store import fetch_wheel

    try:
        return fetch_wheel(RELEASE)[0]
    except ScaffoldError as error:
        pytest.skip(f"the vLLM {RELEASE} wheel cannot be fetched: {error}")


Edit = tuple[str, str] | str  # (old, new) replaced once in the release's file, or a new file's whole text


def build_fork(wheel: Path, root: Path, edits: dict[str, list[Edit] | str], extra: dict[str, str] | None = None) -> Path:
    """A fork tree: each edited file of the release with its edits, each new file, `vllm/_version.py`."""
    with zipfile.ZipFile(wheel) as sources:
        for path, spec in edits.items():
            target = root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(spec, str):
                target.write_text(dedent(spec).lstrip("\n"), encoding="utf-8")
                continue
            text = sources.read(path).decode("utf-8")
            for old, new in spec:
                assert text.count(old) >= 1, f"{path} of vLLM {RELEASE} no longer has {old!r}"
                text = text.replace(old, new, 1)
            target.write_text(text, encoding="utf-8")
        (root / "vllm").mkdir(exist_ok=True)
        (root / "vllm" / "__init__.py").write_bytes(sources.read("vllm/__init__.py"))
    (root / "vllm" / "_version.py").write_text(f'__version__ = version = "{RELEASE}"\n', encoding="utf-8")
    for path, text in (extra or {}).items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    return root


Q = "vllm/model_executor/layers/quantization"
ATTN = "vllm/v1/attention/backends"
KV = "vllm/distributed/kv_transfer/kv_connector"

# fixture -> (edits, {(symbol, change, route, command)}): everything triage must list, and nothing else.
FIXTURES: dict[str, tuple[dict[str, list[Edit] | str], set[tuple[str, str, str, str]]]] = {
    "quantization": (
        {
            f"{Q}/__init__.py": [
                ('    "fp8",\n', '    "fp8",\n    "acme",\n'),
                ('        "fp8": Fp8Config,\n', '        "fp8": Fp8Config,\n        "acme": AcmeConfig,\n'),
                ("    from .fp8 import Fp8Config\n", "    from .acme import AcmeConfig\n    from .fp8 import Fp8Config\n"),
            ],
            f"{Q}/acme.py": '''
                """Acme int8 weights."""
                from vllm.model_executor.layers.linear import LinearMethodBase
                from vllm.model_executor.layers.quantization.base_config import QuantizationConfig


                class AcmeConfig(QuantizationConfig):
                    def get_name(self):
                        return "acme"

                    def get_quant_method(self, layer, prefix):
                        return AcmeLinearMethod(self)


                class AcmeLinearMethod(LinearMethodBase):
                    def __init__(self, config):
                        self.config = config
                ''',
        },
        {
            (f"{'.'.join(Q.split('/'))}.QuantizationMethods", "changed", "quantization", "vllm-scaffold add quantization acme --data method_name=acme"),
            (f"{'.'.join(Q.split('/'))}.get_quantization_config", "changed", "quantization", "vllm-scaffold add quantization acme --data method_name=acme"),
            (f"{'.'.join(Q.split('/'))}.acme.AcmeConfig", "added", "quantization", "vllm-scaffold add quantization acme --data method_name=acme"),
            (f"{'.'.join(Q.split('/'))}.acme.AcmeLinearMethod", "added", "quantization", "vllm-scaffold add quantization acme --data method_name=acme"),
        },
    ),
}


def test_placeholder_collects(wheel: Path, tmp_path: Path) -> None:
    edits, expected = FIXTURES["quantization"]
    fork = build_fork(wheel, tmp_path / "fork", edits)
    result = triage(fork)
    got = {(e.symbol, e.change, e.route.route, e.route.command()) for e in result.entries}
    print("\n".join(result.describe()))
    assert got == expected
