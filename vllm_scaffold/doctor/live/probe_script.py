"""The live probe, run by `vllm_scaffold.doctor.live.probe` in a fresh interpreter:
`python -m vllm_scaffold.doctor.live.probe_script IN OUT`.

It imports the standard library, vLLM and the group names of vllm_scaffold.doctor.reading.installed (which imports
nothing else); the only plugin package added to this interpreter is the one under test, installed privately
and put on PYTHONPATH. Mode "imports" imports the package's
entry-point modules before anything else and reports what that costs (torch, CUDA initialisation). Mode
"registry" imports vLLM's registries, then loads and calls the package's plugins and every other installed
general plugin one at a time, diffing the registries around each call. Findings go to OUT as JSON.
"""

from __future__ import annotations

import functools
import importlib
import importlib.abc
import importlib.metadata
import inspect
import json
import re
import subprocess
import sys
from types import SimpleNamespace

from vllm_scaffold.doctor.reading.installed import ENDPOINT, GENERAL, IO_PROCESSOR, LOGITS, PLATFORM, STAT_LOGGER
from vllm_scaffold.vllm_facts import facts, linear_kernels

EVERY_PROCESS = (GENERAL, PLATFORM)
V1_BASE = "vllm.v1.sample.logits_processor.LogitsProcessor"
V2_BASE = "vllm.v1.worker.gpu.sample.logits_processor.interface.LogitsProcessor"

findings: list[dict[str, str]] = []


def report(severity: str, code: str, where: str, message: str, fix: str) -> None:
    findings.append({"severity": severity, "code": code, "where": where, "message": message, "fix": fix})


def load_failure(group: str) -> str:
    """What vLLM does with an entry point of `group` that fails to load."""
    return facts.fact("ep-logits-load-failure-fatal" if group == LOGITS else "ep-load-failure-logged").text()


# The processes that load each entry-point group, as the catalog states them.
GROUP_PROCESSES = {
    GENERAL: "catalog-general-plugin-processes",
    PLATFORM: "catalog-platform-processes",
    IO_PROCESSOR: "io-processor-front-end",
    STAT_LOGGER: "catalog-stat-logger-processes",
    ENDPOINT: "endpoint-api-server-only",
    LOGITS: "logits-processor-processes",
}


def loaded_in(group: str) -> str:
    """Where vLLM imports an entry point of `group` (a group this tool does not know yet: where it loads it)."""
    key = GROUP_PROCESSES.get(group)
    return f"vLLM imports the module wherever it loads {group}" + (f": {facts.fact(key).text()}" if key else "")


def where(ep: dict[str, str]) -> str:
    return f'entry point [{ep["group"]}] {ep["name"]} = "{ep["value"]}"'


def describe(error: BaseException) -> str:
    text = f"{type(error).__name__}: {error}".strip()
    return text if len(text) < 300 else text[:300] + "..."


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
                "error",
                "ep-import-fails",
                where(ep),
                f"importing {module} raises {describe(failure)}. {load_failure(ep['group'])}",
                "fix the import (run `python -c 'import " + module + "'` with only this package installed)",
            )
        elif ep["group"] in EVERY_PROCESS and not had_torch and "torch" in sys.modules and not vllm_imports_torch():
            report(
                "warning",
                "import-cost-torch",
                where(ep),
                f"importing {module} imports torch (directly or through vllm), which costs seconds in every "
                "vLLM process, including the front end",
                "import torch and vLLM inside the functions that need them; keep the entry-point module light",
            )


def report_cuda_init(place: str, module: str, failure: BaseException | None, why: str, fix: str) -> None:
    """import-cost-cuda for a module whose import initialised CUDA (and what the import then raised here)."""
    tail = f" (here, without CUDA, the import then fails: {describe(failure)})" if failure else ""
    report("error", "import-cost-cuda", place, f"importing {module} initialises CUDA{tail}. {why}", fix)


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


# --- mode "registry": what the plugins register ------------------------------------------------------------------


