"""`vllm-scaffold doctor`: each fixture package reports exactly its pitfall; clean plugins report no error.

tests/fixtures/doctor/<code>/ is a small plugin package broken in exactly one way. Static expectations run
with the live probe off (fast); the fixtures of live checks and the hand-written clean plugin also run through
the live probe, two at a time, with results cached by content under VLLMSCAFFOLD_CACHE, so a second run of
this module only pays for what changed. A fresh package of every templated seam gets its live diagnosis in
tests/test_generated_packages.py, whose workflow runs doctor with the probe on and asserts no error.

The tests reading the live results share one xdist group, so a parallel run probes once, on one worker.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import doctor_fixtures
import doctor_variants
import pytest

from scripts.doctor_docs import DOCS, docs_with_codes
from tests.clashing_site import ENVIRONMENT_CODES
from tests.helpers import once_per_run, run_cli
from vllm_scaffold.doctor.live import probe_ray
from vllm_scaffold.doctor.reading import installed
from vllm_scaffold.doctor.releases import check as releases
from vllm_scaffold.doctor.releases import patches
from vllm_scaffold.doctor.report import codes
from vllm_scaffold.doctor.report.findings import ProbeState, Report
from vllm_scaffold.doctor.runner import diagnose
from vllm_scaffold.generate.scaffold import render_example
from vllm_scaffold_testing.engine import install_privately

FIXTURES = Path(__file__).parent / "fixtures" / "doctor"
DOCTOR_SOURCE = Path(__file__).parents[1] / "vllm_scaffold" / "doctor"

# The VLLM_PLUGINS value each allow-list fixture is checked with (every other fixture: unset).
PLUGINS = {
    "plugins-empty": "",
    "plugins-whitespace": "fx_plugins_whitespace, lora_filesystem_resolver",
    "plugins-unknown-name": "fx_plugins_unknown_name,lora_filesystem_resolver,lora_hf_hub_resolver,lora_resolver",
    "plugins-excludes-package": "lora_filesystem_resolver,lora_hf_hub_resolver",
    "plugins-drops-installed": "fx_plugins_drops_installed",
}
# Findings a fixture must show besides its own: a space after the comma also drops the plugin it names; an
# endpoint plugin is not enabled while VLLM_PLUGINS is unset.
# endpoint plugin is not enabled while VLLM_PLUGINS is unset; the live argmax fixture also writes into the logits.
ALSO = {
    "plugins-whitespace": {"plugins-drops-installed"},
    "endpoint-name-mismatch": {"endpoint-not-enabled"},
    "reasoning-parser-server-only": {"endpoint-not-enabled"},
    "general-plugin-not-idempotent": {"general-plugin-side-effects"},
    # a processor of one runner's interface, where the release has both runners
    "logits-runner-mismatch": {"logits-processor-one-runner"},
    "logits-argmax-claim": {"logits-argmax-masks", "logits-processor-one-runner"},
}
# Fixtures whose pitfall only the live probe can see.
LIVE_ONLY = {
    "ep-import-fails",
    "ep-object-mismatch",
    "endpoint-name-mismatch",
    "general-plugin-raises",
    "general-plugin-not-idempotent",
    "attention-backend-conflict",
    "custom-op-conflict",
    "offloading-spec-name-taken",
    "quant-linear-method-none",
    "linear-kernel-shadowed",
    "linear-kernel-other-platform",
    "logits-runner-mismatch",
    "logits-argmax-claim",
    "import-cost-torch",
    "import-cost-cuda",
}
# Fixtures checked against other installed plugins (tests/fixtures/doctor/_installed, put on PYTHONPATH).
NEEDS_OTHERS = {"attention-backend-conflict", "custom-op-conflict", "offloading-spec-name-taken"}

# Every code with a package of its own (a folder or a variant), each reporting exactly that code.
BROKEN = sorted(code for code in doctor_fixtures.by_code() if doctor_fixtures.own_package(code) is not None)
STATIC = [name for name in BROKEN if name not in LIVE_ONLY]


@pytest.fixture(autouse=True)
def _probe_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same answers on every machine: allow-list unset, the V1 model runner, no kernels disabled."""
    for name, value in PROBE_ENV_OVERRIDES.items():
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)


