"""Doctor fixture packages written from a few lines each, instead of whole copied packages.

Every variant is the same minimal plugin (a pyproject.toml with a `vllm.general_plugins` entry point, an
import package `fx_<name>` whose `plugin.py` holds `register()`) plus the files and pyproject lines that make
it what it is. BROKEN variants trigger exactly the code they are named for (plus `also`); CLEAN variants are
patterns real plugins use on purpose, which doctor must not report (or only as `also`, e.g. an info).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from textwrap import dedent, indent

from tests.helpers import build_file_tree

FIXTURES = Path(__file__).parent / "fixtures" / "doctor"

REGISTER = '''\
"""The general plugin: vLLM calls register() in every process."""


def register() -> None:
    """Nothing to register."""
'''


@dataclass(frozen=True)
class Variant:
    files: dict[str, str]  # path inside the import package -> source (dedented); plugin.py replaces the default
    pyproject: str = ""  # TOML appended to pyproject.toml
    general_plugin: bool = True  # declare the vllm.general_plugins entry point plugin:register
    also: frozenset[str] = field(default_factory=frozenset)  # codes expected besides the variant's own


def package_name(name: str) -> str:
    return "fx_" + name.replace("-", "_")


def write(name: str, variant: Variant, dest: Path) -> Path:
    """Writes the variant's package under dest/name and returns its root."""
    package = package_name(name)
    files = {"__init__.py": f'"""Doctor fixture: {name}."""\n', "plugin.py": REGISTER, **variant.files}
    entry = f'[project.entry-points."vllm.general_plugins"]\n{package} = "{package}.plugin:register"\n'
    pyproject = (
        '[build-system]\nrequires = ["hatchling>=1.21"]\nbuild-backend = "hatchling.build"\n\n'
        f'[project]\nname = "{package.replace("_", "-")}"\nversion = "0.1.0"\nrequires-python = ">=3.11"\n'
        "dependencies = []\n\n"
        + (entry if variant.general_plugin else "")
        + f'\n[tool.hatch.build.targets.wheel]\npackages = ["src/{package}"]\n'
        + (dedent(variant.pyproject) if variant.pyproject else "")
    )
    return build_file_tree(
        {"pyproject.toml": pyproject, **{f"src/{package}/{path}": text for path, text in files.items()}}, dest / name
    )


