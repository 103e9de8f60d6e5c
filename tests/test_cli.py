"""The command line contract: help, list, explain."""

from __future__ import annotations

import json
import subprocess
import sys

from vllm_scaffold.catalog import load_catalog

SEAM_KEYS = [
    "general-plugin", "logits-processor", "endpoint", "stat-logger", "attention-backend", "quantization",
    "linear-kernel", "custom-op", "scheduler", "kv-connector", "platform", "model", "io-processor", "lora-resolver",
]  # fmt: skip

HEAVY = ("copier", "jinja2", "tomlkit", "torch", "vllm", "yaml")


def test_help_loads_no_heavy_module() -> None:
    code = (
        "import sys\n"
        "from vllm_scaffold.cli import app\n"
        "try:\n    app(['--help'])\nexcept SystemExit:\n    pass\n"
        f"print('HEAVY', [m for m in {HEAVY!r} if m in sys.modules])\n"
    )
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "HEAVY []" in output
    for command in ("new", "add", "list", "explain"):
        assert command in output


def test_catalog_has_every_seam_key() -> None:
    assert sorted(load_catalog()) == sorted(SEAM_KEYS)


def test_list_json_has_the_documented_fields(cli) -> None:
    result = cli("list", "--json")
    assert result.exit_code == 0
    entries = json.loads(result.stdout)
    assert [entry["key"] for entry in entries] == list(load_catalog())
    for entry in entries:
        assert entry["group"] or entry["api"]
        for field in ("title", "process_family", "load_timing", "duplicate_policy"):
            assert isinstance(entry[field], str) and entry[field], (entry["key"], field)
        assert isinstance(entry["kernel"], bool)


def test_list_table_names_every_seam(cli) -> None:
    result = cli("list")
    assert result.exit_code == 0
    for key in SEAM_KEYS:
        assert key in result.stdout


def test_explain_states_processes_timing_selection_and_pitfalls(cli) -> None:
    result = cli("explain", "kv-connector")
    assert result.exit_code == 0
    seam = load_catalog()["kv-connector"]
    for text in (seam.process_family, seam.load_timing, seam.pitfalls[0], seam.selection[0]):
        assert text in result.stdout


def test_templated_seams_have_a_template_folder_module_and_example() -> None:
    from vllm_scaffold.rendering import questions, templates_root

    for seam in load_catalog().values():
        if seam.has_template:
            assert (templates_root() / seam.template / "copier.yml").is_file(), seam.key
            assert seam.module and seam.example, seam.key
            questions(seam.template)  # parses
