"""Checks on the names a user gives, and the names derived from them."""

from __future__ import annotations

import keyword
import re
import sys

from vllm_scaffold.errors import ScaffoldError

_IDENTIFIER = re.compile(r"[a-z][a-z0-9_]*\Z")

# The longest package or component name: generated prose, strings and dotted paths repeat it (a registration
# target names it twice), and the templates keep every such line inside the generated line length up to here.
MAX_NAME_LENGTH = 40
# The longest module path of a component, `package.module`: `add` makes NAME the module, and import lines and
# dotted class paths hold both names at once.
MAX_MODULE_PATH_LENGTH = 64

# Import names a plugin must not shadow: its own runtime and test stack.
_RESERVED = frozenset({"vllm", "torch", "triton", "transformers", "pytest", "tests", "test", "vllm_scaffold"})


def check_identifier(name: str, what: str) -> str:
    """`name` if it can be a lower-case Python module name; a ScaffoldError naming the fix otherwise."""
    if keyword.iskeyword(name) or keyword.issoftkeyword(name):
        suggestion = f"{name}_plugin"
        raise ScaffoldError(
            f"{what} '{name}' is a Python keyword", f"choose another name, e.g. '{suggestion}'", suggestion
        )
    if not _IDENTIFIER.match(name):
        suggestion = re.sub(r"[^a-z0-9_]", "_", name.lower()).lstrip("_0123456789") or "my_plugin"
        raise ScaffoldError(
            f"{what} '{name}' is not a valid Python identifier",
            f"use lower-case letters, digits and underscores, starting with a letter, e.g. '{suggestion}'",
            suggestion,
        )
    if len(name) > MAX_NAME_LENGTH:
        shorter = name[:MAX_NAME_LENGTH].rstrip("_")
        raise ScaffoldError(
            f"{what} '{name}' is {len(name)} characters long, more than the {MAX_NAME_LENGTH} allowed",
            f"choose a shorter name, e.g. '{shorter}'",
            shorter,
        )
    if name in _RESERVED or name in sys.stdlib_module_names:
        suggestion = f"{name}_plugin"
        raise ScaffoldError(
            f"{what} '{name}' would shadow the module '{name}'", f"choose another name, e.g. '{suggestion}'", suggestion
        )
    return name


def check_module_path(package: str, module: str, what: str) -> None:
    """A ScaffoldError when `package.module` is longer than generated import lines can hold."""
    path = f"{package}.{module}"
    if len(path) > MAX_MODULE_PATH_LENGTH:
        room = MAX_MODULE_PATH_LENGTH - len(package) - 1
        raise ScaffoldError(
            f"the module path '{path}' is {len(path)} characters long, more than the {MAX_MODULE_PATH_LENGTH} allowed",
            f"choose a {what} of at most {room} characters in package '{package}'",
        )


def class_prefix(name: str) -> str:
    """`my_attn` -> `MyAttn`: the prefix of the classes a component defines."""
    return "".join(part[:1].upper() + part[1:] for part in name.split("_") if part)


def env_prefix(name: str) -> str:
    """`my_attn` -> `MY_ATTN`: the prefix of the environment variables a package reads. A name in vLLM's own
    `VLLM_` namespace loses that underscore (`vllm_attn` -> `VLLMATTN`): vLLM 0.34 warns about every `VLLM_*`
    variable it does not know, and refuses it under `--fail-on-environ-validation`."""
    prefix = name.upper()
    return "VLLM" + prefix.removeprefix("VLLM_") if prefix.startswith("VLLM_") else prefix


def dist_name(package: str) -> str:
    """The distribution name for an import package: `my_attn` -> `my-attn`. A distribution name must end with a
    letter or digit (PEP 508), so a trailing underscore is dropped: `my_attn_` -> `my-attn`."""
    return package.rstrip("_").replace("_", "-")