# Patterns that must not be reported (beyond `also`).
CLEAN: dict[str, Variant] = {
    # apply() hands its logits to helpers of the package, a Triton launch among them, that only read them.
    "logits-helpers-only-read": Variant(
        {
            "processor.py": '''
            """Counts the rows it sees; argmax-invariant, as it changes nothing."""
            import torch

            from fx_logits_helpers_only_read.stats import launch_row_sums, record


            class FxCountingProcessor:
                def is_argmax_invariant(self) -> bool:
                    return True

                def apply(self, logits: torch.Tensor) -> torch.Tensor:
                    record(logits)
                    launch_row_sums(logits)
                    return logits
            ''',
            "stats.py": '''
            """Read-only statistics over a logits tensor."""
            import torch
            import triton
            import triton.language as tl

            SEEN: list[float] = []


            def record(logits: torch.Tensor) -> None:
                SEEN.append(float(logits.sum()))


            @triton.jit
            def _row_sums_kernel(logits_ptr, out_ptr, vocab, BLOCK: tl.constexpr):
                row = tl.program_id(0)
                cols = tl.arange(0, BLOCK)
                values = tl.load(logits_ptr + row * vocab + cols, mask=cols < vocab)
                tl.store(out_ptr + row, tl.sum(values))


            def launch_row_sums(logits: torch.Tensor) -> torch.Tensor:
                out = torch.empty(logits.shape[0], device=logits.device)
                _row_sums_kernel[(logits.shape[0],)](logits, out, logits.shape[1], BLOCK=1024)
                return out
            ''',
        }
    ),
    "vllm-names-shadowed-or-set": Variant(
        {
            "plugin.py": '''
            """Reads vLLM names only where they exist: a parameter shadowing an imported module, a set attribute,
            a dunder every module has, a keyword-only argument vLLM passes by name."""
            import torch
            import vllm.envs as envs
            from vllm.model_executor.layers.fused_moe import layer
            from vllm.model_executor.models.interfaces import SupportsPP


            def weights(layer: torch.nn.Module) -> tuple[torch.Tensor, torch.Tensor]:
                return layer.w13_weight, layer.w2_weight


            def mark_patched() -> None:
                layer.fx_patched = True


            def settings() -> list[str]:
                return sorted(envs.__dict__)


            class FxModel(torch.nn.Module, SupportsPP):
                def forward(
                    self, input_ids: torch.Tensor, positions: torch.Tensor, intermediate_tensors: object
                ) -> torch.Tensor:
                    return input_ids


            def register() -> None:
                """Nothing to register."""
            '''
        }
    ),
    "type-checking-import": Variant(
        {
            "plugin.py": '''
            """Imports a name 0.32 lacks for annotations only."""
            from typing import TYPE_CHECKING

            if TYPE_CHECKING:
                from vllm.config import MultiStepConfig  # absent in 0.32, never imported at run time


            def register(config: "MultiStepConfig | None" = None) -> None:
                """Nothing to register."""
            '''
        }
    ),
    "kv-connector-popped": Variant(
        {
            "plugin.py": '''
            """Replaces an in-tree KV connector on purpose, removing vLLM's entry first."""


            def register() -> None:
                from vllm.distributed.kv_transfer.kv_connector.factory import KVConnectorFactory

                KVConnectorFactory._registry.pop("ExampleConnector", None)
                KVConnectorFactory.register_connector(
                    "ExampleConnector", "fx_kv_connector_popped.connector", "FxConnector"
                )
            '''
        }
    ),
    "own-kv-cache-shape-caller": Variant(
        {
            "backend.py": '''
            """An attention backend whose cache layout the plugin's own model runner asks for."""


            class FxBackend:
                @staticmethod
                def get_kv_cache_shape(num_blocks: int, block_size: int, num_kv_heads: int, head_size: int):
                    return (2, num_blocks, block_size, num_kv_heads, head_size)
            ''',
            "runner.py": '''
            """The plugin's model runner allocates the KV cache itself."""
            from fx_own_kv_cache_shape_caller.backend import FxBackend


            def kv_cache_shape(num_blocks: int) -> tuple[int, ...]:
                return FxBackend.get_kv_cache_shape(num_blocks, 16, 8, 64)
            ''',
        }
    ),
    "sync-scheduler-platform": Variant(
        {
            "scheduler.py": '''
            """A synchronous scheduler; the plugin's platform turns async scheduling off."""
            from vllm.v1.core.sched.scheduler import Scheduler


            class FxScheduler(Scheduler):
                pass
            ''',
            "platform.py": '''
            """The platform: async scheduling is not supported on this device."""


            class FxPlatform:
                @classmethod
                def check_and_update_config(cls, vllm_config) -> None:
                    vllm_config.scheduler_config.async_scheduling = False
            ''',
        }
    ),
    "suppressed-on-the-line": Variant(
        {
            "plugin.py": '''
            """Replaces vLLM's Llama on purpose (a hardware plugin's tuned implementation)."""


            def register() -> None:
                from vllm import ModelRegistry

                ModelRegistry.register_model(
                    "LlamaForCausalLM", "fx_suppressed_on_the_line.model:FxLlama"
                )  # doctor: ignore[model-shadows-in-tree]
            '''
        }
    ),
    "override-caller-replaced": Variant(
        {
            "kv.py": '''
            """The Fx KV cache manager: the Fx scheduler asks it for slots with the device's page count."""
            from vllm.v1.core.kv_cache_manager import KVCacheManager


            class FxKVCacheManager(KVCacheManager):
                def allocate_slots(self, request, num_new_tokens, device_pages):
                    return super().allocate_slots(request, num_new_tokens, num_lookahead_tokens=device_pages)
            ''',
            "scheduler.py": '''
            """The Fx scheduler: it replaces vLLM's schedule(), the only caller of allocate_slots()."""
            from vllm.v1.core.sched.async_scheduler import AsyncScheduler

            from fx_override_caller_replaced.kv import FxKVCacheManager


            class FxScheduler(AsyncScheduler):
                kv_cache_manager: FxKVCacheManager

                def schedule(self, throttle_prefills: bool = False):
                    granted = [r for r in self.waiting if self.kv_cache_manager.allocate_slots(r, r.num_tokens, 1)]
                    return self.fx_output(granted)

                def fx_output(self, granted):
                    return granted
            ''',
        }
    ),
    "override-called-by-own-runner": Variant(
        {
            "proposer.py": '''
            """The Fx draft proposer: only the Fx model runner calls it, with the device's own batch."""
            from vllm.v1.spec_decode.eagle import EagleProposer


            class FxEagleProposer(EagleProposer):
                def propose(self, batch, sampling_metadata):
                    return self.model(batch).argmax(dim=-1)
            ''',
            "runner.py": '''
            """The Fx model runner, which the Fx worker builds in place of vLLM's GPUModelRunner."""
            from fx_override_called_by_own_runner.proposer import FxEagleProposer


            class FxModelRunner:
                def __init__(self, vllm_config, device) -> None:
                    self.drafter = FxEagleProposer(vllm_config, device, self)

                def draft(self, batch, sampling_metadata):
                    return self.drafter.propose(batch, sampling_metadata)
            ''',
        }
    ),
    "model-built-by-plugin": Variant(
        {
            "model.py": '''
            """A compiled Fx model, run whole by the Fx model runner (it takes the device's packed input)."""
            import torch
            from vllm.model_executor.models.interfaces_base import VllmModelForTextGeneration


            class FxForCausalLM(torch.nn.Module, VllmModelForTextGeneration):
                def forward(self, model_input):
                    return self.compiled(model_input)

                def compute_logits(self, hidden_states, sampling_metadata):
                    return hidden_states[sampling_metadata.selected_token_indices]
            ''',
            "plugin.py": '''
            """The general plugin: vLLM calls register() in every process."""


            def register() -> None:
                """The Fx model runner builds FxForCausalLM itself: vLLM's model registry never holds it."""
            ''',
        }
    ),
    "override-for-another-release": Variant(
        {
            "connector_085.py": '''
            """The Fx KV connector as vLLM 0.8.5 called it; users of that release select this module by path."""
            from vllm.distributed.kv_transfer.kv_connector.v1.base import KVConnectorBase_V1


            class FxConnector(KVConnectorBase_V1):
                def update_state_after_alloc(self, request, num_external_tokens):
                    self.pending[request.request_id] = num_external_tokens
            ''',
            "plugin.py": '''
            """The general plugin: vLLM calls register() in every process."""


            def register() -> None:
                """Nothing to register: users select the connector by module path (kv_connector_module_path)."""
            ''',
        }
    ),
    "override-as-vllm-own-class": Variant(
        {
            "plugin.py": '''
            """The general plugin: registers the Fx build of DeepSeek's multi-token-prediction drafter."""
            import torch
            from vllm.model_executor.models.interfaces import SupportsPP


            class DeepSeekMTP(torch.nn.Module, SupportsPP):
                def forward(self, input_ids, positions, hidden_states, intermediate_tensors=None, inputs_embeds=None):
                    return self.predictor(input_ids, positions, hidden_states)


            def register() -> None:
                from vllm import ModelRegistry

                ModelRegistry.register_model("FxDeepSeekMTPModel", "fx_override_as_vllm_own_class.plugin:DeepSeekMTP")
            ''',
        }
    ),
}

