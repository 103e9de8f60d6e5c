"""The evaluator of the vLLM version conditions plugins write: each shape published plugins use, decided on one
release, and the conditions it must leave undecided rather than guess."""

from __future__ import annotations

import ast
from pathlib import Path
from textwrap import dedent

import pytest
from doctor_variants import Variant, write
from doctor_variants_installed import BROKEN

from vllm_scaffold.doctor.reading.package import Module
from vllm_scaffold.doctor.reading.versions import holds_on
from vllm_scaffold.doctor.runner import diagnose, diagnose_releases


def _module(source: str) -> Module:
    return Module("fx_plugin.plugin", Path("plugin.py"), "plugin.py", False, ast.parse(dedent(source)))


def _decide(source: str, version: str = "0.32.0") -> bool | None:
    """The value, on `version`, of the test of the module's last `if` (inside `register()` when there is one)."""
    module = _module(source)
    test = [node for node in ast.walk(module.tree) if isinstance(node, ast.If)][-1].test  # type: ignore[arg-type]
    return holds_on(module, test, version)


HEADER = "import vllm\nfrom packaging.version import Version\nfrom packaging import version as pv\n"

DECIDED = {
    "version-literals": ('if Version(vllm.__version__) >= Version("0.12.0"): pass', True),
    "chained": ('if Version("0.12.0") <= Version(vllm.__version__) < Version("0.17.0"): pass', False),
    "names-in-function": (
        """
        def register():
            current = Version(vllm.__version__)
            lowest = Version("0.12.0")
            highest = Version("0.17.0")
            if lowest > current or current >= highest:
                raise RuntimeError("unsupported")
        """,
        True,
    ),
    "module-constant": (
        """
        VLLM_VERSION = Version(vllm.__version__)
        OLDEST = Version("0.30")
        if VLLM_VERSION >= OLDEST: pass
        """,
        True,
    ),
    "packaging-parse": ('if pv.parse(vllm.__version__) < pv.parse("0.10"): pass', False),
    "startswith": ('if vllm.__version__.startswith("0.3"): pass', True),
    "startswith-other": ('if vllm.__version__.startswith("0.10"): pass', False),
    "split-tuple": ('if tuple(int(p) for p in vllm.__version__.split(".")[:2]) >= (0, 32): pass', True),
    "split-map": ('if tuple(map(int, vllm.__version__.split(".")[:2])) < (0, 30): pass', False),
    "version-tuple": ("if vllm.__version_tuple__[:2] == (0, 32): pass", True),
    "from-import": ('from vllm import __version__ as VLLM_VERSION\nif VLLM_VERSION != "0.18.0": pass', True),
    "not-and-or": (
        'if not (Version(vllm.__version__) < Version("0.30") or Version(vllm.__version__) >= Version("0.40")): pass',
        True,
    ),
    "helper-without-arguments": (
        """
        def _supported():
            return Version(vllm.__version__) >= Version("0.30")
        if not _supported(): pass
        """,
        False,
    ),
    "helper-with-argument": (
        """
        def is_vllm_at_least(target):
            return Version(vllm.__version__) >= Version(target)
        if is_vllm_at_least("0.33.0"): pass
        """,
        False,
    ),
    "metadata-version": (
        'import importlib.metadata\nif Version(importlib.metadata.version("vllm")) >= Version("0.30"): pass',
        True,
    ),
}


@pytest.mark.parametrize("shape", sorted(DECIDED))
def test_each_shape_is_decided_on_the_release(shape: str) -> None:
    source, expected = DECIDED[shape]
    assert _decide(HEADER + dedent(source)) is expected


UNDECIDED = {
    "a-setting": "import os\nif vllm.__version__ != os.environ['FX_PIN']: pass",
    "a-parameter": "def register(pin):\n    if vllm.__version__ != pin:\n        raise RuntimeError(pin)",
    "assigned-twice": 'PIN = "0.10"\nPIN = "0.32"\nif vllm.__version__.startswith(PIN): pass',
    "read-from-a-file": "PIN = open('pin.txt').read()\nif vllm.__version__ != PIN: pass",
    "another-package": 'import torch\nif Version(torch.__version__) >= Version("2.5"): pass',
    "python-version": "import sys\nif sys.version_info >= (3, 12): pass",
    "helper-of-a-setting": (
        "import os\ndef pinned():\n    return os.environ.get('PIN')\nif vllm.__version__ != pinned(): pass"
    ),
    "version-and-setting": 'import os\nif vllm.__version__.startswith("0.3") and os.environ.get("X"): pass',
}


