"""The command line contract: help, list, explain."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import run_cli
from vllm_scaffold.catalog import load_catalog
from vllm_scaffold.terminal import console

SEAM_KEYS = [
    "general-plugin", "logits-processor", "endpoint", "stat-logger", "attention-backend", "quantization",
    "linear-kernel", "custom-op", "scheduler", "kv-connector", "kv-offload", "platform", "model", "io-processor",
    "lora-resolver", "worker-extension", "tool-parser", "reasoning-parser",
    "patch",
]  # fmt: skip

HEAVY = ("copier", "jinja2", "tomlkit", "torch", "vllm", "yaml")


def test_help_loads_no_heavy_module() -> None:
    code = (
        "import sys\n"
        "from vllm_scaffold.cli import main\n"
        "sys.argv = ['vllm-scaffold', '--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"print('HEAVY', [m for m in {HEAVY!r} if m in sys.modules])\n"
    )
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "HEAVY []" in output
    for command in ("new", "add", "list", "explain"):
        assert command in output


def test_catalog_has_every_seam_key() -> None:
    assert sorted(load_catalog()) == sorted(SEAM_KEYS)


def test_list_json_has_the_documented_fields() -> None:
    result = run_cli("list", "--json")
    assert result.exit_code == 0
    entries = json.loads(result.stdout)
    assert [entry["key"] for entry in entries] == list(load_catalog())
    for entry in entries:
        assert entry["group"] or entry["api"]
        for field in ("title", "process_family", "load_timing", "duplicate_policy"):
            assert isinstance(entry[field], str) and entry[field], (entry["key"], field)
        assert isinstance(entry["kernel"], bool)
        assert entry["category"] == load_catalog()[entry["key"]].category
        # The documentation page that ships with the tool, the one `explain` cites.
        page = Path(entry["reference"])
        assert page.is_file() and page.as_posix().endswith(f"docs/seams/{entry['key']}.md"), entry["reference"]


def test_list_table_names_every_seam() -> None:
    result = run_cli("list")
    assert result.exit_code == 0
    for key in SEAM_KEYS:
        assert key in result.stdout


def test_explain_states_processes_timing_selection_and_pitfalls() -> None:
    result = run_cli("explain", "kv-connector")
    assert result.exit_code == 0
    seam = load_catalog()["kv-connector"]
    printed = " ".join(result.stdout.split())  # prose wraps at the output's width
    for text in (seam.process_family, seam.load_timing, seam.pitfalls[0], seam.selection[0]):
        assert " ".join(text.split()) in printed


def test_templated_seams_have_a_template_folder_module_and_example() -> None:
    from vllm_scaffold.generate.rendering import questions, templates_root

    for seam in load_catalog().values():
        if seam.has_template:
            assert (templates_root() / seam.template / "copier.yml").is_file(), seam.key
            assert seam.module and seam.example, seam.key
            questions(seam.template)  # parses


def test_version() -> None:
    from vllm_scaffold import __version__

    result = run_cli("--version")
    assert result.exit_code == 0
    assert result.stdout.strip() == f"vllm-scaffold {__version__}"


@pytest.fixture
def columns_80(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Output as on an 80-column terminal: rich reads COLUMNS when its console is made."""
    monkeypatch.setenv("COLUMNS", "80")
    console.out.cache_clear()
    yield
    console.out.cache_clear()


def assert_fits_without_split_words(output: str, texts: list[str], width: int = 80) -> None:
    """Every line fits `width` unless it is one word, and every word of `texts` appears whole."""
    for line in output.splitlines():
        assert len(line) <= width or len(line.split()) == 1, line
    printed = set(output.split())
    for text in texts:
        for word in text.split():
            assert word in printed, f"{word!r} is split or missing"


def test_list_at_80_columns_keeps_words_whole(columns_80) -> None:
    result = run_cli("list")
    assert result.exit_code == 0
    seams = load_catalog().values()
    texts = [f"{s.key} {s.group or s.api} {s.process_family}" for s in seams]
    assert_fits_without_split_words(result.stdout, texts)
    # Short enough to read: what tells the seams apart, and no column that is the same on every seam.
    assert len(result.stdout.splitlines()) < 6 * len(seams), len(result.stdout.splitlines())
    assert "template: yes" not in result.stdout and "vllm-scaffold explain SEAM" in result.stdout