# Each triggers exactly the code it is named for (plus `also`).
BROKEN: dict[str, Variant] = {
    "vllm-import-guarded": Variant(
        {
            "plugin.py": '''
            """Uses a fused MoE kernel where vLLM has it."""
            try:
                from vllm.model_executor.layers.fused_moe import fused_experts_fx

                HAS_FX_MOE = True
            except ImportError:
                HAS_FX_MOE = False


            def register() -> None:
                """Nothing to register."""
            '''
        }
    ),
    "platform-detector-always-claims": Variant(
        {
            "platform.py": '''
            """Platform detection for the Fx accelerator."""


            def detect() -> str | None:
                return "fx_platform_detector_always_claims.platform_impl.FxPlatform"
            ''',
            "platform_impl.py": '''
            """The Fx platform."""


            class FxPlatform:
                device_name = "fx"
            ''',
        },
        pyproject="""
        [project.entry-points."vllm.platform_plugins"]
        fx = "fx_platform_detector_always_claims.platform:detect"
        """,
    ),
    "general-plugin-side-effects": Variant(
        {
            "plugin.py": '''
            """The general plugin: tunes torch for the Fx device."""
            from fx_general_plugin_side_effects.tuning import tune


            def register() -> None:
                tune()
            ''',
            "tuning.py": '''
            """Process-wide settings."""
            import os


            def tune() -> None:
                os.environ["FX_THREADS"] = "8"
                _patch()


            def _patch() -> None:
                import torch

                torch.backends.fx_enabled = True
            ''',
        }
    ),
    "attention-custom-twice": Variant(
        {
            "plugin.py": '''
            """Registers the paged and the sparse backend."""


            def register() -> None:
                from vllm.v1.attention.backends.registry import AttentionBackendEnum, register_backend

                register_backend(AttentionBackendEnum.CUSTOM, class_path="fx_attention_custom_twice.paged.Paged")
                register_backend(AttentionBackendEnum.CUSTOM, class_path="fx_attention_custom_twice.sparse.Sparse")
            '''
        }
    ),
    "logits-argmax-masks": Variant(
        {
            "processor.py": '''
            """Bans tokens for the requests that ask for it."""
            import torch


            class FxBanProcessor:
                def __init__(self) -> None:
                    self.banned: dict[int, list[int]] = {}

                def is_argmax_invariant(self) -> bool:
                    return True

                def apply(self, logits: torch.Tensor) -> torch.Tensor:
                    for row, tokens in self.banned.items():
                        logits[row, tokens] = float("-inf")
                    return logits
            '''
        }
    ),
    "vllm-range-invalid": Variant(
        {
            "plugin.py": '''
            """The general plugin, with the range of vLLM it was written for."""
            SUPPORTED_VLLM = ">=0.32.0 <0.33"


            def register() -> None:
                from packaging.specifiers import SpecifierSet

                SpecifierSet(SUPPORTED_VLLM)
            '''
        }
    ),
    "component-not-registered": Variant(
        {
            "plugin.py": '''
            """The general plugin: runs each component's registration."""
            from importlib import import_module

            COMPONENT_REGISTRATIONS: tuple[str, ...] = ()


            def register() -> None:
                for target in COMPONENT_REGISTRATIONS:
                    module_name, _, function_name = target.partition(":")
                    getattr(import_module(module_name), function_name)()
            ''',
            "kv/__init__.py": '"""The KV connector component."""\n',
            "kv/registration.py": '''
            """Registers the connector."""


            def register() -> None:
                from vllm.distributed.kv_transfer.kv_connector.factory import KVConnectorFactory

                KVConnectorFactory.register_connector("FxConnector", "fx_component_not_registered.kv.c", "C")
            ''',
        },
        pyproject="""
        [tool.vllm-scaffold]
        package = "fx_component_not_registered"

        [[tool.vllm-scaffold.components]]
        seam = "kv-connector"
        name = "fx"
        module = "fx_component_not_registered.kv"
        object = "fx_component_not_registered.kv.c:C"
        """,
    ),
}

# What turns each CLEAN variant into the finding doctor must then report: (file, text, replacement, code).
CONTRASTS: dict[str, tuple[str, str, str, str]] = {
    "type-checking-import": ("plugin.py", "if TYPE_CHECKING:", "if True:", "vllm-import-missing"),
    "kv-connector-popped": (
        "plugin.py",
        'KVConnectorFactory._registry.pop("ExampleConnector", None)',
        "pass",
        "kv-connector-name-taken",
    ),
    "own-kv-cache-shape-caller": (
        "runner.py",
        "return FxBackend.get_kv_cache_shape(num_blocks, 16, 8, 64)",
        "return (num_blocks,)",
        "attention-kv-cache-shape",
    ),
    "sync-scheduler-platform": (
        "platform.py",
        "async_scheduling = False",
        "async_scheduling = True",
        "scheduler-not-async",
    ),
    "vllm-names-shadowed-or-set": (
        "plugin.py",
        "def weights(layer: torch.nn.Module)",
        "def weights(module: torch.nn.Module)",
        "vllm-attribute-missing",
    ),
    "suppressed-on-the-line": ("plugin.py", "# doctor: ignore[model-shadows-in-tree]", "", "model-shadows-in-tree"),
    "override-caller-replaced": ("scheduler.py", "def schedule(", "def schedule_fx(", "vllm-override-signature"),
    "override-called-by-own-runner": ("runner.py", "FxModelRunner", "FxDrafting", "vllm-override-signature"),
    "model-built-by-plugin": (
        "plugin.py",
        '"""The Fx model runner builds FxForCausalLM itself: vLLM\'s model registry never holds it."""',
        "from vllm import ModelRegistry\n\n"
        '    ModelRegistry.register_model("FxLM", "fx_model_built_by_plugin.model:FxForCausalLM")',
        "vllm-override-signature",
    ),
    "override-for-another-release": (
        "plugin.py",
        '"""Nothing to register: users select the connector by module path (kv_connector_module_path)."""',
        "import fx_override_for_another_release.connector_085",
        "vllm-override-signature",
    ),
    "override-as-vllm-own-class": ("plugin.py", "DeepSeekMTP", "FxDrafter", "vllm-override-signature"),
    "logits-helpers-only-read": (
        "stats.py",
        "tl.store(out_ptr + row, tl.sum(values))",
        "tl.store(logits_ptr + row * vocab + cols, values * 0.0, mask=cols < vocab)",
        "logits-argmax-masks",
    ),
}


