"""The severity contract (docs/doctor.md): an error means the plugin fails at run time on that release.

Every error code of the registry (vllm_scaffold/doctor/report/codes.toml) names in `fails` how it fails at run
time, and has a broken fixture that shows it: one of tests/doctor_fixtures.py (a folder of tests/fixtures/doctor
or a BROKEN variant of tests/doctor_variants.py, each reporting exactly its code in tests/test_doctor.py, or a
release fixture of tests/test_releases.py), a pair of installed plugins of tests/test_doctor_reading.py, or the
Ray cluster of tests/test_doctor_ray.py. A code added later without either fails here.
"""

from __future__ import annotations

import doctor_fixtures
from test_doctor_ray import SHOWN as RAY_SHOWN

from tests.clashing_site import ENVIRONMENT_CODES
from vllm_scaffold.doctor.report import codes


def _shown_by_a_fixture() -> set[str]:
    return set(doctor_fixtures.by_code()) | ENVIRONMENT_CODES | RAY_SHOWN


def test_every_error_code_says_how_it_fails_at_run_time() -> None:
    unsaid = sorted(c.code for c in codes.codes().values() if c.severity == "error" and not c.fails.strip())
    assert not unsaid, f"error codes without `fails` in codes.toml (how the finding fails at run time): {unsaid}"


def test_only_error_codes_say_how_they_fail() -> None:
    said = sorted(c.code for c in codes.codes().values() if c.severity != "error" and c.fails)
    assert not said, f"`fails` on codes that are not errors (an error fails at run time, nothing else): {said}"


def test_every_error_code_has_a_broken_fixture_that_shows_it() -> None:
    errors = {c.code for c in codes.codes().values() if c.severity == "error"}
    assert not errors - _shown_by_a_fixture(), (
        f"error codes no broken fixture shows: {sorted(errors - _shown_by_a_fixture())}"
    )