@pytest.mark.parametrize("columns", ["80", "100"])
def test_the_top_level_help_keeps_every_command_summary_whole(columns: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    result = run_cli("--help")
    commands = result.stdout.split("Commands:")[1]
    assert result.exit_code == 0 and "..." not in commands, commands
    assert re.search(r"^  explain +Explain one seam, or a registry of vLLM\.$", commands, re.MULTILINE), commands


def test_help_after_a_seam_and_explain_list_the_templates_data_keys(columns_80) -> None:
    new = run_cli("new", "custom-op", "--help")
    assert new.exit_code == 0, new.output
    assert "--data KEY=VALUE answers for a custom-op component:" in new.stdout
    for key in ("description", "vllm_range", "op (one of SiluAndMul, RMSNorm; default SiluAndMul)"):
        assert f"  - {key}" in new.stdout, new.stdout
    add = run_cli("add", "attention-backend", "--help")
    assert "  - cudagraph_support (one of NEVER" in add.stdout and "  - vllm_range" not in add.stdout
    assert "  - kernels_env" not in add.stdout  # derived from other answers, never asked
    assert "--data KEY=VALUE answers" not in run_cli("new", "--help").stdout
    explained = run_cli("explain", "logits-processor")
    assert "  - param_name (str; default target_token)" in explained.stdout, explained.stdout
    assert "Usage: vllm-scaffold explain [OPTIONS] {SEAM}" in run_cli("explain", "--help").stdout


def test_list_on_a_wide_terminal_is_a_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "400")
    console.out.cache_clear()
    try:
        result = run_cli("list")
    finally:
        console.out.cache_clear()
    assert result.exit_code == 0
    assert "│ kv-connector" in result.stdout
    assert_fits_without_split_words(result.stdout, [seam.load_timing for seam in load_catalog().values()], 400)


@pytest.mark.parametrize("key", SEAM_KEYS)
def test_explain_at_80_columns_keeps_words_whole(columns_80, key: str) -> None:
    result = run_cli("explain", key)
    assert result.exit_code == 0
    seam = load_catalog()[key]
    assert_fits_without_split_words(result.stdout, [seam.summary, *seam.selection, *seam.pitfalls])


@pytest.mark.parametrize("terminal", [True, False])
def test_errors_wrap_on_a_terminal_and_stay_one_line_otherwise(monkeypatch, terminal: bool) -> None:
    from rich.console import Console

    stream = io.StringIO()
    fake = Console(file=stream, width=60, force_terminal=terminal, no_color=True, highlight=False, soft_wrap=True)
    monkeypatch.setattr(console, "err", lambda: fake)
    message = "--data max_texts=abc: max_texts takes a whole number, got 'abc'; pass e.g. --data max_texts=16"
    console.error(message)
    lines = re.sub(r"\x1b\[[0-9;]*m", "", stream.getvalue()).splitlines()  # without the bold of "error:"
    assert " ".join(" ".join(lines).split()) == f"error: {message}"
    if terminal:
        assert len(lines) > 1 and all(len(line) <= 60 for line in lines), lines
    else:
        assert len(lines) == 1


def test_explain_points_at_a_page_that_ships_in_the_wheel(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parent.parent
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", tmp_path / "dist", root],
        check=True,
        capture_output=True,
    )
    (wheel,) = (tmp_path / "dist").glob("vllm_scaffold-*.whl")
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", target, wheel],
        check=True,
        capture_output=True,
    )
    code = f"import sys; sys.path.insert(0, {str(target)!r}); from vllm_scaffold.cli import app; app()"
    for key in SEAM_KEYS:
        done = subprocess.run(
            [sys.executable, "-c", code, "explain", key], capture_output=True, text=True, cwd=tmp_path, check=False
        )
        assert done.returncode == 0, done.stderr
        page = Path(done.stdout.splitlines()[-1])
        cited = str(page)
        assert page.is_file() and target in page.parents, cited
        assert page.read_text(encoding="utf-8") == (root / "docs" / "seams" / f"{key}.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("columns", ["60", "200"])
def test_help_wraps_at_the_terminals_width_not_80(columns: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """click caps help at 80 columns by default; a wide terminal gets long option lines whole. (A process of its
    own: click's test runner forces 80 columns.)"""
    monkeypatch.setenv("COLUMNS", columns)
    command = [sys.executable, "-m", "vllm_scaffold", "new", "--help"]
    lines = subprocess.run(command, capture_output=True, text=True, check=True).stdout.splitlines()
    assert max(len(line) for line in lines) <= int(columns)
    seam_line = next(line for line in lines if line.strip().startswith("seam"))
    assert seam_line.rstrip().endswith("asked if omitted on a terminal.") == (columns == "200"), seam_line