def _merge_installed_release_variants() -> None:
    """The variants of the release checks a plain run makes against the installed vLLM, kept apart."""
    import doctor_variants_installed as installed

    BROKEN.update(installed.BROKEN)
    CLEAN.update(installed.CLEAN)
    CONTRASTS.update(installed.CONTRASTS)


def _merge_environment_variants() -> None:
    """The variants of the plugin's environment (its Python, build backend, groups) and of the classes of
    breakage doctor used to miss, kept apart."""
    import doctor_variants_env as env

    BROKEN.update(env.BROKEN)
    CLEAN.update(env.CLEAN)
    CONTRASTS.update(env.CONTRASTS)


def write_contrast(name: str, dest: Path) -> Path:
    """The CLEAN variant `name` without what makes it intended."""
    file, text, replacement, _code = CONTRASTS[name]
    variant = CLEAN[name]
    if file == "pyproject.toml":
        assert text in variant.pyproject, f"{name}: {text!r} is not in its pyproject lines"
        return write(name, Variant(variant.files, variant.pyproject.replace(text, replacement)), dest)
    source = dedent(variant.files[file])
    assert text in source, f"{name}: {text!r} is not in {file}"
    return write(name, Variant({**variant.files, file: source.replace(text, replacement)}, variant.pyproject), dest)


BROKEN["vllm-config-attribute-missing"] = Variant(
    {
        "platform.py": '''
        """The platform adjusts the scheduler for the Fx device."""


        class FxPlatform:
            @classmethod
            def check_and_update_config(cls, vllm_config) -> None:
                scheduler_config = vllm_config.scheduler_config
                if scheduler_config.is_multi_step:  # gone in 0.32
                    scheduler_config.max_num_seqs = 1
                if vllm_config.cache_config.block_size > 16 and vllm_config.model_config.max_model_len:
                    vllm_config.cache_config.block_size = 16
                try:
                    steps = vllm_config.scheduler_config.num_scheduler_steps  # guarded: not reported
                except AttributeError:
                    steps = 1
                cls.steps = steps
        '''
    }
)

BROKEN["vllm-override-signature"] = Variant(
    {
        "platform.py": '''
        """The Fx platform, written against an older vLLM's selector."""
        from vllm.platforms.interface import Platform, PlatformEnum


        class FxPlatform(Platform):
            _enum = PlatformEnum.OOT
            device_name = "fx"

            @classmethod
            def get_attn_backend_cls(
                cls, selected_backend, head_size, dtype, kv_cache_dtype, block_size, use_mla, has_sink
            ) -> str:
                return "fx_vllm_override_signature.attention.FxBackend"
        '''
    }
)
BROKEN["vllm-attribute-missing"] = Variant(
    {
        "plugin.py": '''
        """The general plugin, still asking for the V1 engine switch."""
        import vllm.envs as envs


        def register() -> None:
            if not envs.VLLM_USE_V1:
                raise RuntimeError("the Fx plugin needs the V1 engine")
        '''
    }
)


BROKEN["vllm-self-attribute-missing"] = Variant(
    {
        "manager.py": '''
        """Fx's KV cache manager: zeroes the blocks it hands out (written against vLLM 0.31)."""
        from vllm.v1.core.kv_cache_manager import KVCacheManager


        class FxKVCacheManager(KVCacheManager):
            def blocks_to_zero(self, start: int, end: int) -> list[int]:
                return list(self.get_zeroing_block_ids_in_range(start, end))
        '''
    }
)

# Reads of self.X the release check stays silent on: X assigned by the plugin (another method, another class of
# the package, a subclass), an ancestor outside vLLM's index (torch.nn.Module under CustomOp), a __getattr__,
# a vLLM Protocol (an interface the final class implements through its other bases).
SELF_ATTRIBUTES_DEFINED = '''
"""Fx's KV cache manager and RMSNorm."""
from vllm.model_executor.layers.layernorm import RMSNorm
from vllm.model_executor.models.interfaces import SupportsMultiModal
from vllm.v1.core.kv_cache_manager import KVCacheManager


class FxKVCacheManager(KVCacheManager):
    def warm_up(self) -> None:
        self.fx_zeroed = 0

    def blocks_to_zero(self) -> int:
        return self.fx_zeroed + self.fx_pending + len(self.block_pool.blocks)


class FxLazyManager(KVCacheManager):
    def __getattr__(self, name: str) -> object:
        return 0

    def blocks_to_zero(self) -> object:
        return self.get_zeroing_block_ids_in_range


class FxRMSNorm(RMSNorm):
    def forward_fx(self, x):
        return x * self.fx_scale


class FxBaseManager(KVCacheManager):
    def view(self) -> object:
        return self._fx_view()


class FxPagedManager(FxBaseManager):
    def _fx_view(self) -> object:
        return self


class FxMultimodalMixin(SupportsMultiModal):
    def embed_fx(self) -> object:
        return self._parse_fx_image()


def settle(manager: FxKVCacheManager) -> None:
    manager.fx_pending = 0
'''