class Registries:
    """vLLM's per-process registries, captured, diffed and restored around each plugin call."""

    def __init__(self, apis: list[str]) -> None:
        """Imports only the registries the package's source can reach (by the register_* names it calls)."""
        self.dicts: dict[str, dict] = {}
        self.lists: dict[str, list] = {}
        self.kernels: dict[str, dict] = {}
        if "register_backend" in apis:
            from vllm.v1.attention.backends import registry as attention

            self.dicts["attention"] = attention._ATTN_OVERRIDES
            self.dicts["mamba_attention"] = attention._MAMBA_ATTN_OVERRIDES
        if "register_quantization_config" in apis:
            import vllm.model_executor.layers.quantization as quant

            self.dicts["quantization"] = quant._CUSTOMIZED_METHOD_TO_QUANT_CONFIG
            self.lists["quantization_methods"] = quant.QUANTIZATION_METHODS
        if "register_oot" in apis:
            from vllm.model_executor import custom_op

            self.dicts["custom_op"] = custom_op.op_registry_oot
        if "register_connector" in apis:
            from vllm.distributed.kv_transfer.kv_connector.factory import KVConnectorFactory

            self.dicts["kv_connector"] = KVConnectorFactory._registry
        if "register_spec" in apis:
            from vllm.v1.kv_offload.factory import OffloadingSpecFactory

            self.dicts["offloading_spec"] = OffloadingSpecFactory._registry
        if "register_model" in apis:
            from vllm.model_executor.models.registry import ModelRegistry

            self.dicts["model"] = ModelRegistry.models
        if "register_linear_kernel" in apis:
            import vllm
            import vllm.model_executor.kernels.linear as linear

            accepted = linear_kernels.kinds(vllm.__version__)
            self.kernels = {kind: getattr(linear, linear_kernels.table(kind)) for kind in accepted}

    def capture(self) -> dict:
        return {
            "dicts": {name: dict(d) for name, d in self.dicts.items()},
            "lists": {name: list(values) for name, values in self.lists.items()},
            "kernels": {kind: {p: list(v) for p, v in d.items()} for kind, d in self.kernels.items()},
        }

    def restore(self, state: dict) -> None:
        for name, d in self.dicts.items():
            d.clear()
            d.update(state["dicts"][name])
        for name, values in self.lists.items():
            values[:] = state["lists"][name]
        for kind, d in self.kernels.items():
            d.clear()
            d.update({p: list(v) for p, v in state["kernels"][kind].items()})

    @staticmethod
    def diff(before: dict, after: dict) -> dict[str, dict]:
        """registry -> {key: value} for entries added or replaced; kernels: (kind, platform) -> [classes]."""
        changed: dict[str, dict] = {}
        for name, entries in after["dicts"].items():
            old = before["dicts"][name]
            new = {k: v for k, v in entries.items() if k not in old or old[k] is not v}
            if new:
                changed[name] = new
        for kind, platforms in after["kernels"].items():
            for platform, kernels in platforms.items():
                old = before["kernels"][kind].get(platform, [])
                if len(kernels) > len(old):
                    changed.setdefault("kernels", {})[(kind, platform)] = kernels[len(old) :]
        return changed


def key_name(key: object) -> str:
    return getattr(key, "name", None) or str(key)


def summary(changes: dict[str, dict]) -> str:
    parts = []
    for registry, entries in changes.items():
        if registry == "kernels":
            parts += [f"{k[0]} kernel {c.__name__}" for k, classes in entries.items() for c in classes]
        else:
            parts += [f"{registry} {key_name(k)}" for k in entries]
    return ", ".join(parts)


def call_counted(registries: Registries, function) -> tuple[dict, BaseException | None]:
    before = registries.capture()
    try:
        function()
        failure = None
    except BaseException as error:  # noqa: BLE001 - vLLM does not guard general plugins: anything is fatal
        failure = error
    return Registries.diff(before, registries.capture()), failure


def vllm_attributes() -> dict[str, int]:
    """id() of every module-level object and class attribute of the vllm modules loaded now, by dotted name:
    what a monkeypatch replaces."""
    found: dict[str, int] = {}
    for name, module in list(sys.modules.items()):
        if not (name == "vllm" or name.startswith("vllm.")) or module is None:
            continue
        for attribute, value in list(vars(module).items()):
            found[f"{name}.{attribute}"] = id(value)
            if isinstance(value, type) and value.__module__ == name:
                for member, inner in list(vars(value).items()):
                    found[f"{name}.{attribute}.{member}"] = id(inner)
    return found


