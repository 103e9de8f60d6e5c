"""Doctor on patterns of published plugins it was not first written for, each a small variant package.

Each entry is a plugin broken in one way the checks once missed, with exactly the findings (code and
place) doctor must report for it on the installed vLLM; the patterns doctor must leave alone are CLEAN
variants in tests/doctor_variants.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from doctor_variants import Variant, write

from vllm_scaffold.doctor.runner import diagnose

PATTERNS: dict[str, tuple[Variant, set[tuple[str, str]]]] = {
    # register() names an attention backend member stock 0.32 lacks: AttributeError in every process.
    "enum-member-missing": (
        Variant(
            {
                "plugin.py": '''
                """Registers the Fx backend in a backend slot of a patched vLLM."""


                def register() -> None:
                    from vllm.v1.attention.backends.registry import AttentionBackendEnum, register_backend

                    register_backend(AttentionBackendEnum.FX_ATTN, "fx_enum_member_missing.backend.FxBackend")
                '''
            }
        ),
        {("vllm-attribute-missing", "src/fx_enum_member_missing/plugin.py:7")},
    ),
}


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_pattern_reports_exactly_its_findings(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VLLM_PLUGINS", raising=False)
    variant, expected = PATTERNS[name]
    report = diagnose(write(name, variant, tmp_path), live=False)
    got = {(f.code, f.where) for f in report.findings}
    assert got == expected, "\n".join(f"{f.code} {f.where}: {f.message}" for f in report.findings)