# --- One module, several packages: variants of a shared module text (the clean fixture's quantization config,
# one linear kernel, one endpoint plugin), each registered by a general plugin that runs once per process.


def once(body: str, *, logs: bool = False) -> str:
    """A plugin.py whose register() runs `body` once per vLLM process (guarded, as most real plugins are)."""
    head = "import logging\n\nlogger = logging.getLogger(__name__)\n\n" if logs else "\n"
    return (
        f'"""The general plugin."""\n{head}_registered = False\n\n\n'
        'def register() -> None:\n    """The general plugin: runs once per vLLM process."""\n'
        "    global _registered\n    if _registered:\n        return\n    _registered = True\n\n"
        + indent(dedent(body).strip("\n"), "    ")
        + "\n"
    )


CLEAN_QUANT = (FIXTURES / "clean" / "src" / "fx_clean" / "quant.py").read_text(encoding="utf-8")

LINEAR_KERNEL = '''
    """A weight-only linear kernel."""

    import torch
    from vllm.model_executor.kernels.linear.mixed_precision.MPLinearKernel import MPLinearKernel


    class FxLinearKernel(MPLinearKernel):
        @classmethod
        def get_min_capability(cls) -> int:
            return 0

        @classmethod
        def can_implement(cls, c) -> tuple[bool, str | None]:
            return True, None

        def process_weights_after_loading(self, layer: torch.nn.Module) -> None:
            return None

        def apply_weights(
            self, layer: torch.nn.Module, x: torch.Tensor, bias: torch.Tensor | None = None
        ) -> torch.Tensor:
            return x
    '''


def linear_kernel(name: str, platform: str, kind: str, *, caught: bool = False) -> Variant:
    """LINEAR_KERNEL registered for `platform` ("current_platform._enum" or "PlatformEnum.X") as `kind`; with
    `caught`, the ValueError vLLM raises for a kind it does not know is logged, so only doctor tells."""
    platform_import = "current_platform" if platform.startswith("current_platform") else "PlatformEnum"
    call = f'register_linear_kernel(FxLinearKernel, {platform}, "{kind}")'
    if caught:
        logged = "logger.warning('linear kernel not registered: %s', error)"
        call = f"try:\n    {call}\nexcept ValueError as error:\n    {logged}"
    body = f"""
        from vllm.model_executor.kernels.linear import register_linear_kernel
        from vllm.platforms import {platform_import}

        from {package_name(name)}.kernel import FxLinearKernel

        """
    return Variant({"kernel.py": LINEAR_KERNEL, "plugin.py": once(dedent(body) + call, logs=caught)})


def endpoint(name: str, plugin_name: str) -> Variant:
    """An endpoint plugin named `plugin_name`, declared under the entry-point name fx_endpoint."""
    module = f'''
        """An endpoint plugin factory."""


        class HealthPlugin:
            name = "{plugin_name}"
            required_tasks = None

            def attach_router(self, app) -> None:
                app.add_api_route("/fx/health", self.health, methods=["GET"])

            async def health(self) -> dict[str, str]:
                return {{"status": "ok"}}

            async def init_state(self, engine_client, state, args) -> None:
                state.fx_health = True


        def make_plugin() -> HealthPlugin:
            return HealthPlugin()
        '''
    declared = (
        f'[project.entry-points."vllm.endpoint_plugins"]\nfx_endpoint = "{package_name(name)}.endpoint:make_plugin"\n'
    )
    return Variant({"endpoint.py": module, "plugin.py": once("return None")}, pyproject=declared)


def registers(name: str, body: str) -> Variant:
    """A general plugin whose guarded register() runs `body`, with `{package}` naming its own package."""
    return Variant({"plugin.py": once(body.replace("{package}", package_name(name)))})


BROKEN.update(
    {
        "quant-shadows-in-tree": Variant(
            {
                "quant.py": CLEAN_QUANT.replace('"fx_clean"', '"fp8"'),
                "plugin.py": once("from fx_quant_shadows_in_tree import quant  # noqa: F401"),
            }
        ),
        "quant-linear-method-none": Variant(
            {
                "quant.py": CLEAN_QUANT.replace('"fx_clean"', '"fx_quant"').replace(
                    "return UnquantizedLinearMethod() if isinstance(layer, LinearBase) else None", "return None"
                ),
                "plugin.py": once("from fx_quant_linear_method_none import quant  # noqa: F401"),
            }
        ),
        "linear-kernel-bad-kind": linear_kernel(
            "linear-kernel-bad-kind", "current_platform._enum", "int4", caught=True
        ),
        "linear-kernel-other-platform": linear_kernel("linear-kernel-other-platform", "PlatformEnum.TPU", "mp"),
        "linear-kernel-shadowed": linear_kernel("linear-kernel-shadowed", "current_platform._enum", "mp"),
        "endpoint-name-mismatch": endpoint("endpoint-name-mismatch", "fx-health"),
        "endpoint-not-enabled": endpoint("endpoint-not-enabled", "fx_endpoint"),
        "model-shadows-in-tree": registers(
            "model-shadows-in-tree",
            """
            from vllm import ModelRegistry

            ModelRegistry.register_model("LlamaForCausalLM", "{package}.model:FxLlamaForCausalLM")
            """,
        ),
        "attention-backend-conflict": registers(
            "attention-backend-conflict",
            """
            from vllm.v1.attention.backends.registry import AttentionBackendEnum, register_backend

            register_backend(AttentionBackendEnum.CUSTOM, class_path="{package}.backend.FxBackend")
            """,
        ),
        "attention-overrides-in-tree": registers(
            "attention-overrides-in-tree",
            """
            from vllm.v1.attention.backends.registry import AttentionBackendEnum, register_backend

            register_backend(AttentionBackendEnum.FLASH_ATTN, class_path="{package}.backend.FxBackend")
            """,
        ),
    }
)