@pytest.mark.parametrize("shape", sorted(UNDECIDED))
def test_what_the_code_alone_cannot_decide_stays_undecided(shape: str) -> None:
    assert _decide(HEADER + UNDECIDED[shape]) is None


def test_a_version_tuple_of_a_local_build_is_not_guessed() -> None:
    assert _decide(HEADER + "if vllm.__version_tuple__[:2] == (0, 32): pass", "0.32.0+cpu") is None
    assert _decide(HEADER + 'if Version(vllm.__version__) >= Version("0.30"): pass', "0.32.0+cpu") is True


def test_no_release_decides_nothing() -> None:
    assert _decide(HEADER + 'if vllm.__version__.startswith("0.3"): pass', "") is None


def test_code_behind_a_pin_that_raises_on_the_release_is_not_reached_there(tmp_path: Path) -> None:
    report = diagnose(
        write("general-plugin-refuses-release", BROKEN["general-plugin-refuses-release"], tmp_path), live=False
    )
    assert report.codes == {"general-plugin-refuses-release"}
    [hidden] = [f for f in report.findings if f.code == "vllm-import-missing"]
    assert hidden.suppressed is not None and "version pin at src/" in hidden.suppressed
    assert [(link.claim, link.holds) for link in hidden.chain][-1] == ("the code runs", False)


def test_code_behind_a_pin_that_admits_the_release_is_reached(tmp_path: Path) -> None:
    """Before the pin was evaluated, the module imported after it counted as reached only under a condition,
    and its missing import was a warning; on 0.32, which the pin admits, it is an error."""
    variant = Variant(
        {
            "plugin.py": '''
            """The general plugin: vLLM calls register() in every process."""
            import vllm
            from packaging.version import Version


            def register() -> None:
                if Version(vllm.__version__) < Version("0.30.0"):
                    raise RuntimeError("this plugin needs vLLM 0.30 or later")
                from fx_pin_admits import model

                model.FxModel.ready = True
            ''',
            "model.py": '''
            """The Fx model."""
            from vllm.multimodal.inputs import MultiModalDataDict


            class FxModel:
                ready = False
                data: MultiModalDataDict | None = None
            ''',
        }
    )
    report = diagnose(write("pin-admits", variant, tmp_path), live=False)
    [found] = [f for f in report.active if f.code == "vllm-import-missing"]
    assert found.severity == "error", found.message
    assert all(link.holds for link in found.chain)


_OLD_RELEASE_BRANCH = Variant(
    {
        "plugin.py": '''
        """The general plugin: vLLM calls register() in every process."""
        import vllm
        from packaging.version import Version

        if Version(vllm.__version__) < Version("0.20.0"):
            from vllm.multimodal.inputs import MultiModalDataDict
        else:
            MultiModalDataDict = dict


        def register() -> None:
            vllm.FX_DATA = MultiModalDataDict
        ''',
    }
)


def test_a_version_branch_the_release_does_not_take_is_not_reported(tmp_path: Path) -> None:
    root = write("old-release-branch", _OLD_RELEASE_BRANCH, tmp_path)
    assert "vllm-import-guarded" not in diagnose(root, live=False).codes
    assert all("vllm-import-guarded" not in report.codes for report in diagnose_releases(root, ["0.32.0"]))


def test_a_version_branch_doctor_cannot_decide_stays_guarded(tmp_path: Path) -> None:
    """A bound it cannot read (a name defined nowhere here) leaves the branch as it was: a guarded import."""
    taken = Variant({"plugin.py": _OLD_RELEASE_BRANCH.files["plugin.py"].replace('< Version("0.20.0")', ">= OLD")})
    assert "vllm-import-guarded" in diagnose(write("taken-branch", taken, tmp_path), live=False).codes
