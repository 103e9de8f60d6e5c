"""The lora-resolver template: its questions, and `add` next to another component."""

from __future__ import annotations

from pathlib import Path

from seam_helpers import added, assert_registered

from tests.helpers import run_cli


def test_add_next_to_a_general_plugin_with_answers(host: Path) -> None:
    answers = ["--data", "dir_env=HOST_LORAS", "--data", "check_base_model=false"]
    done = run_cli("add", "lora-resolver", "adapters", *answers, cwd=host)
    assert done.exit_code == 0, done.output
    source = (host / "src/host/adapters/resolver.py").read_text()
    assert 'DIR_ENV = "HOST_LORAS"' in source and "CHECK_BASE_MODEL = False" in source
    assert_registered(host, "host.adapters.resolver:register")
    manifest = added(host, "lora-resolver")
    assert manifest[1]["object"] == "host.adapters.resolver:AdaptersResolver"
    assert "HOST_LORAS=DIR" in manifest[1]["enable"][0]
