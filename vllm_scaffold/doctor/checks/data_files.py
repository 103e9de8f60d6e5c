"""Dotted vLLM names kept in the data files the package ships (JSON, YAML, TOML, INI, text).

A plugin keeps class paths in configuration it ships beside its code (`"vllm.model_executor.layers.x:Y"` in a
model table, a YAML list of patch targets), and imports them at run time. Such a string is a value, not code,
so the checks of the modules never see it. Each string value that is a whole dotted `vllm.` name is resolved
in the release: a module, or a name at the top of a module, that the release does not have is reported, when
the string lies in one of vLLM's top-level packages (`vllm.scheduler.policy.v1`, under no package vLLM has, is
a name of the plugin's own, such as a contract or a logger).
Members of classes are not judged (a base outside vLLM may provide them). It is a warning: doctor cannot tell
whether the plugin imports the string, or only shows it.
"""

from __future__ import annotations

import configparser
import json
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path

import yaml

from vllm_scaffold.doctor.checks.target import release_check
from vllm_scaffold.doctor.reading.package import PluginPackage
from vllm_scaffold.doctor.report.findings import Finding
from vllm_scaffold.project.model import SKIP_DIRS
from vllm_scaffold.vllm_facts import ReleaseIndex

# `vllm.module.path`, `vllm.module.path.Name` or `vllm.module.path:Name.attr`, the whole string
DOTTED = re.compile(r"vllm(?:\.[A-Za-z_]\w*)+(?::[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)?")
DATA_SUFFIXES = frozenset({".json", ".yaml", ".yml", ".toml", ".ini", ".cfg", ".txt"})
_LARGEST = 1_000_000  # bytes: a larger file is a data set or a vocabulary, not configuration


@release_check("vllm-data-path-missing")
def data_paths(package: PluginPackage, index: ReleaseIndex) -> list[Finding]:
    """Each dotted vLLM name in a shipped data file that names a module or top-level name `index` lacks."""
    groups = set(index.entry_point_groups)
    release = f"vLLM {index.version}"
    findings = []
    for path, relative in shipped_data_files(package):
        for line, value in _strings(path):
            if value in groups or not value.startswith("vllm.") or not DOTTED.fullmatch(value):
                continue
            if package.module_for(value.partition(":")[0]) is not None:
                continue  # the plugin's own module installed into vLLM's namespace
            missing = _first_missing(index, value.replace(":", "."))
            if missing is None or missing.count(".") < 2:
                continue  # all of it exists, or it is no path in vLLM's tree (`vllm.scheduler.policy.v1`, a name)
            where = f"{relative}:{line}" if line else relative
            findings.append(
                Finding(
                    "vllm-data-path-missing",
                    where,
                    f"'{value}' in the shipped data file {relative} names {missing}, which {release} does not have: "
                    "importing it where the plugin reads this file raises",
                    "point it at where this release defines the name (or drop it if nothing imports it)",
                )
            )
    return findings


def shipped_data_files(package: PluginPackage) -> Iterator[tuple[Path, str]]:
    """The data files inside the import packages (what a wheel ships as package data), tests and tooling aside,
    with their paths relative to the project root."""
    root = package.project.root
    for location in package.project.packages.values():
        if not location.is_dir():
            continue
        for path in sorted(location.rglob("*")):
            if path.suffix not in DATA_SUFFIXES or not path.is_file() or path.stat().st_size > _LARGEST:
                continue
            folders = path.relative_to(location).parts[:-1]
            if any(part in SKIP_DIRS or part.startswith(".") for part in folders):
                continue
            yield path, path.relative_to(root).as_posix() if path.is_relative_to(root) else path.as_posix()


def _first_missing(index: ReleaseIndex, qualname: str) -> str | None:
    """The module, or top-level name of a module, of `qualname` that the release lacks; None when they exist
    or the index cannot tell (a member of a class is never judged)."""
    parts = qualname.split(".")
    for cut in range(2, len(parts) + 1):
        prefix = ".".join(parts[:cut])
        symbol = index.resolve(prefix)
        if symbol.kind == "missing":
            return prefix
        if symbol.kind != "module":
            return None
    return None


def _strings(path: Path) -> list[tuple[int | None, str]]:
    """The file's string values, each with its line when the format gives it (text, YAML, INI), else None."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if "vllm." not in text:
        return []
    try:
        if path.suffix == ".json":
            return [(_line_of(text, value), value) for value in _walk(json.loads(text))]
        if path.suffix == ".toml":
            return [(_line_of(text, value), value) for value in _walk(tomllib.loads(text))]
        if path.suffix in {".yaml", ".yml"}:
            return [(_line_of(text, value), value) for value in _walk(list(yaml.safe_load_all(text)))]
        if path.suffix in {".ini", ".cfg"}:
            parser = configparser.ConfigParser(interpolation=None)
            parser.read_string(text)
            values = [v for section in parser.sections() for v in parser[section].values()]
            return [(_line_of(text, item), item) for value in values for item in value.split()]
    except (ValueError, yaml.YAMLError, configparser.Error, tomllib.TOMLDecodeError):
        return []  # a file that does not parse as its suffix says is not configuration doctor can read
    return [(number, line.strip()) for number, line in enumerate(text.splitlines(), start=1) if line.strip()]


def _walk(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value.strip()
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _walk(key)
            yield from _walk(item)
    elif isinstance(value, list):
        for item in value:
            yield from _walk(item)


def _line_of(text: str, value: str) -> int | None:
    offset = text.find(value)
    return text.count("\n", 0, offset) + 1 if offset >= 0 else None
