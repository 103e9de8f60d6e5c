"""The attention-backend template: its questions, what it registers, and `add` next to another component."""

from __future__ import annotations

from pathlib import Path

from seam_helpers import added, assert_lint_clean, assert_registered, run_package_tests

from tests.helpers import run_cli


def test_add_with_a_name_of_its_own_next_to_a_general_plugin(host: Path, tmp_path: Path) -> None:
    answers = ["--data", "backend_name=FAST_ATTN", "--data", "cudagraph_support=UNIFORM_BATCH"]
    answers += ["--data", "sliding_window=false"]
    done = run_cli("add", "attention-backend", "fast_attn", *answers, cwd=host)
    assert done.exit_code == 0, done.stdout + done.stderr

    component = host / "src/host/fast_attn"
    registration = (component / "registration.py").read_text()
    backend = (component / "backend.py").read_text()
    assert 'BACKEND_NAME = "FAST_ATTN"' in registration
    assert 'BACKEND_PATH = "host.fast_attn.backend.FastAttnBackend"' in registration
    assert "register_backend(BACKEND_NAME, BACKEND_PATH)" in registration
    assert "AttentionBackendEnum.CUSTOM" not in registration
    assert "_cudagraph_support: ClassVar[AttentionCGSupport] = AttentionCGSupport.UNIFORM_BATCH" in backend
    assert "SUPPORTS_SLIDING_WINDOW = False" in backend and "SUPPORTS_LOGITS_SOFT_CAP = True" in backend
    assert 'KERNELS_ENV = "HOST_FAST_ATTN_KERNELS"' in backend
    assert "def get_kv_cache_shape" not in backend

    assert_registered(host, "host.fast_attn.registration:register")
    manifest = added(host, "attention-backend")
    assert manifest[1]["object"] == "host.fast_attn.backend:FastAttnBackend"
    assert manifest[1]["enable"][0] == "--attention-backend FAST_ATTN (or LLM(attention_backend='FAST_ATTN'))"
    assert "HOST_FAST_ATTN_KERNELS=torch|triton" in manifest[1]["enable"][2]
    assert "--attention-backend FAST_ATTN" in (host / "README.md").read_text()
    doc = (host / "docs/fast_attn.md").read_text()
    assert "A name of its own" in doc and "One CUSTOM slot" not in doc

    tests = [str(path.relative_to(host)) for path in host.glob("tests/test_fast_attn_*.py")]
    assert_lint_clean(host, "src/host/fast_attn", "benchmarks/bench_fast_attn.py", *tests)
    # Everything that starts no engine; the generated engine tests run in the golden-copy suite.
    run_package_tests(host, tmp_path / "cache", "-m", "not engine")


def test_defaults_take_the_custom_slot_and_say_so(tmp_path: Path) -> None:
    done = run_cli("new", "attention-backend", "my_attn", "--defaults", "--dest", "pkg", cwd=tmp_path)
    assert done.exit_code == 0, done.stdout + done.stderr
    package = tmp_path / "pkg"
    registration = (package / "src/my_attn/attention/registration.py").read_text()
    assert "slot = AttentionBackendEnum.CUSTOM" in registration
    assert "register_backend(slot, BACKEND_PATH)" in registration
    assert "CPU_ATTN" not in registration, "production code must not override the CPU backend"
    backend = (package / "src/my_attn/attention/backend.py").read_text()
    assert "AttentionCGSupport.NEVER" in backend and "forward_includes_kv_cache_update: bool = False" in backend
    doc = (package / "docs/attention.md").read_text()
    assert "One CUSTOM slot" in doc and "testing device" in doc