def replaced_again(before: dict[str, int], after: dict[str, int]) -> list[str]:
    """The attributes present before that now hold another object."""
    return sorted(name for name, identity in before.items() if after.get(name, identity) != identity)


def load(ep: dict[str, str]):
    return importlib.metadata.EntryPoint(ep["name"], ep["value"], ep["group"]).load()


def required_parameters(obj) -> int | None:
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    return sum(
        1
        for p in signature.parameters.values()
        if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    )


def object_fits(ep: dict[str, str], obj) -> str | None:
    """Why `obj` does not fit its group, or None."""
    group = ep["group"]
    if group in (GENERAL, PLATFORM, IO_PROCESSOR, ENDPOINT):
        if not callable(obj):
            return f"it is a {type(obj).__name__}, not a callable"
        required = required_parameters(obj)
        if required:
            return f"vLLM calls it with no arguments but it requires {required}"
        return None
    if group == STAT_LOGGER:
        from vllm.v1.metrics.loggers import StatLoggerBase

        if not (isinstance(obj, type) and issubclass(obj, StatLoggerBase)):
            return "vLLM wants a StatLoggerBase subclass (a class, not a factory) and raises TypeError"
        return None
    if group == LOGITS:
        bases = tuple(base for base in logits_bases() if base is not None)
        if not (isinstance(obj, type) and issubclass(obj, bases)):
            return "vLLM wants a LogitsProcessor class (V1 or V2 interface) and fails at startup"
    return None


def logits_bases():
    """(the V1 runner's base, None where vLLM has no V1 runner (0.34 on); Model Runner V2's base)."""
    from vllm.v1.worker.gpu.sample.logits_processor.interface import LogitsProcessor as V2

    try:
        from vllm.v1.sample.logits_processor import LogitsProcessor as V1
    except ImportError:
        return None, V2
    return V1, V2


def uses_v2_runner() -> bool:
    import vllm.envs as envs
    from vllm.triton_utils import HAS_TRITON

    if logits_bases()[0] is None:
        return True  # the only runner
    chosen = envs.VLLM_USE_V2_MODEL_RUNNER
    return bool(chosen) if chosen is not None else bool(HAS_TRITON)


def check_logits_processor(ep: dict[str, str], cls) -> None:
    v1, v2 = logits_bases()
    v2_runner = uses_v2_runner()
    runner = "V2 (Model Runner V2)" if v2_runner else "V1"
    is_v1 = v1 is not None and issubclass(cls, v1)
    pin = (
        f", or pin the runner with VLLM_USE_V2_MODEL_RUNNER={int(not v2_runner)}"
        if v1 is not None
        else ": this vLLM has no other runner"
    )
    if not issubclass(cls, v2 if v2_runner else v1):  # a class may implement both interfaces
        report(
            "error",
            "logits-runner-mismatch",
            where(ep),
            f"{cls.__name__} implements only the {'V1' if is_v1 else 'V2'} LogitsProcessor interface but this platform "
            f"runs the {runner} model runner: engine startup fails with ValueError (every installed processor "
            "is loaded, VLLM_PLUGINS does not apply)",
            f"implement {V2_BASE if v2_runner else V1_BASE}{pin}",
        )
    if is_v1:
        check_argmax_claim(ep, cls)


# Values tried for a processor's per-request parameter, in order: a token id, then a list of them (the two
# shapes a logits processor's parameter takes); the first its validate_params accepts is sent.
PARAMETER_VALUES = (3, [3, 5])


def check_argmax_claim(ep: dict[str, str], cls) -> None:
    """is_argmax_invariant() True makes vLLM skip the processor for greedy batches: apply must keep argmax.

    Four requests go through a real BatchUpdate: with default SamplingParams, and, where the manifest names
    the processor's parameter, two of them passing it (default parameters alone never reach the code that
    changes the logits of a processor driven by a per-request parameter).
    """
    from vllm import SamplingParams

    parameter = ep.get("parameter")
    batches = [[SamplingParams() for _ in range(4)]]
    for value in PARAMETER_VALUES if parameter else ():
        passing = SamplingParams(extra_args={parameter: value})
        try:
            cls.validate_params(passing)
        except Exception:  # noqa: BLE001,S112 - a value the processor refuses at admission: try the next shape
            continue
        batches.append([passing, SamplingParams(), passing, SamplingParams()])
        break
    for batch in batches:
        changed = _argmax_changes(cls, batch)
        if changed is None:
            return
        if changed:
            sent = f" ({parameter}={batch[0].extra_args[parameter]!r} in 2 of them)" if batch[0].extra_args else ""
            report(
                "warning",
                "logits-argmax-claim",
                where(ep),
                f"{cls.__name__}.is_argmax_invariant() returns True but apply() changed the argmax of {changed} of "
                f"{len(batch)} rows of random logits{sent}. " + facts.fact("argmax-invariant-skipped-greedy").text(),
                "return False from is_argmax_invariant() (it is read once, when the processor is built)",
            )
            return


