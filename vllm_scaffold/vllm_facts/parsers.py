"""vLLM's tool-call and reasoning parser registries: the names each release registers itself, and the routes.

Both registries are class-level dicts on a manager class, filled lazily: `vllm/tool_parsers/__init__.py` and
`vllm/reasoning/__init__.py` map each in-tree name to (module, class) in a module-level dict
(`TOOL_PARSER_TABLE`, `REASONING_PARSER_TABLE`) and call `register_lazy_module` for each entry at import. The
names are read from those dicts in each release's source (`read_parsers`, when its index is built) and kept in
its index (`ReleaseIndex.tool_parsers`, `.reasoning_parsers`); tests/test_in_tree.py compares the installed
vLLM's with what its managers hold after import. A plugin name equal to one of them shadows vLLM's parser of
that name (an eager registration is looked up first; a lazy one replaces the entry), so the templates'
questions and `doctor` refuse them.

Facts true on every shipped release (read from `tool_parsers/abstract_tool_parser.py`,
`reasoning/abs_reasoning_parsers.py`, the server's launcher and `v1/structured_output/__init__.py`; facts.toml
names the releases of each):
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

# The tables by kind, as the index keeps them: "parsers" -> kind -> sorted names (a kind is left out where the
# release's sources have no table of it).
TABLES = {"tool": TOOL_PARSER_TABLE, "reasoning": REASONING_PARSER_TABLE}


def read_parsers(trees: dict[str, ast.Module]) -> dict[str, dict[str, list[str]]]:
    """The index's entry for the in-tree parser names of a release's parsed modules (name -> syntax tree)."""
    found = {}
    for kind, table in TABLES.items():
        tree = trees.get(_module_of(table))
        if tree is not None and (names := table_names(tree, table)) is not None:
            found[kind] = sorted(names)
    return {"parsers": found}


def read_in_tree(vllm_root: Path, table: tuple[str, str]) -> frozenset[str]:
    """The names of `table` (TOOL_PARSER_TABLE or REASONING_PARSER_TABLE) in the vLLM source tree `vllm_root`."""
    path, variable = table
    names = table_names(ast.parse((vllm_root / path).read_text(encoding="utf-8")), table)
    if names is None:
        raise LookupError(f"{variable} not found in {vllm_root / path}")
    return names


def table_names(tree: ast.Module, table: tuple[str, str]) -> frozenset[str] | None:
    """The keys of `table`'s dict in its module's syntax tree, None when the module does not define it."""
    variable = table[1]
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if isinstance(target, ast.Name) and target.id == variable and isinstance(node.value, ast.Dict):
            return frozenset(key.value for key in node.value.keys if isinstance(key, ast.Constant))
    return None


def _module_of(table: tuple[str, str]) -> str:
    """The module name of the file `table` names ("tool_parsers/__init__.py" -> "vllm.tool_parsers")."""
    parts = ["vllm", *table[0].removesuffix(".py").split("/")]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