PROBE_ENV_OVERRIDES: dict[str, str | None] = {
    "VLLM_PLUGINS": None,
    "VLLM_DISABLED_KERNELS": None,
    "VLLM_USE_V2_MODEL_RUNNER": "0",
}


def _environment(pythonpath_first: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if PROBE_ENV_OVERRIDES.get(k, "") is not None}
    env.update({k: v for k, v in PROBE_ENV_OVERRIDES.items() if v is not None})
    if pythonpath_first is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(pythonpath_first), *filter(None, [env.get("PYTHONPATH")])])
    return env


@pytest.fixture(scope="session")
def live_reports(tmp_path_factory: pytest.TempPathFactory, variants: Path) -> dict[str, Report | Exception]:
    """Every live diagnosis of this module, run two at a time (the probes are separate processes), once per run.

    Keys: a fixture name; "alone:<fixture>" for a conflict fixture without the other plugins.
    """

    def diagnose_all() -> dict[str, Report | Exception]:
        others = tmp_path_factory.mktemp("other-plugins")
        for package in sorted((FIXTURES / "_installed").iterdir()):
            install_privately(package, others)
        jobs: dict[str, tuple[Path, dict[str, str], str | None]] = {}
        for name in sorted(LIVE_ONLY) + ["clean"]:
            env = _environment(others if name in NEEDS_OTHERS else None)
            jobs[name] = (_root(name, variants), env, PLUGINS.get(name))
        for name in sorted(NEEDS_OTHERS):
            jobs[f"alone:{name}"] = (_root(name, variants), _environment(), None)

        def run(job: tuple[Path, dict[str, str], str | None]) -> Report | Exception:
            root, env, plugins = job
            try:
                return diagnose(root, live=True, environ=env, vllm_plugins=plugins)
            except Exception as error:  # noqa: BLE001 - surfaced by the test that reads this result
                return error

        with ThreadPoolExecutor(max_workers=2) as pool:
            return dict(zip(jobs, pool.map(run, jobs.values()), strict=True))

    return once_per_run(tmp_path_factory, "doctor-live-reports", diagnose_all)


def _live(live_reports: dict[str, Report | Exception], key: str) -> Report:
    report = live_reports[key]
    if isinstance(report, Exception):
        raise report
    assert report.live.state is ProbeState.ON, report.live
    return report


