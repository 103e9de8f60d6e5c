"""Golden copies: `generated_examples/<seam>/` is what `new <seam> <example> --defaults` produces.

A maintainer script, not part of the tool: regenerate the copies after changing a template with
`python scripts/examples.py [SEAM ...]`; the test suite renders every template again (through
`render_example`) and fails when a golden copy differs.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from vllm_scaffold.catalog import templated_keys
from vllm_scaffold.generate.harness_wheel import WHEELS_DIR
from vllm_scaffold.generate.scaffold import render_example

EXAMPLES_DIR = Path(__file__).resolve().parents[1] / "generated_examples"


def regenerate(keys: list[str]) -> None:
    EXAMPLES_DIR.mkdir(exist_ok=True)
    for key in keys:
        with tempfile.TemporaryDirectory() as scratch:
            fresh = render_example(key, Path(scratch) / key)
            target = EXAMPLES_DIR / key
            shutil.rmtree(target, ignore_errors=True)
            # The harness wheel `new` builds is not a render of the templates (generate/harness_wheel.py).
            shutil.copytree(fresh, target)
            shutil.rmtree(target / WHEELS_DIR)
        print(f"regenerated {target.relative_to(EXAMPLES_DIR.parent)}")


if __name__ == "__main__":
    regenerate(sys.argv[1:] or templated_keys())
