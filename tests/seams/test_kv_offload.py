"""The kv-offload template: its questions, its registration, `add` next to another component, and its worker on
the releases no CPU engine runs."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from seam_helpers import add_into, added, assert_registered

from scripts.release_matrix import ON_SOURCES
from tests.helpers import run_cli, run_pytest
from vllm_scaffold import vllm_facts
from vllm_scaffold.errors import ScaffoldError
from vllm_scaffold.vllm_facts import facts
from vllm_scaffold.vllm_facts.store import fetch_wheel

ROOT = Path(__file__).resolve().parents[2]
# The releases whose worker interface no CPU engine runs, and the golden tests run on their sources instead
# (the release matrix says so in their cells).
POINTERS_FACT, WORKER_TESTS = ON_SOURCES["kv-offload"]


def test_add_next_to_a_general_plugin_with_answers(host: Path) -> None:
    add_into(host, "kv-offload", "host_kv", "spec_name=HostTierSpec", "default_store_mib=64")
    spec = (host / "src/host/host_kv/spec.py").read_text()
    assert "class HostTierSpec(OffloadingSpec):" in spec and "DEFAULT_STORE_BYTES = 64 << 20" in spec
    registration = (host / "src/host/host_kv/registration.py").read_text()
    assert 'SPEC_NAME = "HostTierSpec"' in registration
    assert 'MODULE_PATH = "host.host_kv.spec"' in registration
    # The engine core and every worker resolve spec_name: the general plugin runs the registration.
    assert_registered(host, "host.host_kv.registration:register")
    manifest = added(host, "kv-offload")
    assert manifest[1]["object"] == "host.host_kv.spec:HostTierSpec"
    assert '"spec_name": "HostTierSpec"' in manifest[1]["enable"][0]
    assert '"spec_module_path": "host.host_kv.spec"' in manifest[1]["enable"][1]


def test_default_names_follow_the_component(host: Path) -> None:
    assert run_cli("add", "kv-offload", "host_kv", cwd=host).exit_code == 0
    package = host / "src/host/host_kv"
    assert "class HostKvOffloadingSpec(OffloadingSpec):" in (package / "spec.py").read_text()
    assert "class HostKvOffloadingManager(OffloadingManager):" in (package / "manager.py").read_text()
    assert "class HostKvOffloadingWorker(OffloadingWorker):" in (package / "worker.py").read_text()


@pytest.mark.parametrize("version", facts.fact(POINTERS_FACT).releases)
def test_the_golden_worker_takes_device_pointers_on_the_releases_own_sources(version: str, tmp_path: Path) -> None:
    """No CPU build of a release with device pointers exists, so no engine runs that path: the golden package's
    worker tests run on the release's own Python instead (the classes the worker derives from, and the pointer
    resolution the connector uses), from its wheel, on this environment's CPU torch."""
    try:
        wheel, _distribution = fetch_wheel(version)
    except ScaffoldError as error:
        if os.environ.get("VLLMSCAFFOLD_REQUIRE_SOURCES") == "1":
            pytest.fail(f"the wheel of vLLM {version} is not at hand: {error}")
        pytest.skip(f"the wheel of vLLM {version} is not at hand: {error}")
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(tmp_path, [n for n in archive.namelist() if n.startswith("vllm/") and n.endswith(".py")])
    golden = ROOT / "generated_examples" / "kv-offload"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(golden / "src")])}
    probe = "import vllm, vllm.v1.kv_offload.pointer_utils; print(vllm.__file__)"
    where = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=False)
    assert where.stdout.strip() == str(tmp_path / "vllm" / "__init__.py"), where.stdout + where.stderr
    done = run_pytest(golden, WORKER_TESTS, "-rs", env=env)
    assert done.returncode == 0, (done.stdout + done.stderr)[-6000:]
    assert "skipped" not in done.stdout and " passed" in done.stdout.strip().splitlines()[-1], done.stdout


def test_a_range_without_device_pointers_gets_the_block_spec_worker_alone(tmp_path: Path) -> None:
    """The pointer path, its protocol and its tests are generated only for a range that holds a release with
    device pointers; the default range does."""
    narrow = ">=0.31.0,<=0.33.0"
    assert not set(vllm_facts.checked_in(narrow)) & set(facts.fact(POINTERS_FACT).releases)
    args = ("new", "kv-offload", "offload", "--defaults", "--dest")
    assert run_cli(*args, "narrow", "--data", f"vllm_range={narrow}", cwd=tmp_path).exit_code == 0
    assert run_cli(*args, "default", cwd=tmp_path).exit_code == 0
    for name, pointers in (("narrow", False), ("default", True)):
        worker = (tmp_path / name / "src/offload/kv_offload/worker.py").read_text()
        tests = (tmp_path / name / "tests/test_kv_offload_worker.py").read_text()
        assert ("class DevicePointers(Protocol):" in worker) is pointers
        assert ("def _pointer_groups(" in worker) is pointers
        assert ('"device-pointers"' in tests) is pointers
        signature = "device: DeviceBlocks" if pointers else "src_spec: GPULoadStoreSpec"
        assert f"def submit_store(self, job_id: int, {signature}, dst_spec: LoadStoreSpec) -> bool:" in worker
