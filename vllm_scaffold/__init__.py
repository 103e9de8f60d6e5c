"""vllm-scaffold: generate out-of-tree vLLM plugin packages for every extension seam."""

from collections.abc import Iterable

__version__ = "0.2.0"

# What a plugin's tests need besides vLLM: the pytest plugin built from harness/ in this repository.
HARNESS_DISTRIBUTION = "vllm-scaffold-testing"
HARNESS_SPECIFIER = "~=0.1.0"
HARNESS_REQUIREMENT = f"{HARNESS_DISTRIBUTION}{HARNESS_SPECIFIER}"


def harness_requirement(extras: Iterable[str] = ()) -> str:
    """HARNESS_REQUIREMENT with the harness's `extras` (a seam's `harness_extras`, such as ray)."""
    wanted = ",".join(sorted(set(extras)))
    return f"{HARNESS_DISTRIBUTION}[{wanted}]{HARNESS_SPECIFIER}" if wanted else HARNESS_REQUIREMENT
