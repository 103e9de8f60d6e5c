"""vllm-override-keyword-renamed: an override's parameter renamed at vLLM's position is reported only with a
call of the release in hand that passes it by name and reaches the override."""

from __future__ import annotations

from pathlib import Path

import doctor_variants
import pytest

from vllm_scaffold import vllm_facts
from vllm_scaffold.doctor.checks.renamed_keywords import CODE, release_sources, renamed_keywords, renamed_parameters
from vllm_scaffold.doctor.checks.target import Target
from vllm_scaffold.doctor.reading.installed import installed_vllm
from vllm_scaffold.doctor.runner import diagnose, diagnose_releases, open_package
from vllm_scaffold.vllm_facts import Signature

BROKEN = "vllm-override-keyword-renamed"


@pytest.mark.parametrize(
    ("base", "override", "names"),
    [
        # a parameter at vLLM's position under another name: a call passing vLLM's name by keyword fails
        (
            "self,input_ids,multimodal_embeddings=,*,is_multimodal=",
            "self,input_ids,mm=,*,is_multimodal=",
            {"multimodal_embeddings": "mm"},
        ),
        # the same names, or a **kwargs that takes vLLM's name: nothing to report
        ("self,input_ids,positions", "self,input_ids,positions", {}),
        ("self,input_ids,positions", "self,input_ids,pos,**kwargs", {}),
        # a positional-only parameter of vLLM's is never passed by keyword
        ("self,x,/,y", "self,z,/,y", {}),
        # fewer positional parameters, or a classmethod against a method, is vllm-override-signature's case
        ("self,a,b", "self,a", {}),
        ("@c cls,a", "self,b", {}),
    ],
)
def test_renamed_parameters(base: str, override: str, names: dict[str, str]) -> None:
    assert renamed_parameters(Signature.parse(base), Signature.parse(override)) == names


def _write(tmp_path: Path, name: str = BROKEN) -> Path:
    """The BROKEN variant, or (name "override-keeps-vllm-keyword") the CLEAN one that keeps vLLM's name."""
    variant = doctor_variants.BROKEN.get(name) or doctor_variants.CLEAN[name]
    return doctor_variants.write(name, variant, tmp_path)


def test_the_finding_names_vllms_call(tmp_path: Path) -> None:
    report = diagnose(_write(tmp_path), live=False, vllm_plugins=None)
    (finding,) = [f for f in report.findings if f.code == CODE]
    assert "'multimodal_embeddings'" in finding.message and "'mm_embeddings'" in finding.message
    assert "vllm.v1.worker." in finding.message  # a model runner's call is quoted first


def test_an_unregistered_model_is_not_reported(tmp_path: Path) -> None:
    root = _write(tmp_path)
    plugin = root / "src" / "fx_vllm_override_keyword_renamed" / "plugin.py"
    plugin.write_text('"""Registers nothing."""\n\n\ndef register() -> None:\n    """Nothing to register."""\n')
    report = diagnose(root, live=False, vllm_plugins=None)
    assert CODE not in report.codes


def test_a_release_without_sources_at_hand_reports_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = open_package(_write(tmp_path), tmp_path / "scratch")
    older = next(v for v in vllm_facts.shipped_versions() if v != installed_vllm().version)
    monkeypatch.setenv("VLLMSCAFFOLD_CACHE", str(tmp_path / "empty-cache"))
    target = Target(package, vllm_facts.shipped(older), None, list)
    assert renamed_keywords(target) == []


@pytest.mark.parametrize("version", vllm_facts.shipped_versions())
def test_every_release_whose_sources_are_at_hand(version: str, tmp_path: Path) -> None:
    index = vllm_facts.shipped(version)
    package = open_package(_write(tmp_path), tmp_path / "scratch")
    if release_sources(Target(package, index, None, list), index) is None:
        pytest.skip(f"the sources of vLLM {version} are not at hand")
    (report,) = diagnose_releases(_write(tmp_path), [version])
    assert CODE in report.codes
    (clean,) = diagnose_releases(_write(tmp_path, "override-keeps-vllm-keyword"), [version])
    assert CODE not in clean.codes
