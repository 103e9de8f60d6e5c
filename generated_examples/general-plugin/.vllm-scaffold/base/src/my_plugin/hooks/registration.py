"""What `my_plugin` runs in every vLLM process, called from `my_plugin.vllm_plugin.register`.

vLLM loads the general plugin once per process: the front end, the engine core and each worker (and the
model-inspection subprocess), before the model is built. Registration calls go here (register_backend,
register_quantization_config, CustomOp.register_oot, ModelRegistry.register_model, ...): they then hold in
every process, which a call made from your own script does not.

Set MY_PLUGIN_TRACE_FILE to a path to see which processes load the plugin: each appends one line
"pid<TAB>process name<TAB>main module" (the module run with `python -m`, "-" for a script or `-c`). That is
how this package's tests prove the plugin is reached in every process.
"""

from __future__ import annotations

import multiprocessing
import os
import sys

TRACE_ENV = "MY_PLUGIN_TRACE_FILE"


def register() -> None:
    """Runs once per vLLM process."""
    trace_file = os.environ.get(TRACE_ENV)
    if trace_file:
        record_process(trace_file)


def record_process(path: str) -> None:
    """Appends "pid<TAB>process name<TAB>main module" to `path` in one write, so lines of concurrent
    processes stay whole."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    main_module = spec.name if spec is not None else "-"
    line = f"{os.getpid()}\t{multiprocessing.current_process().name}\t{main_module}\n".encode()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)
