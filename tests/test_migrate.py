"""`migrate --vllm VERSION`: a plugin's code rewritten for the names vLLM really moved or renamed.

The fixture (tests/fixtures/migrate/fx_uvicorn_kv) targets vLLM 0.31.0 and uses three names the shipped
indexes show changing by 0.33.0: UvicornAccessLogFilter left vllm.logging_utils.access_log_filter for
vllm.logging_utils.uvicorn_logging (0.32), is_quantized_kv_cache left vllm.utils.torch_utils for
vllm.v1.kv_cache_interface (0.33), and maybe_filter_parallel_tool_calls's first parameter `choice` became
`item` (0.32).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers import build_file_tree, run_cli, snapshot

FIXTURE = Path(__file__).parent / "fixtures/migrate/fx_uvicorn_kv"
PLUGIN = "src/fx_uvicorn_kv/plugin.py"
MOVES = [
    "from vllm.logging_utils.access_log_filter import UvicornAccessLogFilter -> from "
    "vllm.logging_utils.uvicorn_logging import UvicornAccessLogFilter",
    "from vllm.utils.torch_utils import is_quantized_kv_cache -> from vllm.v1.kv_cache_interface import "
    "is_quantized_kv_cache",
    "maybe_filter_parallel_tool_calls(choice=...) -> maybe_filter_parallel_tool_calls(item=...)",
]


@pytest.fixture
def package(tmp_path: Path) -> Path:
    return Path(shutil.copytree(FIXTURE, tmp_path / FIXTURE.name))


def test_the_fixture_is_clean_on_its_release_and_broken_on_the_target(package: Path) -> None:
    assert run_cli("doctor", str(package), "--vllm", "0.31.0").exit_code == 0
    broken = run_cli("doctor", str(package), "--vllm", "0.33.0", "--json")
    assert broken.exit_code == 1
    codes = sorted(finding["code"] for finding in json.loads(broken.stdout)["releases"][0]["findings"])
    assert codes == ["vllm-call-signature", "vllm-import-missing", "vllm-import-missing"], broken.output


def test_dry_run_lists_each_rewrite_with_its_reason_prints_the_diff_and_writes_nothing(package: Path) -> None:
    before = snapshot(package)

    result = run_cli("migrate", "--vllm", "0.33.0", "--project", str(package), "--dry-run")

    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert (
        lines[0] == "from vLLM 0.31.0 to 0.33.0 (0.31.0: the newest verified release of its range >=0.31.0,<0.32 older "
        "than 0.33.0)"
    )
    rewrites = [line for line in lines if line.startswith("rewrite ")]
    assert [line.split(": ", 1)[1].split(" (", 1)[0] for line in rewrites] == MOVES
    assert "with the same definition as 0.31.0's" in rewrites[0]
    assert "takes item where 0.31.0 took choice" in rewrites[2]
    assert "-from vllm.logging_utils.access_log_filter import UvicornAccessLogFilter" in lines
    assert "+    return maybe_filter_parallel_tool_calls(item=choice, request=request)" in lines
    assert lines[-1] == "dry run: nothing was written"
    assert snapshot(package) == before


def test_the_rewritten_package_passes_doctor_on_the_target_and_keeps_its_comments(package: Path) -> None:
    result = run_cli("migrate", "--vllm", "0.33.0", "--project", str(package))

    assert result.exit_code == 0, result.output
    assert not [line for line in result.output.splitlines() if line.startswith("left ")]
    source = (package / PLUGIN).read_text()
    assert "# Moved in 0.32 (vllm.logging_utils.access_log_filter -> vllm.logging_utils.uvicorn_logging).\n" in source
    assert "    maybe_filter_parallel_tool_calls,  # its first parameter is `item` from 0.32 on\n" in source
    assert "from vllm.utils.torch_utils import (\n    get_dtype_size,\n)\n" in source
    assert (
        "from vllm.v1.kv_cache_interface import is_quantized_kv_cache  # moved to vllm.v1.kv_cache_interface" in source
    )
    checked = run_cli("doctor", str(package), "--vllm", "0.33.0")
    assert checked.exit_code == 0 and "no findings" in checked.output, checked.output
    again = run_cli("migrate", "--vllm", "0.33.0", "--project", str(package))
    assert again.exit_code == 0 and "nothing to rewrite" in again.output


def test_one_release_step_rewrites_only_that_step(package: Path) -> None:
    result = run_cli("migrate", "--vllm", "0.32.0", "--project", str(package), "--dry-run")

    assert result.exit_code == 0, result.output
    rewrites = [
        line.split(": ", 1)[1].split(" (", 1)[0] for line in result.output.splitlines() if line.startswith("rewrite ")
    ]
    assert rewrites == [MOVES[0], MOVES[2]]  # is_quantized_kv_cache is still in vllm.utils.torch_utils in 0.32


def test_what_it_cannot_rewrite_is_listed_with_the_doctor_code_and_exits_1(tmp_path: Path) -> None:
    root = build_file_tree(
        {
            "pyproject.toml": (FIXTURE / "pyproject.toml").read_text(),
            "src/fx_uvicorn_kv/__init__.py": '"""A plugin."""\n',
            PLUGIN: '''
                """Imports a module vLLM 0.33 dropped whole, and a moved name through its module."""

                import vllm.entrypoints.serve.utils.tool_calls_utils as tool_calls
                import vllm.utils.torch_utils as torch_utils
                from vllm.v1.core.kv_cache_utils import get_kv_cache_groups  # moved to kv_cache_planning


                def register() -> None:
                    torch_utils.is_quantized_kv_cache("fp8")
                    tool_calls.maybe_filter_parallel_tool_calls(choice=None, request=None)
                    get_kv_cache_groups
            ''',
        },
        tmp_path / "fx",
    )

    result = run_cli("migrate", "--vllm", "0.33.0", "--project", str(root))

    assert result.exit_code == 1, result.output
    assert (
        "from vllm.v1.core.kv_cache_utils import get_kv_cache_groups -> from vllm.v1.core.kv_cache_planning"
        in result.output
    )
    assert "tool_calls.maybe_filter_parallel_tool_calls(item=None, request=None)" in (root / PLUGIN).read_text()
    left = [line for line in result.output.splitlines() if line.startswith("left ")]
    assert len(left) == 1 and "vllm-attribute-missing" in left[0] and "is_quantized_kv_cache" in left[0], result.output


def test_the_v1_logits_interface_is_not_a_move_and_is_left_with_its_fix(tmp_path: Path) -> None:
    """vLLM 0.34 removed the V1 runner's interface: nothing defines it elsewhere, so migrate rewrites nothing and
    leaves doctor's finding, with the fix that names Model Runner V2's base."""
    root = tmp_path / "logits-processor"
    shutil.copytree(Path(__file__).parent / "fixtures" / "packages" / "logits-processor-0.33", root)

    result = run_cli("migrate", "--vllm", "0.34.0", "--project", str(root), "--dry-run")

    assert result.exit_code == 1, result.output
    assert "from vLLM 0.33.0 to 0.34.0" in result.output and "nothing to rewrite" in result.output
    left = [line for line in result.output.splitlines() if line.startswith("left ")]
    assert left and all("vllm-import-missing" in line and "processor.py" in line for line in left), result.output
    assert "fix: derive the processor from vllm.v1.worker.gpu.sample.logits_processor.LogitsProcessor" in result.output


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["--vllm", "0.33.0"], "no pyproject.toml"),
        (["--vllm", "not-a-release"], "is not a vLLM version"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(tmp_path: Path, args: list[str], problem: str) -> None:
    project = tmp_path if problem == "no pyproject.toml" else Path(shutil.copytree(FIXTURE, tmp_path / "fx"))
    before = snapshot(project)

    result = run_cli("migrate", *args, "--project", str(project))

    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1 and problem in result.output
    assert snapshot(project) == before


def test_a_target_no_newer_than_the_declared_releases_is_refused(package: Path) -> None:
    result = run_cli("migrate", "--vllm", "0.31.0", "--project", str(package))

    assert result.exit_code == 2 and "holds no verified release older than vLLM 0.31.0" in result.output


def test_the_source_release_is_the_one_the_code_imports_from(tmp_path: Path) -> None:
    """A package declaring `>=0.31.0` whose code imports a name 0.32.0 moved away was written for 0.31.0: that
    is the release it migrates from, said with the name that shows it, and the 0.31-era import is rewritten."""
    pyproject = (FIXTURE / "pyproject.toml").read_text().replace('vllm = ">=0.31.0,<0.32"', 'vllm = ">=0.31.0"')
    root = build_file_tree(
        {
            "pyproject.toml": pyproject,
            "src/fx_uvicorn_kv/__init__.py": '"""A plugin."""\n',
            PLUGIN: '''
                """Loads a chat template the way vLLM 0.31 offered it."""

                from vllm.entrypoints.chat_utils import load_chat_template


                def register() -> None:
                    load_chat_template
            ''',
        },
        tmp_path / "fx",
    )

    result = run_cli("migrate", "--vllm", "0.33.0", "--project", str(root), "--dry-run")

    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == (
        "from vLLM 0.31.0 to 0.33.0 (0.31.0: the newest release of its range >=0.31.0 with every vLLM name the "
        "code imports: vllm.entrypoints.chat_utils.load_chat_template is gone from 0.32.0)"
    )
    assert (
        "rewrite src/fx_uvicorn_kv/plugin.py: from vllm.entrypoints.chat_utils import load_chat_template -> from "
        "vllm.renderers.chat_utils.chat_template import load_chat_template" in result.output
    )
    assert not [line for line in result.output.splitlines() if line.startswith("left ")], result.output
