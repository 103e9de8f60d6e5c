"""vLLM's tool-call and reasoning parser registries: the names each release registers itself, and the routes.

Both registries are class-level dicts on a manager class, filled lazily: `vllm/tool_parsers/__init__.py` and
`vllm/reasoning/__init__.py` map each in-tree name to (module, class) in a module-level dict
(`TOOL_PARSER_TABLE`, `REASONING_PARSER_TABLE`) and call `register_lazy_module` for each entry at import. The
names are read from those dicts in each release's source (`read_in_tree`); the lists below are the three
releases vllm-scaffold checks, and tests/test_in_tree.py compares them with the installed vLLM. A plugin name
equal to one of them shadows vLLM's parser of that name (an eager registration is looked up first; a lazy
one replaces the entry), so the templates' questions and `doctor` refuse them.

Facts true on vLLM 0.31, 0.32 and 0.33 (read from `tool_parsers/abstract_tool_parser.py`,
`reasoning/abs_reasoning_parsers.py`, the server's launcher and `v1/structured_output/__init__.py`):
- `--tool-parser-plugin PATH` and `--reasoning-parser-plugin PATH` are imported only when the value is
  longer than `PLUGIN_PATH_MIN_LENGTH` characters (`len(value) > 3`); a shorter value is silently ignored;
- the API server imports both plugin paths before it validates `--tool-call-parser` and `--reasoning-parser`
  against the registered names; the engine core's structured-output manager imports the reasoning-parser
  plugin path again and looks the reasoning parser up by name when it is built (after the general plugins
  ran in that process);
- the API server checks the names before it loads its endpoint, IO-processor and stat-logger plugins, so a
  parser registered only from one of those is refused there (`KeyError`);
- building the engine config in the front end looks `--reasoning-parser` up too, and constructs the parser.
Each is written with its evidence in facts.toml (`parser-plugin-path-length`, `parser-registration-wins`,
`reasoning-parser-engine-core-lookup`, `api-server-checks-parsers-first`, `reasoning-parser-config-lookup`,
`tool-parser-methods-not-abstract`), which tests/test_facts.py checks.
"""

from __future__ import annotations

import ast
from pathlib import Path

TOOL_PARSER_MANAGER = "vllm.tool_parsers.abstract_tool_parser.ToolParserManager"
REASONING_PARSER_MANAGER = "vllm.reasoning.abs_reasoning_parsers.ReasoningParserManager"
TOOL_PARSER_BASE = "vllm.tool_parsers.abstract_tool_parser.ToolParser"
REASONING_PARSER_BASE = "vllm.reasoning.abs_reasoning_parsers.ReasoningParser"
# The manager classmethods that add a name.
REGISTRATION_METHODS = ("register_module", "register_lazy_module")
# A plugin path is imported only when len(path) > 3.
PLUGIN_PATH_MIN_LENGTH = 4
PLUGIN_PATH_FLAGS = ("--tool-parser-plugin", "--reasoning-parser-plugin")

# (file under vllm/, module-level dict of in-tree name -> (module file, class)).
TOOL_PARSER_TABLE = ("tool_parsers/__init__.py", "_TOOL_PARSERS_TO_REGISTER")
REASONING_PARSER_TABLE = ("reasoning/__init__.py", "_REASONING_PARSERS_TO_REGISTER")

