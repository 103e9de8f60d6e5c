"""vllm-scaffold: generate out-of-tree vLLM plugin packages for every extension seam."""

from collections.abc import Iterable

__version__ = "0.1.0"

# What a plugin's tests need besides vLLM: the pytest plugin built from harness/ in this repository.
HARNESS_REQUIREMENT = "vllm-scaffold-testing~=0.1.0"


def harness_requirement(extras: Iterable[str] = ()) -> str:
    """HARNESS_REQUIREMENT with the harness's `extras` (a seam's `harness_extras`, such as ray)."""
    wanted = sorted(set(extras))
    if not wanted:
        return HARNESS_REQUIREMENT
    name, _, specifier = HARNESS_REQUIREMENT.partition("~=")
    return f"{name}[{','.join(wanted)}]~={specifier}"
