"""What a check runs on: one plugin package against one vLLM, the installed one or a release `--vllm` names.

A check is one function over a `Target`, declared with `@check(codes...)`. Every check runs against the
installed vLLM; one declared `every_release=True` also runs against each release `--vllm` names, reading only
what a release index gives (`target.index`, `target.version`, `target.releases`). A check of the installed
environment alone (entry points of other distributions, VLLM_PLUGINS, the installed sources) reads it as
`target.environment`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

from vllm_scaffold.doctor.reading.context import Context
from vllm_scaffold.doctor.reading.package import PluginPackage
from vllm_scaffold.doctor.report.codes import severity_of
from vllm_scaffold.doctor.report.findings import Finding
from vllm_scaffold.vllm_facts import ReleaseIndex


@dataclass(frozen=True)
class Target:
    package: PluginPackage
    # The release's API index: a `--vllm` release's, or the installed vLLM's (None when vLLM is not installed).
    index: ReleaseIndex | None
    # The environment the plugin is installed into (its vLLM, VLLM_PLUGINS, other plugins): None for a release.
    installed: Context | None
    # Every other release doctor knows, to tell a member vLLM removed from one the plugin defines itself.
    releases: Callable[[], list[ReleaseIndex]]

    @property
    def version(self) -> str | None:
        """The vLLM version checked against; None when vLLM is not installed (checks then take the reference)."""
        if self.installed is not None:
            return self.installed.vllm.version
        return self.index.version if self.index is not None else None

    @property
    def environment(self) -> Context:
        """The installed environment; only checks not declared `every_release` read it."""
        if self.installed is None:
            raise TypeError("a check that runs on every release read the installed environment")
        return self.installed


@dataclass(frozen=True)
class Check:
    """One registered check: the function, the codes it reports (each in codes.toml), and whether it also runs
    against each release `--vllm` names."""

    run: Callable[[Target], list[Finding]]
    codes: frozenset[str]
    every_release: bool

    @property
    def module(self) -> ModuleType | None:
        return sys.modules.get(self.run.__module__)

    @property
    def name(self) -> str:
        return f"{self.run.__module__.rpartition('.')[2]}.{self.run.__name__}"

    def __call__(self, target: Target) -> list[Finding]:
        findings = self.run(target)
        undeclared = {f.code for f in findings} - self.codes
        if undeclared:
            raise ValueError(f"doctor check {self.name} reported {sorted(undeclared)}: declare them in its @check")
        return findings


def check(*codes: str, every_release: bool = False) -> Callable[[Callable[[Target], list[Finding]]], Check]:
    """Declares a check and the codes it reports; every check a module of `doctor/checks/` declares runs."""

    for code in codes:
        severity_of(code)  # each is registered, or the check is refused at import

    def declare(function: Callable[[Target], list[Finding]]) -> Check:
        return Check(function, frozenset(codes), every_release)

    return declare


IndexCheck = Callable[[PluginPackage, ReleaseIndex], list[Finding]]


def release_check(*codes: str) -> Callable[[IndexCheck], IndexCheck]:
    """Declares `function(package, index)`, which reads only a release index, as a check that runs against
    the installed vLLM's index and each `--vllm` release's (nothing where vLLM is not installed). The function
    stays callable as written; the check is registered beside it as `<function>_check`."""

    def declare(function: IndexCheck) -> IndexCheck:
        def run(target: Target) -> list[Finding]:
            return [] if target.index is None else function(target.package, target.index)

        run.__name__, run.__module__, run.__doc__ = function.__name__, function.__module__, function.__doc__
        module = sys.modules[function.__module__]
        setattr(module, f"{function.__name__}_check", check(*codes, every_release=True)(run))
        return function

    return declare
