"""Where pip is set up to find packages on this machine, as the environment variables uv reads instead.

scripts/test.sh installs the test environments with uv, which is several times faster than pip at
installing vLLM's hundred-odd distributions, but reads none of pip's configuration. What pip would use
(its configuration files and PIP_* variables: index, extra indexes, find-links, constraints) is printed as
`export` lines for the shell to evaluate, so uv finds the same packages pip would (on a CPU-only machine the
`+cpu` build of torch usually comes from such a source).

Usage: eval "$(python3 scripts/pip_sources.py)"
"""

from __future__ import annotations

import shlex
import subprocess
import sys

# pip's option -> (uv's variable, how uv separates the entries of a list).
_UV_VARIABLES = {
    "index-url": ("UV_INDEX_URL", " "),
    "extra-index-url": ("UV_EXTRA_INDEX_URL", " "),
    "find-links": ("UV_FIND_LINKS", ","),
    "constraint": ("UV_CONSTRAINT", " "),
}
# pip reads its sources in this order, a later one overriding an earlier one: the configuration files from
# the widest to the narrowest, then the PIP_* variables (which `pip config list` names ":env:").
_PRECEDENCE = ("global", "user", "site", ":env:")


def pip_options() -> dict[str, list[str]]:
    """pip's effective values of the options uv has an equivalent for."""
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, check=True
    ).stdout
    return effective_options(listed)


def effective_options(listed: str) -> dict[str, list[str]]:
    """The options of `pip config list` output that uv has an equivalent for, each from its winning scope."""
    by_scope: dict[str, dict[str, str]] = {}
    for line in listed.splitlines():
        # global.find-links='/opt/wheels'   :env:.extra-index-url='file:///a file:///b'
        key, _, quoted = line.partition("=")
        scope, _, option = key.rpartition(".")
        if option in _UV_VARIABLES and quoted:
            by_scope.setdefault(scope, {})[option] = " ".join(shlex.split(quoted))
    effective: dict[str, list[str]] = {}
    for scope in sorted(by_scope, key=lambda s: _PRECEDENCE.index(s) if s in _PRECEDENCE else -1):
        effective.update({option: value.split() for option, value in by_scope[scope].items()})
    return effective


def main() -> None:
    # pip takes the best version from all its sources together; uv's default stops at the first source that
    # has the package at all.
    print("export UV_INDEX_STRATEGY=unsafe-best-match")
    for option, values in sorted(pip_options().items()):
        variable, separator = _UV_VARIABLES[option]
        print(f"export {variable}={shlex.quote(separator.join(values))}")


if __name__ == "__main__":
    main()