@pytest.fixture(scope="session")
def variants(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every fixture tests/doctor_variants.py describes, written once per session."""
    dest = tmp_path_factory.mktemp("doctor-variants")
    for name, variant in {**doctor_variants.BROKEN, **doctor_variants.CLEAN}.items():
        doctor_variants.write(name, variant, dest)
    return dest


def _root(name: str, variants: Path) -> Path:
    """A code's own package (tests/doctor_fixtures.py), the hand-written clean plugin, or a CLEAN variant."""
    own = doctor_fixtures.own_package(name)
    if own is not None:
        return own.root(variants)
    return FIXTURES / name if name == "clean" else variants / name


def _diagnose(name: str, *, live: bool, variants: Path) -> Report:
    return diagnose(_root(name, variants), live=live, vllm_plugins=PLUGINS.get(name))


def _summary(report: Report) -> str:
    return "\n".join(f"{f.severity.value} {f.code} {f.where}: {f.message}" for f in report.findings) or "none"


@pytest.mark.parametrize("name", STATIC)
def test_static_check_reports_exactly_its_code(name: str, variants: Path) -> None:
    report = _diagnose(name, live=False, variants=variants)
    expected = {name} | ALSO.get(name, set()) | doctor_variants.BROKEN.get(name, doctor_variants.Variant({})).also
    assert report.codes == expected, _summary(report)
    assert report.live.state is ProbeState.OFF


@pytest.mark.parametrize("name", sorted(doctor_variants.CLEAN))
def test_intended_patterns_are_not_reported(name: str, variants: Path) -> None:
    report = _diagnose(name, live=False, variants=variants)
    assert report.codes == set(doctor_variants.CLEAN[name].also), _summary(report)


@pytest.fixture(scope="session")
def vllm_imports_torch() -> bool:
    code = "import sys, vllm; print('torch' in sys.modules)"
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return completed.stdout.strip() == "True"


@pytest.mark.parametrize("name", sorted(LIVE_ONLY))
def test_live_probe_reports_exactly_its_code(name: str, live_reports, vllm_imports_torch: bool) -> None:
    report = _live(live_reports, name)
    expected = {name} | ALSO.get(name, set())
    if name == "import-cost-torch" and vllm_imports_torch:
        expected = set()  # vLLM 0.32: every vLLM process imports torch before it loads any plugin
    assert report.codes == expected, _summary(report)


def test_a_patch_that_wraps_its_own_replacement_when_called_again_is_found(live_reports) -> None:
    report = _live(live_reports, "general-plugin-not-idempotent")
    messages = [f.message for f in report.findings if f.code == "general-plugin-not-idempotent"]
    assert len(messages) == 3, _summary(report)
    [patch] = [m for m in messages if "again:" in m and "Scheduler.schedule" in m]
    assert "vllm.v1.core.sched.scheduler.Scheduler._fx_original_schedule" in patch and "RecursionError" in patch
    # an offloading spec registered without a guard: OffloadingSpecFactory refuses the name the second time
    [offload] = [m for m in messages if "FxIdemSpec" in m]
    assert "ValueError" in offload, offload


@pytest.mark.parametrize("name", sorted(LIVE_ONLY - NEEDS_OTHERS))
def test_live_fixture_is_clean_without_the_probe(name: str, variants: Path) -> None:
    """The static checks do not guess at what only the probe can observe."""
    report = _diagnose(name, live=False, variants=variants)
    assert report.codes == ALSO.get(name, set()), _summary(report)


@pytest.mark.parametrize("name", sorted(NEEDS_OTHERS))
def test_conflicts_need_a_second_plugin(name: str, live_reports) -> None:
    """Alone in the environment, claiming CUSTOM or replacing RMSNorm is fine."""
    report = _live(live_reports, f"alone:{name}")
    assert not report.findings, _summary(report)


def test_hand_written_clean_plugin_has_no_findings(live_reports) -> None:
    report = _live(live_reports, "clean")
    assert not report.findings, _summary(report)


def _environment_state() -> tuple[object, ...]:
    site_packages = Path(installed.installed_vllm().source or sys.prefix).parent
    distributions = sorted((d.metadata["Name"] or "", d.version) for d in importlib.metadata.distributions())
    return (
        list(sys.path),
        dict(os.environ),
        distributions,
        sorted(p.name for p in site_packages.iterdir()),
        sorted(m for m in sys.modules if m.startswith("fx_")),
        sorted(p.name for p in (FIXTURES / "clean").rglob("*")),
    )


def test_live_probe_leaves_the_environment_alone() -> None:
    before = _environment_state()
    report = diagnose(FIXTURES / "clean", live=True, use_cache=False)
    assert report.live.state is ProbeState.ON, report.live
    assert _environment_state() == before


def test_cli_json_and_exit_codes() -> None:
    broken = run_cli("doctor", str(FIXTURES / "kv-connector-name-taken"), "--no-live", "--json")
    assert broken.exit_code == 1, broken.output
    data = json.loads(broken.output)
    assert [f["code"] for f in data["findings"]] == ["kv-connector-name-taken"]
    assert set(data["findings"][0]) == {"severity", "code", "where", "message", "fix"}
    assert data["findings"][0]["where"].endswith("plugin.py:14")

    warned = run_cli("doctor", str(FIXTURES / "scheduler-not-async"), "--no-live")
    assert warned.exit_code == 0, warned.output
    assert "scheduler-not-async" in warned.output and "warning" in warned.output

    clean = run_cli("doctor", str(FIXTURES / "clean"), "--no-live")
    assert clean.exit_code == 0 and "no findings" in clean.output


def test_cli_plugins_option_overrides_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VLLM_PLUGINS", "fx_plugins_empty")
    assert run_cli("doctor", str(FIXTURES / "plugins-empty"), "--no-live").exit_code == 0
    result = run_cli("doctor", str(FIXTURES / "plugins-empty"), "--no-live", "--plugins", "", "--json")
    assert result.exit_code == 1
    assert [f["code"] for f in json.loads(result.output)["findings"]] == ["plugins-empty"]


@pytest.mark.engine
def test_the_generated_logits_processor_claiming_argmax_invariance_is_caught(tmp_path: Path) -> None:
    """Its masking happens in helpers (a dispatch, then a Triton kernel or torch), and only for requests that
    pass its parameter: the static check follows the logits into them, the probe sends the parameter."""
    package = render_example("logits-processor", tmp_path / "my_lp")
    processor = package / "src/my_lp/logits/processor.py"
    source = processor.read_text(encoding="utf-8")
    claim = 'greedy requests must go through apply() too."""\n            return False'
    assert claim in source
    processor.write_text(source.replace(claim, claim.replace("return False", "return True")), encoding="utf-8")

    assert diagnose(package, live=False).codes == {"logits-argmax-masks"}
    report = diagnose(package, live=True, use_cache=False)
    assert report.live.state is ProbeState.ON, report.live
    assert report.codes == {"logits-argmax-masks", "logits-argmax-claim"}, _summary(report)
    (claimed,) = [f for f in report.findings if f.code == "logits-argmax-claim"]
    assert "(target_token=3 in 2 of them)" in claimed.message, claimed.message


def test_a_worker_extension_module_initialising_cuda_is_reported_by_the_probe(tmp_path: Path) -> None:
    """No entry point imports the extension's module: the probe imports it as vLLM's workers do, every one."""
    package = doctor_variants.write(
        "worker-extension-cuda-at-import",
        doctor_variants.Variant(
            {
                "ext.py": '''
                """Weight-sync methods mixed into every worker."""
                import torch

                DEVICE_NAME = torch.cuda.get_device_name(0) if torch.cuda.device_count() else "cpu"
                STREAM_DEVICE = torch.cuda.current_device()


                class FxWorkerExtension:
                    def fx_device_name(self) -> str:
                        return DEVICE_NAME
                ''',
                "launch.py": '''
                """Starts an engine with the extension."""


                def engine():
                    from vllm import LLM

                    return LLM("m", worker_extension_cls="fx_worker_extension_cuda_at_import.ext.FxWorkerExtension")
                ''',
            }
        ),
        tmp_path,
    )
    assert diagnose(package, live=False).codes == set()
    report = diagnose(package, live=True, use_cache=False)
    assert report.live.state is ProbeState.ON, report.live
    (finding,) = report.findings
    assert finding.code == "import-cost-cuda", _summary(report)
    assert finding.where == "worker extension fx_worker_extension_cuda_at_import.ext.FxWorkerExtension", finding.where


def test_the_unregistered_component_fix_names_the_line_to_add(variants: Path) -> None:
    report = _diagnose("component-not-registered", live=False, variants=variants)
    (finding,) = report.findings
    assert '"fx_component_not_registered.kv.registration:register"' in finding.fix, finding.fix
    assert "<" not in finding.fix


def test_the_excluded_package_fix_names_each_plugin_once(tmp_path: Path) -> None:
    """Its general plugin and a stat logger share the package's name; VLLM_PLUGINS names it with a space."""
    package = doctor_variants.write(
        "plugins-excludes-twice",
        doctor_variants.Variant(
            {"stats.py": '"""A stat logger."""\n\n\nclass FxStats:\n    pass\n'},
            pyproject="""
            [project.entry-points."vllm.stat_logger_plugins"]
            fx_plugins_excludes_twice = "fx_plugins_excludes_twice.stats:FxStats"
            """,
        ),
        tmp_path,
    )
    report = diagnose(package, live=False, vllm_plugins="lora_filesystem_resolver, fx_plugins_excludes_twice")
    fixes = {f.fix for f in report.findings if f.code == "plugins-excludes-package"}
    assert fixes == {"add it: VLLM_PLUGINS=lora_filesystem_resolver,fx_plugins_excludes_twice"}, _summary(report)


def test_conflict_markers_are_named_in_modules_and_in_generated_files() -> None:
    report = diagnose(FIXTURES / "update-conflict-markers", live=False)
    where = sorted(finding.where for finding in report.findings)
    assert where == ["docs/tiles.md:3", "src/fx_update_conflict_markers/tiles.py:3"], _summary(report)
    assert "does not parse" in next(f.message for f in report.findings if f.where.endswith(".py:3"))


def test_cli_rejects_a_directory_without_pyproject(tmp_path: Path) -> None:
    result = run_cli("doctor", str(tmp_path), "--no-live")
    assert result.exit_code == 2
    assert "no pyproject.toml" in result.output


def test_every_code_has_a_fixture_and_a_documented_example() -> None:
    # vllm-not-installed needs an environment without vLLM: test_without_vllm_only_says_so_once covers it;
    # the environment's codes need two installed plugins: tests/test_doctor_reading.py covers them;
    # the codes only doctor --vllm finds have their fixtures in tests/fixtures/releases (tests/test_releases.py)
    across_releases = {code for code, entry in codes.codes().items() if entry.section == releases.SECTION}
    # declared patches are found against the installed vLLM too, but their fixture is a release fixture
    # (tests/fixtures/releases/patch): a target that changed needs two releases to show
    across_releases |= patches.CODES
    # a plain run finds them against the installed vLLM too: those with a variant of their own are counted here
    across_releases -= set(doctor_variants.BROKEN)
    # the Ray codes need Ray in play (--executor ray, RAY_ADDRESS): tests/test_doctor_ray.py covers them
    ray = {code for code, entry in codes.codes().items() if entry.section == probe_ray.SECTION}
    registered = set(codes.codes()) - across_releases - ray
    assert registered - {"vllm-not-installed"} - ENVIRONMENT_CODES == set(BROKEN), (
        f"codes without a fixture: {registered - set(BROKEN)}; fixtures without a code: {set(BROKEN) - registered}"
    )
    for code, entry in codes.codes().items():
        assert entry.example.strip() and entry.summary.strip(), f"codes.toml gives {code} no summary or example"


def test_docs_list_the_registry() -> None:
    assert docs_with_codes(DOCS.read_text(encoding="utf-8")) == DOCS.read_text(encoding="utf-8"), (
        "docs/doctor.md is stale: run python scripts/doctor_docs.py"
    )


def test_doctor_help_loads_no_heavy_module() -> None:
    code = (
        "import sys\n"
        "from vllm_scaffold.cli import app\n"
        "try:\n    app(['doctor', '--help'])\nexcept SystemExit:\n    pass\n"
        "heavy = ('vllm', 'torch', 'copier', 'jinja2', 'vllm_scaffold.doctor')\n"
        "print('LOADED', [m for m in heavy if m in sys.modules])\n"
    )
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "LOADED []" in output
    assert "--plugins" in output and "--no-live" in output


@pytest.mark.parametrize("name", sorted(doctor_variants.CONTRASTS))
def test_intended_patterns_are_reported_without_what_makes_them_intended(name: str, tmp_path: Path) -> None:
    assert set(doctor_variants.CONTRASTS) == set(doctor_variants.CLEAN)
    report = diagnose(doctor_variants.write_contrast(name, tmp_path), live=False, vllm_plugins=None)
    assert doctor_variants.CONTRASTS[name][3] in report.codes, _summary(report)


@pytest.mark.parametrize("name", sorted(doctor_variants.IMPORT_TIME))
def test_code_run_when_vllm_imports_the_entry_point_is_read(name: str, tmp_path: Path) -> None:
    variant, where, detail = doctor_variants.IMPORT_TIME[name]
    report = diagnose(doctor_variants.write(name, variant, tmp_path), live=False, vllm_plugins=None)
    found = [f for f in report.findings if f.code == "general-plugin-side-effects"]
    assert report.codes <= {"general-plugin-side-effects"}, _summary(report)
    if where is None:
        assert not found, _summary(report)
        return
    [finding] = found
    assert finding.where == where, _summary(report)
    assert detail in finding.details, finding.details
    importing_only = not where.endswith("plugin.py:4")
    assert finding.message.startswith("importing the general plugin") == importing_only, finding.message


def test_self_attributes_something_defines_are_not_reported(tmp_path: Path) -> None:
    """The plugin assigns them, an ancestor outside vLLM's index may, or a __getattr__ answers: no finding."""
    variant = doctor_variants.Variant({"manager.py": doctor_variants.SELF_ATTRIBUTES_DEFINED})
    report = diagnose(doctor_variants.write("self-attributes-defined", variant, tmp_path), live=False)
    assert "vllm-self-attribute-missing" not in report.codes, _summary(report)