# --- Guard idioms published plugins use to run on several releases: the branch for the other release never
# runs on this one, so what it names must not be reported.
CLEAN["fallback-import-resolves"] = Variant(
    {
        "plugin.py": '''
        """Imports the offloading spec from where 0.32 has it; the fallback is an older release's path."""
        try:
            from vllm.v1.kv_offload.base import OffloadingSpec
        except ImportError:
            from vllm.v1.offloading.spec import OffloadingSpec  # absent in 0.32, never imported there


        def register() -> None:
            """Nothing to register."""
            assert OffloadingSpec
        '''
    }
)
CLEAN["getattr-or-fallback"] = Variant(
    {
        "plugin.py": '''
        """Reads the renamed tiering job class by its 0.32 name first."""
        from vllm.v1.kv_offload.tiering import base

        TransferJob = getattr(base, "TransferJob", None) or base.JobMetadata  # the older name, never read on 0.32


        def register() -> None:
            """Nothing to register."""
        '''
    }
)
CLEAN["abc-virtual-subclass"] = Variant(
    {
        "plugin.py": '''
        """Declares the Fx spec a virtual subclass of vLLM's OffloadingSpec (an abc.ABC: register comes from it)."""
        from vllm.v1.kv_offload.base import OffloadingSpec


        class FxSpec:
            """A duck-typed offloading spec."""


        def register() -> None:
            OffloadingSpec.register(FxSpec)
        '''
    }
)
CLEAN["capability-helper-return"] = Variant(
    {
        "plugin.py": '''
        """Reads the old profiler switch only where the release still has it, behind a helper that tests for it."""
        import vllm.envs as envs


        def _has_profiler_dir() -> bool:
            return hasattr(envs, "VLLM_TORCH_PROFILER_DIR")


        def register() -> None:
            if not _has_profiler_dir():
                return
            print(envs.VLLM_TORCH_PROFILER_DIR)
        '''
    }
)
CONTRASTS["fallback-import-resolves"] = (
    "plugin.py",
    "from vllm.v1.kv_offload.base import OffloadingSpec",
    "from vllm.v1.kv_offload.spec import OffloadingSpec",
    "vllm-import-missing",
)
CONTRASTS["getattr-or-fallback"] = ("plugin.py", '"TransferJob"', '"TransferJobs"', "vllm-attribute-missing")
CONTRASTS["abc-virtual-subclass"] = (
    "plugin.py",
    ".register(FxSpec)",
    ".register_spec(FxSpec)",
    "vllm-attribute-missing",
)
CONTRASTS["capability-helper-return"] = (
    "plugin.py",
    "if not _has_profiler_dir():",
    "if not FX:",
    "vllm-attribute-missing",
)


# A platform plugin's worker class registers the plugin's ops: the platform sets it as worker_cls, so vLLM
# imports it in every worker, where the ops are needed.
CLEAN["platform-worker-registers"] = Variant(
    {
        "detector.py": '''
        """The platform detector: claims the machine only where the Fx runtime is installed."""
        import importlib.util


        def detect() -> str | None:
            return "fx_platform_worker_registers.platform.FxPlatform" if importlib.util.find_spec("fx_rt") else None
        ''',
        "platform.py": '''
        """The Fx platform: vLLM imports it in every process once the detector claimed the machine."""
        from vllm.platforms.interface import Platform, PlatformEnum


        class FxPlatform(Platform):
            _enum = PlatformEnum.OOT
            device_name = "fx"

            @classmethod
            def check_and_update_config(cls, vllm_config) -> None:
                parallel_config = vllm_config.parallel_config
                if parallel_config.worker_cls == "auto":
                    parallel_config.worker_cls = "fx_platform_worker_registers.worker.FxWorker"
        ''',
        "worker.py": '''
        """The Fx worker: importing it registers the Fx ops in the worker process."""
        from vllm.v1.worker.worker_base import WorkerBase

        import fx_platform_worker_registers.ops  # noqa: F401  (registers at import)


        class FxWorker(WorkerBase):
            """Runs the model on the Fx device."""
        ''',
        "ops.py": '''
        """The Fx RMSNorm, registered over vLLM's when imported."""
        from vllm.model_executor.custom_op import CustomOp
        from vllm.model_executor.layers.layernorm import RMSNorm


        @CustomOp.register_oot(name="RMSNorm")
        class FxRMSNorm(RMSNorm):
            """RMSNorm on the Fx device."""
        ''',
    },
    pyproject="""
    [project.entry-points."vllm.platform_plugins"]
    fx_platform_worker_registers = "fx_platform_worker_registers.detector:detect"
    """,
)
CONTRASTS["platform-worker-registers"] = (
    "platform.py",
    '"fx_platform_worker_registers.worker.FxWorker"',
    '"vllm.v1.worker.cpu_worker.CPUWorker"',
    "registration-outside-general-plugin",
)


# Entry-point groups of other programs: a fork's group in vLLM's namespace is a warning, another namespace
# nothing at all; only a near-miss of one of vLLM's groups is the error ep-unknown-group.
BROKEN["ep-group-unread"] = Variant(
    {
        "selector.py": '''
        """A preemption victim selector, read by a vLLM fork."""


        class FxSelector:
            """Picks no victim."""
        '''
    },
    pyproject="""
    [project.entry-points."vllm.victim_selector"]
    fx = "fx_ep_group_unread.selector:FxSelector"
    """,
)
CLEAN["other-framework-group"] = Variant(
    {"bundle.py": '"""The extension bundle a vLLM fork\'s extension manager reads."""\n\nMANIFEST = {"name": "fx"}\n'},
    pyproject="""
    [project.entry-points."vllm_fork.extension_bundles"]
    fx = "fx_other_framework_group.bundle"
    """,
)
CONTRASTS["other-framework-group"] = (
    "pyproject.toml",
    '"vllm_fork.extension_bundles"',
    '"vllm.general_plugin"',
    "ep-unknown-group",
)


