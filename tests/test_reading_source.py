"""What doctor reads from a module's syntax tree (`doctor/reading/source.py`, `Module` in `package.py`): names
and what they were imported as, calls of registration APIs, names a module binds, what runs at import."""

from __future__ import annotations

import ast

from tests.reading_sources import first, module_of
from vllm_scaffold.doctor.reading.package import walk_nodes
from vllm_scaffold.doctor.reading.source import (
    aliases,
    calls,
    class_body_names,
    import_time_nodes,
    qualified,
    references,
    string_constants,
    top_level_names,
)

SOURCE = """
import os.path
import numpy as np
from vllm.model_executor.custom_op import CustomOp
from . import sibling
from .helpers import tool as helper
from vllm.config import *

BACKEND = "MY_ATTN"
TABLE: str = "pkg.kernels:load"


@CustomOp.register("fx_op")
class FxOp(CustomOp):
    limit = 3

    def forward(self, x):
        return x


def register():
    from vllm import ModelRegistry

    ModelRegistry.register_model("FxModel", "pkg.model:FxModel")
"""


def test_aliases_qualify_every_import_relative_ones_from_the_package() -> None:
    module = module_of(SOURCE, "pkg.plugins.mod")
    assert aliases(module) == {
        "os": "os",
        "np": "numpy",
        "CustomOp": "vllm.model_executor.custom_op.CustomOp",
        "sibling": "pkg.plugins.sibling",
        "helper": "pkg.plugins.helpers.tool",
        "ModelRegistry": "vllm.ModelRegistry",  # an import inside a function counts too
    }
    package = module_of("from .impl import run\n", "pkg.plugins", is_package=True)
    assert aliases(package) == {"run": "pkg.plugins.impl.run"}


def test_qualified_follows_the_head_name_only() -> None:
    table = aliases(module_of(SOURCE))
    assert qualified(ast.parse("np.linalg.norm", mode="eval").body, table) == "numpy.linalg.norm"
    assert qualified(ast.parse("local.attr", mode="eval").body, table) == "local.attr"
    assert qualified(ast.parse("f().attr", mode="eval").body, table) is None


def test_string_constants_are_the_top_level_literals() -> None:
    assert string_constants(module_of(SOURCE)) == {"BACKEND": "MY_ATTN", "TABLE": "pkg.kernels:load"}


def test_calls_find_registrations_and_whether_importing_runs_them() -> None:
    module = module_of(SOURCE)
    assert [c.api for c in calls(module)] == ["register_model"]  # the registration APIs by default
    found = calls(module, frozenset({"register", "register_model"}))
    assert [(c.api, c.receiver, c.node.lineno) for c in found] == [
        ("register", "vllm.model_executor.custom_op.CustomOp", 13),  # the decorator
        ("register_model", "vllm.ModelRegistry", 24),
    ]
    assert found[1].constant(0, "name") == "FxModel"
    assert found[1].constant(1, "model_cls") == "pkg.model:FxModel"
    at_import = calls(module, frozenset({"register", "register_model"}), at_import=True)
    assert [c.api for c in at_import] == ["register"]  # register_model runs only when register() is called


def test_top_level_names_include_branches_and_a_getattr_modules_exports() -> None:
    module = module_of(
        """
        import vllm.config
        try:
            from fast import kernel
        except ImportError as error:
            kernel = None
        if True:
            class Impl: ...
        for step in range(2):
            pass
        __all__ = ["Lazy"]
        def __getattr__(name): ...
        """
    )
    assert top_level_names(module) == {"vllm", "kernel", "error", "Impl", "step", "__all__", "__getattr__", "Lazy"}


def test_import_time_nodes_skip_function_bodies_but_not_decorators() -> None:
    module = module_of(SOURCE)
    assert module.tree is not None
    running = {id(n) for n in import_time_nodes(module.tree.body)}
    decorator = first(module, ast.Call, "CustomOp.register('fx_op')")
    inside = first(module, ast.Call, "ModelRegistry.register_model")
    assert id(decorator) in running
    assert id(inside) not in running


def test_references_are_imports_and_import_strings() -> None:
    found = references(module_of(SOURCE, "pkg.mod"))
    assert {"pkg", "pkg.sibling", "pkg.helpers.tool", "pkg.kernels", "pkg.model"} <= set(found)
    assert "MY_ATTN" in found  # any identifier-like string may name a module: the package's owns() filters
    assert "vllm.config" in found and "vllm.config.*" not in found


def test_class_body_names() -> None:
    module = module_of(SOURCE)
    node = first(module, ast.ClassDef, "@CustomOp.register")
    assert isinstance(node, ast.ClassDef)
    assert class_body_names(node) == {"limit", "forward"}


def test_of_type_merges_kinds_in_walk_order() -> None:
    module = module_of(SOURCE)
    assert module.tree is not None
    walked = [n for n in walk_nodes(module.tree) if isinstance(n, ast.Import | ast.ImportFrom)]
    assert module.of_type(ast.Import, ast.ImportFrom) == walked
    assert module.of_type(ast.ImportFrom, ast.Import) == walked  # the order of the kinds does not matter
    assert module.of_type(ast.ClassDef)[0].name == "FxOp"  # typed: no cast needed
    assert module.of_type(ast.Lambda) == []


def test_memoised_builds_once() -> None:
    module = module_of(SOURCE)
    built: list[int] = []
    assert module.memoised("answer", lambda: built.append(1) or 42) == 42
    assert module.memoised("answer", lambda: built.append(1) or 43) == 42
    assert built == [1]
