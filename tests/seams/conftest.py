"""Fixtures shared by the per-seam tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from seam_helpers import general_plugin_host


@pytest.fixture
def host(tmp_path: Path) -> Path:
    """A package made by `new general-plugin host`, to `add` components into."""
    return general_plugin_host(tmp_path)