# Monkeypatches: a replacement of a vLLM method compared with what it replaces and with vLLM's calls of it.
BROKEN["monkeypatch-call-signature"] = Variant(
    {
        "plugin.py": '''
        """The general plugin: routes the logits computation through the Fx head."""
        from vllm.model_executor.layers.logits_processor import LogitsProcessor

        _original = LogitsProcessor._get_logits


        def _fx_get_logits(self, hidden_states, lm_head, embedding_bias):  # 0.32 also passes skip_gather
            return _original(self, hidden_states, lm_head, embedding_bias)


        def register() -> None:
            LogitsProcessor._get_logits = _fx_get_logits
        '''
    },
    also=frozenset({"general-plugin-side-effects"}),
)
BROKEN["monkeypatch-target-missing"] = Variant(
    {
        "plugin.py": '''
        """The general plugin: keeps the residual scattered for sequence parallelism, through a function 0.31 had."""
        from vllm.v1.worker import utils as worker_utils


        def _fx_is_residual_scattered(vllm_config, num_tokens):
            return False


        def register() -> None:
            setattr(worker_utils, "is_residual_scattered_for_sp", _fx_is_residual_scattered)
        '''
    },
    also=frozenset({"general-plugin-side-effects"}),
)
BROKEN["monkeypatch-signature-changed"] = Variant(
    {
        "plugin.py": '''
        """The general plugin: accepts every draft token (written for an older rejection sampler)."""
        from vllm.v1.sample.rejection_sampler import RejectionSampler


        def _fx_forward(self, logits, sampling_metadata):
            return logits.argmax(dim=-1)


        def register() -> None:
            RejectionSampler.forward = _fx_forward
        '''
    },
    also=frozenset({"general-plugin-side-effects"}),
)


# register_oot called on a variable (a helper registering several ops): which class it keys cannot be told.
CLEAN["register-oot-through-variable"] = Variant(
    {
        "plugin.py": '''
        """The general plugin: registers the Fx ops through one helper."""
        from vllm.model_executor.layers.layernorm import RMSNorm


        class FxRMSNorm(RMSNorm):
            """RMSNorm on the Fx device."""


        def _replace(base_cls: type, replacement: type) -> None:
            base_cls.register_oot(replacement)


        def register() -> None:
            _replace(RMSNorm, FxRMSNorm)
        '''
    }
)
CONTRASTS["register-oot-through-variable"] = (
    "plugin.py",
    "base_cls.register_oot",
    "FxBase.register_oot",
    "custom-op-unknown-target",
)


# A parser written for an older vLLM registers under one of vLLM's names from a module whose imports this vLLM
# lacks: the module stops at the import, so nothing is replaced; the import is what is reported.
CLEAN["parser-in-unimportable-module"] = Variant(
    {
        "plugin.py": '''
        """The general plugin: imports the parser module, which registers at import."""


        def register() -> None:
            import fx_parser_in_unimportable_module.parser  # noqa: F401
        ''',
        "parser.py": '''
        """A Hermes-format tool parser, written against the tool-parser module of older vLLM releases."""
        from vllm.entrypoints.openai.tool_parsers.abstract_tool_parser import ToolParser, ToolParserManager


        @ToolParserManager.register_module("hermes")
        class FxHermesParser(ToolParser):
            def extract_tool_calls(self, model_output, request):
                raise ValueError(model_output)

            def extract_tool_calls_streaming(self, *args, **kwargs):
                return None
        ''',
    },
    also=frozenset({"vllm-import-missing"}),
)
CONTRASTS["parser-in-unimportable-module"] = (
    "parser.py",
    "from vllm.entrypoints.openai.tool_parsers.abstract_tool_parser import",
    "from vllm.tool_parsers import",
    "parser-name-in-tree",
)

# Worker extensions: the class a worker_extension_cls names, compared with vLLM's worker classes.
BROKEN["worker-extension-name-clash"] = Variant(
    {
        "ext.py": '''
        """Weight-sync methods mixed into every worker."""


        class FxSyncBase:
            def load_model(self) -> None:  # inherited: Worker.load_model is taken
                pass


        class FxWorkerExtension(FxSyncBase):
            rank: int  # a bare annotation binds nothing: not compared

            def fx_sync_weights(self, path: str) -> str:
                return path
        ''',
        "launch.py": '''
        """Starts an engine with the extension."""
        EXTENSION = "fx_worker_extension_name_clash.ext.FxWorkerExtension"


        def engine():
            from vllm import LLM

            return LLM("facebook/opt-125m", worker_extension_cls=EXTENSION)
        ''',
    }
)
BROKEN["worker-extension-name-shadowed"] = Variant(
    {
        "ext.py": '''
        """Inspection methods mixed into every worker."""


        class FxWorkerExtension:
            def device(self) -> str:  # the worker's self.device hides it: collective_rpc("device") raises TypeError
                return "fx"

            def update_environment_variables(self, envs) -> None:  # WorkerWrapperBase's own is found first
                return None
        ''',
    },
    pyproject="""
    [tool.vllm-scaffold]
    package = "fx_worker_extension_name_shadowed"

    [[tool.vllm-scaffold.components]]
    seam = "worker-extension"
    name = "fx"
    module = "fx_worker_extension_name_shadowed"
    object = "fx_worker_extension_name_shadowed.ext.FxWorkerExtension"
    enable = ["--worker-extension-cls fx_worker_extension_name_shadowed.ext.FxWorkerExtension"]
    """,
)
# Names of the package's own, bare annotations of the worker's attributes, and a class path given on the
# command line as an argument list: nothing the worker class has.
CLEAN["worker-extension-own-names"] = Variant(
    {
        "ext.py": '''
        """Weight-sync methods mixed into every worker."""
        import torch


        class FxWorkerExtension:
            rank: int
            device: torch.device

            def fx_report(self) -> dict[str, object]:
                return {"rank": self.rank, "device": str(self.device)}
        ''',
        "launch.py": '''
        """Starts a server with the extension."""
        import subprocess

        EXTENSION = "fx_worker_extension_own_names.ext.FxWorkerExtension"
        ARGS = ["vllm", "serve", "facebook/opt-125m", "--worker-extension-cls", EXTENSION]


        def serve() -> None:
            subprocess.run(ARGS, check=True)
        ''',
    }
)
CONTRASTS["worker-extension-own-names"] = ("ext.py", "def fx_report(", "def get_model(", "worker-extension-name-clash")


