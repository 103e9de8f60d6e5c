"""Golden copies: `generated_examples/<seam>/` is what `new <seam> <example> --defaults` produces.

Regenerate them after changing a template with `python -m vllm_scaffold.examples [SEAM ...]`; the test
suite renders every template again and fails when a golden copy differs.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from vllm_scaffold.catalog import load_catalog, templated_seam
from vllm_scaffold.scaffold import new_package

EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "generated_examples"


def render_example(seam_key: str, dest: Path) -> Path:
    """Renders the golden package of `seam_key` into `dest` (which must not exist or be empty)."""
    seam = templated_seam(seam_key)
    assert seam.example, f"catalog entry {seam_key} needs an `example` package name"
    new_package(seam_key, seam.example, dest, {}, interactive=False, dry_run=False)
    return dest


def templated_keys() -> list[str]:
    return [seam.key for seam in load_catalog().values() if seam.has_template]


def regenerate(keys: list[str]) -> None:
    EXAMPLES_DIR.mkdir(exist_ok=True)
    for key in keys:
        with tempfile.TemporaryDirectory() as scratch:
            fresh = render_example(key, Path(scratch) / key)
            target = EXAMPLES_DIR / key
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(fresh, target)
        print(f"regenerated {target.relative_to(EXAMPLES_DIR.parent)}")


if __name__ == "__main__":
    regenerate(sys.argv[1:] or templated_keys())
