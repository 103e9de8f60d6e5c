"""Which code of a plugin module runs only under a guard (`doctor/reading/guards.py`): the installed checks'
innermost-guard map, the release check's guarded spans, and the fallbacks a vLLM never runs."""

from __future__ import annotations

import ast

import pytest

from tests.reading_sources import first, module_of
from vllm_scaffold.doctor.reading.guards import (
    ATTRIBUTE_ERRORS,
    GuardKind,
    capability_check,
    capability_test,
    dead_fallbacks,
    guard_at,
    guards,
    leaves,
)

SOURCE = """
import contextlib
import sys
from typing import TYPE_CHECKING

import vllm

if TYPE_CHECKING:
    from vllm.config import VllmConfig
else:
    from vllm.config import ModelConfig

try:
    from vllm.new import Thing
except ImportError:
    Thing = None

try:
    value = int("3")
except ValueError:
    value = 0

if vllm.__version__ >= "0.33":
    from vllm.later import Later
else:
    from vllm.earlier import Later

if sys.version_info >= (3, 12):
    from vllm.py312 import Fast

if hasattr(vllm, "platforms"):
    from vllm.platforms import current_platform

with contextlib.suppress(ImportError):
    from vllm.optional import Extra
"""


def _kind(text: str, where: str, kind: type[ast.AST] = ast.ImportFrom) -> GuardKind | None:
    module = module_of(text)
    guard = guards(module).get(id(first(module, kind, where)))
    return guard.kind if guard else None


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ("from vllm.config import VllmConfig", GuardKind.TYPE_CHECKING),
        ("from vllm.config import ModelConfig", None),  # the else branch of TYPE_CHECKING runs
        ("from vllm.new import Thing", GuardKind.IMPORT_ERROR),
        ("from vllm.later import Later", GuardKind.VLLM_VERSION),
        ("from vllm.earlier import Later", GuardKind.VLLM_VERSION),
        ("from vllm.py312 import Fast", None),  # a condition on Python's version, not vLLM's
        ("from vllm.platforms import current_platform", GuardKind.FEATURE_TEST),
        ("from vllm.optional import Extra", GuardKind.IMPORT_ERROR),
    ],
)
def test_guards_name_the_innermost_guard_of_each_import(where: str, expected: GuardKind | None) -> None:
    assert _kind(SOURCE, where) is expected


def test_a_try_block_guards_only_for_the_exceptions_asked_about() -> None:
    module = module_of(SOURCE)
    call = first(module, ast.Call, "int('3')")
    assert id(call) not in guards(module)
    attribute = module_of("try:\n    x = vllm.a.b\nexcept AttributeError:\n    x = None\n")
    read = first(attribute, ast.Attribute, "vllm.a.b")
    assert id(read) not in guards(attribute)
    assert guards(attribute, ATTRIBUTE_ERRORS)[id(read)].kind is GuardKind.IMPORT_ERROR


def test_the_consequence_names_what_runs_instead() -> None:
    module = module_of(SOURCE)
    guard = guards(module)[id(first(module, ast.ImportFrom, "from vllm.new import Thing"))]
    assert guard.consequence(module) == (
        "the rest of the try block at pkg/mod.py:13 (from vllm.new import Thing) silently switches off and the "
        "except branch at pkg/mod.py:15 runs instead"
    )


def test_dead_fallbacks_are_the_handlers_of_imports_the_release_has() -> None:
    module = module_of(SOURCE)
    fallback = first(module, ast.Assign, "Thing = None")
    assert id(fallback) in dead_fallbacks(module, lambda source, name: True)
    assert id(fallback) not in dead_fallbacks(module, lambda source, name: name != "Thing")
    relative = module_of("try:\n    from .adapter import X\nexcept ImportError:\n    X = None\n")
    assert dead_fallbacks(relative, lambda source, name: True) == set()  # the package's own matter


@pytest.mark.parametrize(
    ("test", "expected"),
    [
        ("vllm.__version__ >= '0.33'", GuardKind.VLLM_VERSION),
        ("is_vllm_version_at_least('0.33')", GuardKind.VLLM_VERSION),
        ("hasattr(vllm, 'x')", GuardKind.FEATURE_TEST),
        ("importlib.util.find_spec('vllm.x') is not None", GuardKind.FEATURE_TEST),
        ("flag and other", None),
    ],
)
def test_capability_test(test: str, expected: GuardKind | None) -> None:
    assert capability_test(ast.parse(test, mode="eval").body) is expected


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        ("return", True),
        ("raise ValueError()", True),
        ("pytest.skip('old vLLM')", True),
        ("sys.exit(0)", True),
        ("exit()", True),
        ("self.skip()", False),  # a method named skip may well return
        ("print('x')", False),
    ],
)
def test_leaves(statement: str, expected: bool) -> None:
    assert leaves(ast.parse(statement).body[0]) is expected


RELEASE_SOURCE = """
from typing import TYPE_CHECKING

import vllm


def _has_runner():
    try:
        import vllm.v1.worker.gpu
    except ImportError:
        return False
    return True


def _answer():
    return 42


def setup():
    if not hasattr(vllm, "platforms"):
        return
    vllm.platforms.current_platform.setup()


def start():
    if not _has_runner():
        return
    vllm.v1.worker.gpu.start()


def plain():
    if _answer():
        return
    vllm.plain.call()


if TYPE_CHECKING:
    if hasattr(vllm, "typed"):
        vllm.typed.only()

if not TYPE_CHECKING:
    vllm.runtime.call()
"""


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ("vllm.platforms.current_platform.setup()", GuardKind.FEATURE_TEST),  # after `if not hasattr: return`
        ("vllm.v1.worker.gpu.start()", GuardKind.FEATURE_TEST),  # after a call of a capability check
        ("vllm.plain.call()", None),  # `_answer()` tests nothing about vLLM
        ("vllm.typed.only()", GuardKind.TYPE_CHECKING),  # TYPE_CHECKING wins over the inner test
        ("vllm.runtime.call()", None),  # `if not TYPE_CHECKING:` runs
    ],
)
def test_guard_at_reads_guarded_spans(where: str, expected: GuardKind | None) -> None:
    module = module_of(RELEASE_SOURCE)
    assert guard_at(module, first(module, ast.Call, where)) is expected


def test_capability_check_is_a_small_function_answering_a_test() -> None:
    module = module_of(RELEASE_SOURCE)
    assert capability_check(module, "_has_runner")
    assert not capability_check(module, "_answer")
    assert not capability_check(module, "missing")