# An offloading spec registered under a name of the plugin's own; the contrast takes vLLM's own spec name,
# which the factory module registered when it was imported.
CLEAN["offloading-spec-own-name"] = registers(
    "offloading-spec-own-name",
    """
    from vllm.v1.kv_offload.factory import OffloadingSpecFactory

    OffloadingSpecFactory.register_spec("FxSpec", "{package}.spec", "FxSpec")
    """,
)
CONTRASTS["offloading-spec-own-name"] = (
    "plugin.py",
    'register_spec("FxSpec"',
    'register_spec("CPUOffloadingSpec"',
    "offloading-spec-name-taken",
)

_merge_installed_release_variants()
_merge_environment_variants()


# What vLLM's import of an entry point's module runs (its package's __init__.py, the package modules imported
# at module level, the functions that code calls, a module register() imports), read like register() itself:
# name -> (variant, where general-plugin-side-effects points, or None when nothing is reported, what its
# details say).
IMPORT_TIME: dict[str, tuple[Variant, str | None, str]] = {
    "env-in-package-init": (
        Variant(
            {
                "__init__.py": '''
                """The Fx plugin: lets the engine core unpickle its custom messages."""
                import os

                os.environ["VLLM_ALLOW_INSECURE_SERIALIZATION"] = "1"
                '''
            }
        ),
        "src/fx_env_in_package_init/__init__.py:4",
        "writes os.environ (through import fx_env_in_package_init at src/fx_env_in_package_init/__init__.py:4)",
    ),
    "patches-applied-at-import": (
        Variant(
            {
                "__init__.py": '''
                """The Fx plugin: its patches apply when the package is imported."""
                from fx_patches_applied_at_import import patches  # noqa: F401
                ''',
                "patches.py": '''
                """Fx's replacement of the rejection sampler, applied at import."""
                from vllm.v1.sample.rejection_sampler import RejectionSampler


                def _fx_forward(self, *args, **kwargs):
                    return None


                def apply_all() -> None:
                    RejectionSampler.forward = _fx_forward


                apply_all()
                ''',
            }
        ),
        "src/fx_patches_applied_at_import/patches.py:10",
        "replaces vllm.v1.sample.rejection_sampler.RejectionSampler.forward (through import "
        "fx_patches_applied_at_import -> import fx_patches_applied_at_import.patches -> apply_all() at "
        "src/fx_patches_applied_at_import/patches.py:10)",
    ),
    "register-imports-patching-module": (
        Variant(
            {
                "plugin.py": '''
                """The general plugin: importing the ops module installs the Fx kernels."""


                def register() -> None:
                    from fx_register_imports_patching_module import ops  # noqa: F401
                ''',
                "ops.py": '''
                """Fx kernels in place of vLLM's RMSNorm."""
                from vllm.model_executor.layers.layernorm import RMSNorm


                def _fx_forward(self, x, residual=None):
                    return x


                RMSNorm.forward_native = _fx_forward
                ''',
            }
        ),
        "src/fx_register_imports_patching_module/plugin.py:4",
        "replaces vllm.model_executor.layers.layernorm.RMSNorm.forward_native (through import "
        "fx_register_imports_patching_module.ops at src/fx_register_imports_patching_module/ops.py:9)",
    ),
    # Never runs: an import under TYPE_CHECKING, and a write the import-time call switches off.
    "import-time-code-that-never-runs": (
        Variant(
            {
                "__init__.py": '''
                """The Fx plugin."""
                import os
                from typing import TYPE_CHECKING

                if TYPE_CHECKING:
                    from fx_import_time_code_that_never_runs import patches  # noqa: F401


                def _settle(mode: str, *, publish: bool = True) -> None:
                    if publish:
                        os.environ["FX_MODE"] = mode


                _settle("eager", publish=False)
                ''',
                "patches.py": '''
                """Patches only a launcher applies."""
                from vllm.model_executor.layers.layernorm import RMSNorm

                RMSNorm.forward_native = None
                ''',
            }
        ),
        None,
        "",
    ),
}


# An entry point's object defined in each branch of a module-level test: the module binds it either way (a
# class that adds the V1 logits-processor interface only where vLLM still has it, say).
CLEAN["entry-point-defined-per-branch"] = Variant(
    {
        "plugin.py": '''
        """register() defined per Python release: each branch binds it."""
        import sys

        if sys.version_info >= (3, 11):

            def register() -> None:
                return None

        else:

            def register() -> None:
                return None
        '''
    }
)
CONTRASTS["entry-point-defined-per-branch"] = ("plugin.py", "def register()", "def register_for()", "ep-target-missing")
