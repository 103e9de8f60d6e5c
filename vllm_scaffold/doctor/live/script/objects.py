"""What the registry probe checks of each object an entry point loads: its shape (a factory, a class, a logits
processor, an endpoint, a quantization method, a linear kernel) against what vLLM calls on it."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.metadata
import inspect
from types import SimpleNamespace

from vllm_scaffold.doctor.live.script.common import V1_BASE, V2_BASE, describe, report, where
from vllm_scaffold.doctor.reading.installed import ENDPOINT, GENERAL, IO_PROCESSOR, LOGITS, PLATFORM, STAT_LOGGER
from vllm_scaffold.vllm_facts import facts, linear_kernels


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
            return f"it requires {required} arguments. " + facts.fact("entry-point-callables-called-bare").text()
        return None
    if group == STAT_LOGGER:
        from vllm.v1.metrics.loggers import StatLoggerBase

        if not (isinstance(obj, type) and issubclass(obj, StatLoggerBase)):
            return (
                "it is not a StatLoggerBase subclass (a class, not a factory). "
                + facts.fact("stat-logger-class-checked").text()
            )
        return None
    if group == LOGITS:
        v1, v2 = logits_bases()
        if v1 is None and not (isinstance(obj, type) and issubclass(obj, v2)):
            return (
                "it is not a subclass of Model Runner V2's LogitsProcessor. "
                + facts.fact("logits-v1-interface-removed").text()
            )
        if v1 is not None and not (isinstance(obj, type) and issubclass(obj, (v1, v2))):
            return (
                "it derives from neither LogitsProcessor interface (V1 or V2). "
                + facts.fact("logits-v2-rejects-v1").text()
            )
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
        outcome = facts.fact("logits-v2-rejects-v1").text() if v2_runner else "It cannot run there."
        report(
            "logits-runner-mismatch",
            where(ep),
            f"{cls.__name__} implements only the {'V1' if is_v1 else 'V2'} LogitsProcessor interface but this platform "
            f"runs the {runner} model runner. {outcome} " + facts.fact("logits-processor-group-unfiltered").text(),
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
                "endpoint-name-mismatch",
                where(ep),
                f"the plugin calls itself '{plugin.name}' but its entry point is '{ep['name']}'. "
                + facts.fact("endpoint-name-unread").text(),
                f"set name = \"{ep['name']}\" (or rename the entry point to '{plugin.name}')",
            )
    if problem:
        report(
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
