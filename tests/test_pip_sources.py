"""scripts/pip_sources.py: pip's package sources, as scripts/test.sh hands them to uv."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from scripts.pip_sources import effective_options

REPOSITORY_ROOT = Path(__file__).resolve().parent.parent

LISTED = """\
:env:.find-links='/srv/wheels'
global.cert='/etc/ssl/certs/ca-certificates.crt'
global.extra-index-url='file:///srv/a/simple file:///srv/b/simple'
global.find-links='/opt/wheels'
user.index-url='https://mirror.invalid/simple'
"""


def test_each_option_comes_from_the_scope_pip_lets_win() -> None:
    assert effective_options(LISTED) == {
        "find-links": ["/srv/wheels"],  # a PIP_* variable overrides the configuration files
        "extra-index-url": ["file:///srv/a/simple", "file:///srv/b/simple"],
        "index-url": ["https://mirror.invalid/simple"],
    }


def test_options_uv_has_no_equivalent_for_are_left_out() -> None:
    assert effective_options("global.cert='/etc/ssl/cert.pem'\nglobal.timeout='60'\n") == {}


def test_the_exports_evaluate_in_a_shell() -> None:
    printed = subprocess.run(
        [sys.executable, "scripts/pip_sources.py"], cwd=REPOSITORY_ROOT, capture_output=True, text=True, check=True
    ).stdout
    shell = subprocess.run(
        ["bash", "-c", f'{printed}\nprintf "%s" "$UV_INDEX_STRATEGY"'], capture_output=True, text=True, check=True
    )
    assert shell.stdout == "unsafe-best-match"
