"""Probe mode "imports": what importing the package's entry-point modules costs (torch, CUDA initialisation)."""

from __future__ import annotations

import functools
import importlib
import importlib.abc
import importlib.metadata
import subprocess
import sys

from vllm_scaffold.doctor.live.script.common import EVERY_PROCESS, describe, load_failure, loaded_in, report, where
from vllm_scaffold.vllm_facts import facts

# --- mode "imports": the cost of importing entry-point modules -------------------------------------------------

cuda_inits: list[str] = []
importing: list[str] = []


class _TorchWatch(importlib.abc.MetaPathFinder):
    """Wraps torch.cuda._lazy_init once torch is imported, so any CUDA initialisation is recorded."""

    def find_spec(self, fullname, path, target=None):
        if fullname != "torch":
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                exec_module = spec.loader.exec_module

                def watched(module, exec_module=exec_module):
                    exec_module(module)
                    lazy_init = module.cuda._lazy_init

                    def recording_lazy_init():
                        cuda_inits.append(importing[-1] if importing else "?")
                        return lazy_init()

                    module.cuda._lazy_init = recording_lazy_init

                spec.loader.exec_module = watched
                return spec
        return None


@functools.cache
def vllm_imports_torch() -> bool:
    """Whether `import vllm` alone imports torch (the fact `import-vllm-imports-torch`): then every vLLM
    process has torch before any plugin loads, and a plugin importing it costs nothing more. Asked in a fresh
    interpreter, since this one has already imported the plugin."""
    code = "import sys, vllm; print('torch' in sys.modules)"
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    return completed.stdout.strip().endswith("True")


def probe_imports(own: list[dict[str, str]]) -> None:
    sys.meta_path.insert(0, _TorchWatch())
    seen: set[str] = set()
    for ep in sorted(own, key=lambda e: e["group"] not in EVERY_PROCESS):
        module = ep["value"].partition(":")[0].strip()
        if module in seen:
            continue
        seen.add(module)
        had_torch = "torch" in sys.modules
        failure = import_watched(module)
        if module in cuda_inits:
            report_cuda_init(
                where(ep),
                module,
                failure,
                f"{loaded_in(ep['group'])}. {load_failure(ep['group'])}",
                "touch torch.cuda only inside functions vLLM calls later (the kernel, the layer), never at import",
            )
        elif failure is not None:
            report(
                "ep-import-fails",
                where(ep),
                f"importing {module} raises {describe(failure)}. {load_failure(ep['group'])}",
                "fix the import (run `python -c 'import " + module + "'` with only this package installed)",
            )
        elif ep["group"] in EVERY_PROCESS and not had_torch and "torch" in sys.modules and not vllm_imports_torch():
            report(
                "import-cost-torch",
                where(ep),
                f"importing {module} imports torch (directly or through vllm), which costs seconds wherever "
                f"it is imported. {loaded_in(ep['group'])}",
                "import torch and vLLM inside the functions that need them; keep the entry-point module light",
            )


def report_cuda_init(place: str, module: str, failure: BaseException | None, why: str, fix: str) -> None:
    """import-cost-cuda for a module whose import initialised CUDA (and what the import then raised here)."""
    tail = f" (here, without CUDA, the import then fails: {describe(failure)})" if failure else ""
    report("import-cost-cuda", place, f"importing {module} initialises CUDA{tail}. {why}", fix)


def import_watched(module: str) -> BaseException | None:
    """Imports `module` with the CUDA watch told which module is being imported; what it raised, or None."""
    importing.append(module)
    try:
        importlib.import_module(module)
    except BaseException as error:  # noqa: BLE001 - anything an import raises is what vLLM would log
        return error
    return None


def probe_extension_imports(extensions: list[str]) -> None:
    """Imports the module of each worker extension class ("module:Class") after the entry-point modules: vLLM
    imports it in every worker process, on every platform, before the worker picks its device. Only CUDA
    initialisation is reported: a module missing here may be a dependency this private install leaves out."""
    for path in extensions:
        module = path.partition(":")[0]
        if module in sys.modules:
            continue  # an entry-point module: its import is reported above
        failure = import_watched(module)
        if module in cuda_inits:
            report_cuda_init(
                f"worker extension {path.replace(':', '.')}",
                module,
                failure,
                facts.fact("worker-extension-imported").text(),
                "touch torch.cuda only inside the extension's methods, which run on the worker once its device is set",
            )