def _argmax_changes(cls, params: list) -> int | None:
    """How many rows of random logits `cls.apply` gives another argmax, for requests with `params`; None when
    the processor claims no argmax invariance, or cannot be run outside an engine."""
    import torch
    from vllm.v1.sample.logits_processor import BatchUpdate

    batch, vocab = len(params), 64
    config = SimpleNamespace(
        scheduler_config=SimpleNamespace(max_num_seqs=batch, max_num_batched_tokens=256),
        model_config=SimpleNamespace(get_vocab_size=lambda: vocab, max_model_len=256),
    )
    try:
        processor = cls(config, torch.device("cpu"), False)
        if not processor.is_argmax_invariant():
            return None
        added = [(i, p, [1, 2, 3], []) for i, p in enumerate(params)]
        processor.update_state(BatchUpdate(batch_size=batch, removed=[], added=added, moved=[]))
        generator = torch.Generator().manual_seed(0)
        logits = torch.randn(batch, vocab, generator=generator)
        out = processor.apply(logits.clone())
    except Exception:  # noqa: BLE001 - a processor that needs a real engine is probed by its own tests instead
        return None
    return int((out.argmax(dim=-1) != logits.argmax(dim=-1)).sum())


ENDPOINT_MEMBERS = ("name", "required_tasks", "attach_router", "init_state")


def check_endpoint(ep: dict[str, str], factory) -> None:
    """vLLM calls the factory and uses the result as an EndpointPlugin without an isinstance check."""
    try:
        plugin = factory()
    except Exception as error:  # noqa: BLE001 - vLLM logs this and skips the plugin
        problem = f"calling the factory raises {describe(error)}; vLLM logs it and skips the plugin"
    else:
        missing = [member for member in ENDPOINT_MEMBERS if not hasattr(plugin, member)]
        problem = f"the object it returns has no {', '.join(missing)}" if missing else None
        if not missing and plugin.name != ep["name"]:
            report(
                "info",
                "endpoint-name-mismatch",
                where(ep),
                f"the plugin calls itself '{plugin.name}' but its entry point is '{ep['name']}'. "
                + facts.fact("endpoint-name-unread").text(),
                f"set name = \"{ep['name']}\" (or rename the entry point to '{plugin.name}')",
            )
    if problem:
        report(
            "error",
            "ep-object-mismatch",
            where(ep),
            f"the object does not fit {ENDPOINT}: {problem}",
            "return an object with name, required_tasks, attach_router(app) and async init_state(...)",
        )


def check_quantization(name: str, config_cls) -> None:
    from vllm.model_executor.layers.linear import ReplicatedLinear

    config = None
    for build in (lambda: config_cls.from_config({}), config_cls):
        try:
            config = build()
            break
        except Exception:  # noqa: BLE001 - try the next way to build a config without a checkpoint
            continue
    if config is None:
        return
    layer = ReplicatedLinear.__new__(ReplicatedLinear)  # isinstance(layer, LinearBase) without building weights
    try:
        method = config.get_quant_method(layer, prefix="model.layers.0.mlp.down_proj")
    except Exception:  # noqa: BLE001 - needs attributes of a built layer: nothing to conclude
        return
    if method is None:
        report(
            "error",
            "quant-linear-method-none",
            f"quantization '{name}' ({config_cls.__module__}.{config_cls.__qualname__})",
            "get_quant_method returns None for a linear layer. " + facts.fact("quant-method-none-raises").text(),
            "return your LinearMethodBase for isinstance(layer, LinearBase) (UnquantizedLinearMethod() only for "
            "layers you deliberately skip)",
        )


