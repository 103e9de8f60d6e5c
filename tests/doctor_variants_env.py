"""Doctor fixture variants for the plugin's environment as opposed to doctor's: another framework's entry-point
groups, syntax of the Python the plugin requires, build backends, and the checks of the classes doctor missed.

Merged into `doctor_variants`' BROKEN, CLEAN and CONTRASTS, whose conventions they follow.
"""

from __future__ import annotations

from doctor_variants import Variant

BROKEN: dict[str, Variant] = {}

CLEAN: dict[str, Variant] = {
    # A framework built on vLLM reads its own groups, named after vLLM's but in its own namespace.
    "framework-group-named-after-vllm": Variant(
        {"stage.py": '"""A pipeline stage the framework loads from its own group."""\n\nSTAGE = {"name": "fx"}\n'},
        pyproject="""
        [project.entry-points."vllm_omni.general_plugins"]
        fx = "fx_framework_group_named_after_vllm.stage"
        """,
    ),
}

# What turns each CLEAN variant into the finding doctor must then report: (file, text, replacement, code).
CONTRASTS: dict[str, tuple[str, str, str, str]] = {
    "framework-group-named-after-vllm": (
        "pyproject.toml",
        '"vllm_omni.general_plugins"',
        '"vllm_general_plugins"',
        "ep-unknown-group",
    ),
}
