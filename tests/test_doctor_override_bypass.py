"""vllm-override-signature where the release's call sites are at hand: an error when a vLLM call the override
rejects reaches it, a warning naming the unproven link when the plugin's own runner replaces every such
caller (a hardware runner's execute_model that builds its inputs itself)."""

from __future__ import annotations

from pathlib import Path

import doctor_variants
import pytest

from vllm_scaffold import vllm_facts
from vllm_scaffold.doctor.checks.renamed_keywords import release_sources
from vllm_scaffold.doctor.checks.target import Target
from vllm_scaffold.doctor.runner import diagnose_releases, open_package

CODE = "vllm-override-signature"
# GPUModelRunner._prepare_inputs passes four arguments to _prepare_input_ids on these releases; 0.34 moved
# the runner's input preparation elsewhere.
RELEASES = ("0.32.0", "0.33.0")

_PLUGIN = '''
"""The general plugin: loads the Fx model runner, which the Fx worker builds."""


def register() -> None:
    """Imports the runner so that vLLM's worker can name it."""
    from fx_override_bypass.runner import FxModelRunner

    assert FxModelRunner
'''

_RUNNER = '''
"""The Fx model runner: vLLM's GPU runner with input ids prepared for the Fx device."""
from vllm.v1.worker.gpu_model_runner import GPUModelRunner


class FxModelRunner(GPUModelRunner):
    def _prepare_input_ids(self, scheduler_output, num_reqs, total_num_scheduled_tokens) -> None:
        """The Fx device takes no cumulative token counts."""
        self.input_ids_count = total_num_scheduled_tokens
'''

# The runner's own execute_model builds the inputs: vLLM's _prepare_inputs, the caller passing four
# arguments, never runs on it.
_OWN_EXECUTE = '''

    def execute_model(self, scheduler_output, intermediate_tensors=None):
        """Runs one Fx step, preparing its inputs itself."""
        self._prepare_input_ids(scheduler_output, 1, scheduler_output.total_num_scheduled_tokens)
        return intermediate_tensors
'''


def _write(tmp_path: Path, own_execute: bool) -> Path:
    runner = _RUNNER + (_OWN_EXECUTE if own_execute else "")
    variant = doctor_variants.Variant({"plugin.py": _PLUGIN, "runner.py": runner})
    return doctor_variants.write("override-bypass", variant, tmp_path / ("own" if own_execute else "vllm"))


def _at_hand(version: str, tmp_path: Path) -> None:
    index = vllm_facts.shipped(version)
    package = open_package(_write(tmp_path, False), tmp_path / "scratch")
    if release_sources(Target(package, index, None, list), index) is None:
        pytest.skip(f"the sources of vLLM {version} are not at hand")


@pytest.mark.parametrize("version", RELEASES)
def test_a_caller_vllm_runs_makes_an_error(version: str, tmp_path: Path) -> None:
    _at_hand(version, tmp_path)
    (report,) = diagnose_releases(_write(tmp_path, False), [version])
    (finding,) = [f for f in report.findings if f.code == CODE]
    assert finding.severity == "error" and "_prepare_input_ids" in finding.message
    assert not finding.unproven


@pytest.mark.parametrize("version", RELEASES)
def test_a_caller_the_plugin_s_runner_replaces_makes_a_warning_naming_it(version: str, tmp_path: Path) -> None:
    _at_hand(version, tmp_path)
    (report,) = diagnose_releases(_write(tmp_path, True), [version])
    (finding,) = [f for f in report.findings if f.code == CODE]
    assert finding.severity == "warning"
    (link,) = finding.unproven
    assert (
        "GPUModelRunner._prepare_inputs" in link.evidence
        and "the plugin's own runner, override or patch replaces" in link.evidence
    )
    assert "so that it fails is not shown" in finding.message