def check_kernels(own_changes: dict) -> None:
    import vllm.envs as envs
    from vllm.platforms import current_platform

    here = current_platform._enum
    disabled = set(envs.VLLM_DISABLED_KERNELS)
    for (kind, platform), kernels in own_changes.get("kernels", {}).items():
        for kernel in kernels:
            where_kernel = f"{kind} kernel {kernel.__module__}.{kernel.__qualname__}"
            if platform != here:
                report(
                    "info",
                    "linear-kernel-other-platform",
                    where_kernel,
                    f"registered for {platform.name}; this machine's platform is {here.name}, so it is not "
                    "considered here",
                    f"expected when developing for {platform.name} elsewhere; register for each platform it runs on",
                )
                continue
            from vllm.model_executor.kernels import linear

            table = getattr(linear, linear_kernels.table(kind))
            candidates = table.get(platform, [])
            ahead = candidates[: candidates.index(kernel)]
            winners = [k.__name__ for k in ahead if k.__name__ not in disabled and supported_here(k)]
            if winners:
                report(
                    "warning",
                    "linear-kernel-shadowed",
                    where_kernel,
                    f"registered kernels are tried last: on {here.name} the in-tree {', '.join(winners)} "
                    f"{'is' if len(winners) == 1 else 'are'} tried first and take every layer "
                    f"{'it' if len(winners) == 1 else 'they'} can implement, and --linear-backend cannot name it",
                    f"set VLLM_DISABLED_KERNELS={','.join(winners)} (class names, comma-separated, no spaces)",
                )


def supported_here(kernel) -> bool:
    try:
        if hasattr(kernel, "is_supported"):
            return bool(kernel.is_supported()[0])
        from vllm.platforms import current_platform

        capability = current_platform.get_device_capability()
        return capability is None or capability.to_int() >= kernel.get_min_capability()
    except Exception:  # noqa: BLE001 - an in-tree kernel that cannot answer here does not compete
        return False


CONFLICTS = {
    "attention": ("attention-backend-conflict", "attention backend {key}"),
    "mamba_attention": ("attention-backend-conflict", "mamba attention backend {key}"),
    "custom_op": ("custom-op-conflict", "the CustomOp replacement for {key}"),
    "kv_connector": ("kv-connector-name-taken", "KV connector name {key}"),
    "offloading_spec": ("offloading-spec-name-taken", "KV offloading spec name {key}"),
}
CONFLICT_FIX = {
    "attention-backend-conflict": "select one package (uninstall the other, or exclude its general plugin "
    "from VLLM_PLUGINS); register under a new upper-case name instead of a shared member",
    "custom-op-conflict": "only one installed plugin may replace an op: the second register_oot raises "
    "AssertionError in every process; uninstall one or exclude its general plugin from VLLM_PLUGINS",
    "kv-connector-name-taken": "register the connector under a name no other installed plugin uses",
    "offloading-spec-name-taken": "register the spec under a name no other installed plugin uses, or select it "
    "with spec_module_path in kv_connector_extra_config instead of registering it",
}


LAST_WINS = "the plugin vLLM loads last wins, in entry-point order"
# Registries whose second registration of a name raises: the general plugin vLLM calls second stops the process.
OUTCOME = {
    "offloading_spec": "the general plugin vLLM calls second raises ValueError, and vLLM calls general plugins "
    "unguarded, so every vLLM process stops at start-up. " + facts.fact("offloading-spec-duplicate-raises").text(),
}


def check_conflicts(own_changes: dict, registries: Registries, baseline: dict, others: list[dict]) -> None:
    if not set(own_changes) & set(CONFLICTS):
        return  # nothing another plugin could collide with: do not pay for loading them
    for ep in others:
        registries.restore(baseline)
        before = registries.capture()
        try:
            function = load(ep)
            function()
        except BaseException:  # noqa: BLE001,S112 - another package's failure is its own doctor's business
            pass
        theirs = Registries.diff(before, registries.capture())
        for registry, (code, label) in CONFLICTS.items():
            for key in set(own_changes.get(registry, {})) & set(theirs.get(registry, {})):
                report(
                    "error",
                    code,
                    label.format(key=key_name(key)),
                    f"{label.format(key=key_name(key))} is registered by this package and by {ep['dist']} "
                    f"(general plugin {ep['name']}): {OUTCOME.get(registry, LAST_WINS)}",
                    CONFLICT_FIX[code],
                )
    registries.restore(baseline)