# release -> the names vLLM registers itself.
IN_TREE_TOOL_PARSERS: dict[str, frozenset[str]] = {
    "0.31.0": frozenset(
        [
            "apertus",
            "cohere_command3",
            "cohere_command4",
            "deepseek_v3",
            "deepseek_v31",
            "deepseek_v32",
            "deepseek_v4",
            "deepseek_v41",
            "dots",
            "ernie45",
            "functiongemma",
            "gemma4",
            "gigachat3",
            "glm45",
            "glm47",
            "granite",
            "granite-20b-fc",
            "granite4",
            "hermes",
            "hunyuan_a13b",
            "hy_v3",
            "hy_v4",
            "inkling",
            "internlm",
            "jamba",
            "k2_horizon",
            "kimi_k2",
            "kimi_k3",
            "lfm2",
            "ling3",
            "llama3_json",
            "llama4_json",
            "llama4_pythonic",
            "longcat",
            "mimo",
            "minicpm5",
            "minimax_m2",
            "minimax_m3",
            "mistral",
            "muse_glimmer",
            "olmo3",
            "openai",
            "phi4_mini_json",
            "poolside_v1",
            "pythonic",
            "qwen3_coder",
            "qwen3_xml",
            "seed_oss",
            "step3",
            "step3p5",
            "xlam",
        ]
    ),
    "0.32.0": frozenset(
        [
            "apertus",
            "cohere_command3",
            "cohere_command4",
            "deepseek_v3",
            "deepseek_v31",
            "deepseek_v32",
            "deepseek_v4",
            "deepseek_v41",
            "dots",
            "ernie45",
            "functiongemma",
            "gemma4",
            "gigachat3",
            "glm45",
            "glm47",
            "granite",
            "granite-20b-fc",
            "granite4",
            "hermes",
            "hf",
            "hunyuan_a13b",
            "hy_v3",
            "hy_v4",
            "inkling",
            "internlm",
            "jamba",
            "k2_horizon",
            "kimi_k2",
            "kimi_k3",
            "lfm2",
            "ling3",
            "llama3_json",
            "llama4_json",
            "llama4_pythonic",
            "longcat",
            "mimo",
            "minicpm5",
            "minimax_m2",
            "minimax_m3",
            "mistral",
            "muse_glimmer",
            "olmo3",
            "openai",
            "phi4_mini_json",
            "plamo3",
            "poolside_v1",
            "pythonic",
            "qwen3_coder",
            "qwen3_json",
            "qwen3_xml",
            "seed_oss",
            "step3",
            "step3p5",
            "xlam",
        ]
    ),
    "0.33.0": frozenset(
        [
            "apertus",
            "beam",
            "cohere_command3",
            "cohere_command4",
            "deepseek_v3",
            "deepseek_v31",
            "deepseek_v32",
            "deepseek_v4",
            "deepseek_v41",
            "dots",
            "ernie45",
            "functiongemma",
            "gemma4",
            "gigachat3",
            "glm45",
            "glm47",
            "granite",
            "granite-20b-fc",
            "granite4",
            "hermes",
            "hf",
            "hunyuan_a13b",
            "hy_v3",
            "hy_v4",
            "inkling",
            "internlm",
            "jamba",
            "k2_horizon",
            "kimi_k2",
            "kimi_k3",
            "lfm2",
            "ling3",
            "llama3_json",
            "llama4_json",
            "llama4_pythonic",
            "longcat",
            "mimo",
            "minicpm5",
            "minimax_m2",
            "minimax_m3",
            "mistral",
            "muse",
            "muse_glimmer",
            "musespark1x",
            "olmo3",
            "openai",
            "phi4_mini_json",
            "plamo3",
            "poolside_v1",
            "pythonic",
            "qwen3_coder",
            "qwen3_json",
            "qwen3_xml",
            "seed_oss",
            "step3",
            "step3p5",
            "step5",
            "xlam",
        ]
    ),
}
IN_TREE_REASONING_PARSERS: dict[str, frozenset[str]] = {
    "0.31.0": frozenset(
        [
            "cohere_command3",
            "cohere_command4",
            "deepseek_r1",
            "deepseek_v3",
            "deepseek_v4",
            "deepseek_v41",
            "ernie45",
            "gemma4",
            "glm45",
            "glm47",
            "granite",
            "granite_thinking_parser",
            "holo2",
            "hunyuan_a13b",
            "hy_v3",
            "hy_v4",
            "inkling",
            "k2_horizon",
            "kimi_k2",
            "kimi_k3",
            "ling3",
            "mimo",
            "minimax_m2",
            "minimax_m2_append_think",
            "minimax_m3",
            "mistral",
            "muse_glimmer",
            "nemotron_v3",
            "olmo3",
            "openai_gptoss",
            "poolside_v1",
            "qwen3",
            "seed_oss",
            "step3",
            "step3p5",
        ]
    ),
    "0.32.0": frozenset(
        [
            "cohere_command3",
            "cohere_command4",
            "deepseek_r1",
            "deepseek_v3",
            "deepseek_v4",
            "deepseek_v41",
            "ernie45",
            "gemma4",
            "glm45",
            "glm47",
            "granite",
            "granite_thinking_parser",
            "hf",
            "holo2",
            "hunyuan_a13b",
            "hy_v3",
            "hy_v4",
            "inkling",
            "k2_horizon",
            "kimi_k2",
            "kimi_k3",
            "ling3",
            "mimo",
            "minicpmv",
            "minimax_m2",
            "minimax_m2_append_think",
            "minimax_m3",
            "mistral",
            "muse_glimmer",
            "nemotron_v3",
            "olmo3",
            "openai_gptoss",
            "plamo3",
            "poolside_v1",
            "qwen3",
            "seed_oss",
            "step3",
            "step3p5",
        ]
    ),
    "0.33.0": frozenset(
        [
            "beam",
            "cohere_command3",
            "cohere_command4",
            "deepseek_r1",
            "deepseek_v3",
            "deepseek_v4",
            "deepseek_v41",
            "ernie45",
            "gemma4",
            "glm45",
            "glm47",
            "granite",
            "granite_thinking_parser",
            "hf",
            "holo2",
            "hunyuan_a13b",
            "hy_v3",
            "hy_v4",
            "inkling",
            "k2_horizon",
            "kimi_k2",
            "kimi_k3",
            "ling3",
            "mimo",
            "minicpmv",
            "minimax_m2",
            "minimax_m2_append_think",
            "minimax_m3",
            "mistral",
            "muse",
            "muse_glimmer",
            "musespark1x",
            "nemotron_v3",
            "olmo3",
            "openai_gptoss",
            "plamo3",
            "poolside_v1",
            "qwen3",
            "seed_oss",
            "step3",
            "step3p5",
            "step5",
        ]
    ),
}


def in_tree_tool_parsers() -> frozenset[str]:
    """Every tool-parser name a checked release registers itself."""
    return frozenset().union(*IN_TREE_TOOL_PARSERS.values())


def in_tree_reasoning_parsers() -> frozenset[str]:
    """Every reasoning-parser name a checked release registers itself."""
    return frozenset().union(*IN_TREE_REASONING_PARSERS.values())


def read_in_tree(vllm_root: Path, table: tuple[str, str]) -> frozenset[str]:
    """The names of `table` (TOOL_PARSER_TABLE or REASONING_PARSER_TABLE) in the vLLM source tree `vllm_root`."""
    path, variable = table
    tree = ast.parse((vllm_root / path).read_text(encoding="utf-8"))
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if isinstance(target, ast.Name) and target.id == variable and isinstance(node.value, ast.Dict):
            return frozenset(key.value for key in node.value.keys if isinstance(key, ast.Constant))
    raise LookupError(f"{variable} not found in {vllm_root / path}")