def probe_registry(own: list[dict[str, str]], others: list[dict[str, str]], apis: list[str]) -> None:
    registries = Registries(apis)
    baseline = registries.capture()
    objects = {}
    for ep in own:
        try:
            objects[ep["name"], ep["group"]] = load(ep)
        except AttributeError as error:
            report(
                "error",
                "ep-target-missing",
                where(ep),
                f"the module imports but has no '{ep['value'].partition(':')[2]}' ({describe(error)})",
                "point the entry point at the function or class that exists",
            )
        except BaseException:  # noqa: BLE001,S112 - import failures were reported by the imports probe
            continue
    for (name, group), obj in objects.items():
        ep = next(e for e in own if e["name"] == name and e["group"] == group)
        problem = object_fits(ep, obj)
        if problem:
            report(
                "error",
                "ep-object-mismatch",
                where(ep),
                f"the object does not fit {group}: {problem}",
                {
                    STAT_LOGGER: "point the entry point at the StatLoggerBase subclass itself",
                    LOGITS: "point the entry point at the LogitsProcessor subclass",
                }.get(group, "point the entry point at a function (or class) that takes no arguments"),
            )
        elif group == LOGITS:
            check_logits_processor(ep, obj)
        elif group == ENDPOINT:
            check_endpoint(ep, obj)
    own_changes = Registries.diff(baseline, registries.capture())  # registrations made at import
    for (name, group), obj in objects.items():
        if group != GENERAL or object_fits({"group": group}, obj):
            continue
        ep = next(e for e in own if e["name"] == name and e["group"] == group)
        first, failure = call_counted(registries, obj)
        for registry, entries in first.items():
            own_changes.setdefault(registry, {}).update(entries)
        if failure is not None:
            report(
                "error",
                "general-plugin-raises",
                where(ep),
                f"calling it raises {describe(failure)}; vLLM calls general plugins unguarded, so every vLLM "
                "process dies at startup",
                "catch what can fail inside the function (or fix it); log and return instead of raising",
            )
            continue
        patched = vllm_attributes()
        second, failure = call_counted(registries, obj)
        rewrapped = replaced_again(patched, vllm_attributes()) if failure is None else []
        if failure is not None or second or rewrapped:
            if failure is not None:
                what = f"raises {describe(failure)}"
            elif second:
                what = f"registers again: {summary(second)}"
            else:
                shown = ", ".join(rewrapped[:4]) + (f" (+{len(rewrapped) - 4} more)" if len(rewrapped) > 4 else "")
                what = (
                    f"replaces {shown} again: each call wraps the replacement the call before installed, so the "
                    "patch runs once per call, and a wrapper that reaches the original through an attribute it "
                    "set itself calls itself until RecursionError"
                )
            report(
                "warning",
                "general-plugin-not-idempotent",
                where(ep),
                f"called a second time in the same process it {what}. "
                + facts.fact("general-plugins-once-per-process").text(),
                "guard the body with a module-level flag set at its first line, as generated plugins do",
            )
    for name, config_cls in own_changes.get("quantization", {}).items():
        check_quantization(name, config_cls)
    check_kernels(own_changes)
    check_conflicts(own_changes, registries, baseline, others)


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as handle:
        request = json.load(handle)
    own = request["own"]
    if request["mode"] == "imports":
        probe_imports(own)
        probe_extension_imports(request.get("extensions", []))
    else:
        own_dist = re.sub(r"[-_.]+", "-", request["dist"]).lower()
        others = []
        for dist in importlib.metadata.distributions():
            name = dist.metadata["Name"] or "?"
            if re.sub(r"[-_.]+", "-", name).lower() == own_dist:
                continue
            others += [
                {"dist": name, "group": e.group, "name": e.name, "value": e.value}
                for e in dist.entry_points
                if e.group == GENERAL
            ]
        unique = {(o["dist"], o["name"]): o for o in others}
        probe_registry(own, list(unique.values()), request["apis"])
    with open(sys.argv[2], "w", encoding="utf-8") as handle:
        json.dump(findings, handle)


if __name__ == "__main__":
    main()
