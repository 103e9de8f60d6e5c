"""Doctor fixture variants for the release checks a plain `doctor .` runs against the installed vLLM (0.32).

Merged into `doctor_variants`' BROKEN, CLEAN and CONTRASTS, whose conventions they follow: a BROKEN variant
shows exactly its code; a CLEAN one is a pattern real plugins use that doctor must not report, and its
contrast, without what makes it intended, is reported.
"""

from __future__ import annotations

from doctor_variants import Variant

BROKEN: dict[str, Variant] = {
    # vLLM 0.32 dropped get_block_table_width's kernel_block_size (0.31: (max_num_blocks, block_size,
    # kernel_block_size=None, *, token_alignment=128)): a plain run on 0.32 finds it, as --vllm 0.32.0 does.
    "vllm-call-signature": Variant(
        {
            "tables.py": '''
            """Sizes the plugin's block tables as vLLM 0.31 did."""
            from vllm.v1.worker.block_table import get_block_table_width


            def table_width(max_blocks: int, block_size: int, kernel_block_size: int) -> int:
                return get_block_table_width(max_blocks, block_size, kernel_block_size=kernel_block_size)
            ''',
        }
    ),
}

# A platform whose detector switches itself off outside vLLM 0.10, the release it was written for: on the
# installed 0.32 it returns None, and the platform never activates.
_PLATFORM_ENTRY_POINT = """
[project.entry-points."vllm.platform_plugins"]
fx_platform = "{package}.detect:detect"
"""

BROKEN["version-range-excludes-release"] = Variant(
    {
        "detect.py": '''
        """The Fx platform's detector: vLLM calls detect() in every process."""
        import os

        import vllm


        def detect() -> str | None:
            if not vllm.__version__.startswith("0.10"):
                return None
            return "fx_version_range_excludes_release.platform.FxPlatform" if os.path.exists("/dev/fx0") else None
        ''',
    },
    pyproject=_PLATFORM_ENTRY_POINT.format(package="fx_version_range_excludes_release"),
)

# A general plugin pinned to vLLM 0.12 to 0.16 that raises outside the pin, with the bounds bound to names first
# (as published plugins write it): on the installed 0.32 every vLLM process stops in register().
BROKEN["general-plugin-refuses-release"] = Variant(
    {
        "plugin.py": '''
        """The general plugin: vLLM calls register() in every process."""
        import vllm
        from packaging.version import Version


        def register() -> None:
            current = Version(vllm.__version__)
            oldest = Version("0.12.0")
            first_unsupported = Version("0.17.0")
            if oldest > current or current >= first_unsupported:
                raise RuntimeError(f"vLLM {vllm.__version__} is outside the releases this plugin supports")
            from vllm import ModelRegistry

            from fx_general_plugin_refuses_release import model

            ModelRegistry.register_model("FxForCausalLM", model.FxForCausalLM)
        ''',
        # Imported only after the pin: 0.32 never runs it, so what it lacks there is not reported.
        "model.py": '''
        """The Fx model, written against the vLLM releases the pin accepts."""
        from vllm.multimodal.inputs import MultiModalDataDict


        class FxForCausalLM:
            def embed_multimodal(self, data: MultiModalDataDict) -> None:
                self.data = data
        ''',
    }
)

CLEAN: dict[str, Variant] = {
    # The same pin admits the installed 0.32 (a chained comparison through names bound to literal versions,
    # and an assert on a version string): register() goes on to register its model.
    "general-plugin-pin-admits-release": Variant(
        {
            "plugin.py": '''
            """The general plugin: vLLM calls register() in every process."""
            import vllm
            from packaging.version import Version

            OLDEST = Version("0.30.0")


            def register() -> None:
                assert vllm.__version__.startswith("0."), "the plugin supports vLLM 0.x"
                first_unsupported = Version("0.40.0")
                if not OLDEST <= Version(vllm.__version__) < first_unsupported:
                    raise RuntimeError(f"vLLM {vllm.__version__} is outside the releases this plugin supports")
                from vllm import ModelRegistry

                ModelRegistry.register_model(
                    "FxForCausalLM", "fx_general_plugin_pin_admits_release.model:FxForCausalLM"
                )
            ''',
        }
    ),
    # The range, read through packaging and a helper, includes the installed 0.32: the detector goes on to
    # probe the device. A general plugin testing a version tuple the same way registers as usual.
    "version-range-includes-release": Variant(
        {
            "detect.py": '''
            """The Fx platform's detector: vLLM calls detect() in every process."""
            import os

            import vllm
            from packaging.version import Version

            VLLM_VERSION = Version(vllm.__version__)


            def _supported() -> bool:
                return Version("0.30") <= VLLM_VERSION < Version("0.40")


            def detect() -> str | None:
                if not _supported():
                    return None
                return "fx_version_range_includes_release.platform.FxPlatform" if os.path.exists("/dev/fx0") else None
            ''',
            "plugin.py": '''
            """The general plugin: vLLM calls register() in every process."""
            import vllm


            def register() -> None:
                if tuple(int(part) for part in vllm.__version__.split(".")[:2]) < (0, 30):
                    return
                from fx_version_range_includes_release import detect

                detect.REGISTERED = True
            ''',
        },
        pyproject=_PLATFORM_ENTRY_POINT.format(package="fx_version_range_includes_release"),
    ),
    # create_weights(self, layer, **kwargs) takes what vLLM 0.32's RoutedExperts passes
    # (create_weights(layer=self, **moe_quant_params)); the positional call of another class's create_weights
    # (VocabParallelEmbedding's, which passes params_dtype both by position and by keyword to a fused-MoE
    # signature) cannot bind to the base either, so it is no call of this method; the linear method the
    # package provides plays the part of vLLM's own linear methods, whose create_weights calls are theirs.
    "override-takes-vllm-keywords": Variant(
        {
            "moe.py": '''
            """The linear and fused-MoE methods of the Fx quantization, wrapping the unquantized ones."""
            from vllm.model_executor.layers.fused_moe.fused_moe_method_base import FusedMoEMethodBase
            from vllm.model_executor.layers.linear import LinearMethodBase


            class FxLinearMethod(LinearMethodBase):
                def create_weights(self, layer, input_size_per_partition, output_partition_sizes, input_size,
                                   output_size, params_dtype, **extra_weight_attrs):
                    self.created = extra_weight_attrs

                def apply(self, layer, x, bias=None):
                    return x


            class FxMoEMethod(FusedMoEMethodBase):
                def create_weights(self, layer, **kwargs):
                    self.created = kwargs

                def get_fused_moe_quant_config(self, layer):
                    return None

                def apply(self, layer, x, topk_weights, topk_ids, shared_experts, shared_experts_input):
                    return x
            ''',
        }
    ),
    # The plugin's KV cache manager takes fewer arguments than 0.32's SingleTypeKVCacheManager method, but the
    # only vLLM method calling it on a manager, KVCacheCoordinator.get_num_blocks_to_allocate, is replaced by
    # the plugin's own (registered through a patch decorator naming its target), which never calls the original.
    "override-caller-patched-away": Variant(
        {
            "kv.py": '''
            """Block accounting of the Fx cache: one block per request."""
            from vllm.v1.core.single_type_kv_cache_manager import FullAttentionManager

            PATCHES: dict[str, object] = {}


            def fx_patch(*, target: str):
                def record(function):
                    PATCHES[target] = function
                    return function

                return record


            class FxManager(FullAttentionManager):
                def get_num_blocks_to_allocate(self, request_id, num_tokens):
                    return 1


            @fx_patch(target="vllm.v1.core.kv_cache_coordinator.KVCacheCoordinator.get_num_blocks_to_allocate")
            def fx_blocks(self, request_id, num_tokens, *args, **kwargs):
                return len(self.single_type_managers)
            ''',
        }
    ),
    # GatedDeltaNetAttention leaves get_state_shape abstract; the plugin only copies a method of its subclass
    # onto the in-tree layer and never creates one.
    "abstract-class-as-namespace": Variant(
        {
            "gdn.py": '''
            """The Fx core of the gated delta-net layer, grafted onto vLLM's Qwen layer."""
            from vllm.model_executor.layers.mamba.gdn.base import GatedDeltaNetAttention
            from vllm.model_executor.layers.mamba.gdn.qwen_gdn_linear_attn import QwenGatedDeltaNetAttention


            class FxGatedDeltaNet(GatedDeltaNetAttention):
                def _forward_core(self, *args, **kwargs):
                    return None


            def install() -> None:
                QwenGatedDeltaNetAttention._forward_core = FxGatedDeltaNet._forward_core
            ''',
        }
    ),
    # The same class, its name also exported in `__all__` and written as a forward reference: neither is a use
    # that creates one.
    "abstract-class-exported": Variant(
        {
            "gdn.py": '''
            """The Fx core of the gated delta-net layer, grafted onto vLLM's Qwen layer."""
            from vllm.model_executor.layers.mamba.gdn.base import GatedDeltaNetAttention
            from vllm.model_executor.layers.mamba.gdn.qwen_gdn_linear_attn import QwenGatedDeltaNetAttention

            __all__ = ["FxGatedDeltaNet", "install"]


            class FxGatedDeltaNet(GatedDeltaNetAttention):
                def _forward_core(self, *args, **kwargs):
                    return None

                @classmethod
                def core_of(cls) -> type["FxGatedDeltaNet"]:
                    return cls


            def install() -> None:
                QwenGatedDeltaNetAttention._forward_core = FxGatedDeltaNet._forward_core
            ''',
        }
    ),
    # Registered as the out-of-tree GatedDeltaNetAttention, which 0.32 leaves abstract: vLLM never creates that
    # class (its models build QwenGatedDeltaNetAttention, looked up under its own name), so nor the plugin's.
    "replaces-abstract-layer": Variant(
        {
            "plugin.py": '''
            """The general plugin: vLLM calls register() in every process."""
            from vllm.model_executor.custom_op import CustomOp
            from vllm.model_executor.layers.mamba.gdn.base import GatedDeltaNetAttention

            _REGISTERED = False


            class FxGatedDeltaNet(GatedDeltaNetAttention):
                def _forward_core(self, *args, **kwargs):
                    return None


            def register() -> None:
                global _REGISTERED
                if _REGISTERED:
                    return
                _REGISTERED = True
                CustomOp.register_oot(_decorated_op_cls=FxGatedDeltaNet, name="GatedDeltaNetAttention")
            ''',
        }
    ),
    # Assigned over vLLM's CompressedTensorsMoEMethod, a factory class 0.32 leaves abstract and only asks for
    # get_moe_method: the plugin's stand-in is never created either.
    "stands-in-for-abstract-factory": Variant(
        {
            "moe_factory.py": '''
            """Picks the Fx fused-MoE methods for compressed-tensors checkpoints."""
            from vllm.model_executor.layers.fused_moe.fused_moe_method_base import FusedMoEMethodBase
            from vllm.model_executor.layers.quantization.compressed_tensors import compressed_tensors_moe


            class FxCompressedMoEMethod(FusedMoEMethodBase):
                @staticmethod
                def get_moe_method(quant_config, layer, layer_name):
                    raise NotImplementedError(f"no Fx method for {layer_name}")


            def install() -> None:
                compressed_tensors_moe.CompressedTensorsMoEMethod = FxCompressedMoEMethod
            ''',
        }
    ),
    # AttentionBackend declares get_impl_cls abstract, but vLLM's own GDN and indexer backends leave it out:
    # vLLM uses backend classes as classes and never creates one.
    "abstract-left-by-vllm-too": Variant(
        {
            "backend.py": '''
            """The Fx indexer's attention backend: a builder, no attention implementation."""
            from vllm.v1.attention.backend import AttentionBackend


            class FxIndexerBackend(AttentionBackend):
                @staticmethod
                def get_name() -> str:
                    return "FX_INDEXER"

                @staticmethod
                def get_builder_cls():
                    return None


            def indexer_backend() -> type[AttentionBackend]:
                return FxIndexerBackend
            ''',
        }
    ),
    # Derived from one of vLLM's own backends, which leaves get_impl_cls abstract itself (KimiK3's KDA backend):
    # vLLM uses it as a class, and so the plugin's.
    "abstract-left-by-a-vllm-leaf": Variant(
        {
            "kda.py": '''
            """The Fx KDA attention backend: vLLM's own, under the Fx name."""
            from vllm.models.kimi_k3.nvidia.kda_metadata import KimiK3KDAAttentionBackend as KDABackend


            class FxKDABackend(KDABackend):
                @staticmethod
                def get_name() -> str:
                    return "FX_KDA"


            def kda_backend() -> type[KDABackend]:
                return FxKDABackend
            ''',
        }
    ),
    # torch's nn.Module comes first among the bases: super().__init__() is nn.Module's, which does not pass the
    # call on to vLLM's model interface (whose __init__ takes vllm_config).
    "super-reaches-another-library-first": Variant(
        {
            "model.py": '''
            """The Fx model: a torch module that also states vLLM's model interface."""
            from torch import nn
            from vllm.model_executor.models.interfaces_base import VllmModel


            class FxModel(nn.Module, VllmModel):
                def __init__(self, hidden: int) -> None:
                    super().__init__()
                    self.hidden = hidden
            ''',
        }
    ),
    # Both calls of the vLLM base's __init__ are written, one per release: the branch 0.32 takes passes
    # tier_type alone, which its AsyncLookupManager takes.
    "super-call-per-release": Variant(
        {
            "lookup.py": '''
            """Asynchronous lookups with a deadline where vLLM's base class has one."""
            import inspect

            from vllm.v1.kv_offload.tiering.async_lookup import AsyncLookupManager

            _TAKES_TIMEOUT = "lookup_timeout_s" in inspect.signature(AsyncLookupManager.__init__).parameters


            class FxLookupManager(AsyncLookupManager):
                def __init__(self, tier_type: str, lookup_timeout_s: float = 5.0) -> None:
                    if _TAKES_TIMEOUT:
                        super().__init__(tier_type=tier_type, lookup_timeout_s=lookup_timeout_s)
                    else:
                        super().__init__(tier_type=tier_type)

                def batch_lookup(self, keys, req_context):
                    return [None for _ in keys]
            ''',
        }
    ),
}

CONTRASTS: dict[str, tuple[str, str, str, str]] = {
    "general-plugin-pin-admits-release": (
        "plugin.py",
        'first_unsupported = Version("0.40.0")',
        'first_unsupported = Version("0.31.0")',
        "general-plugin-refuses-release",
    ),
    "version-range-includes-release": (
        "detect.py",
        'Version("0.30") <= VLLM_VERSION < Version("0.40")',
        'Version("0.10") <= VLLM_VERSION < Version("0.11")',
        "version-range-excludes-release",
    ),
    "override-takes-vllm-keywords": (
        "moe.py",
        "def create_weights(self, layer, **kwargs):",
        "def create_weights(self, layer):",
        "vllm-override-signature",
    ),
    "override-caller-patched-away": (
        "kv.py",
        "return len(self.single_type_managers)",
        "return PATCHES['original'].get_num_blocks_to_allocate(self, request_id, num_tokens, *args, **kwargs)",
        "vllm-override-signature",
    ),
    "abstract-class-as-namespace": (
        "gdn.py",
        "FxGatedDeltaNet._forward_core\n",
        "FxGatedDeltaNet()._forward_core\n",
        "vllm-abstract-missing",
    ),
    "abstract-class-exported": (
        "gdn.py",
        '__all__ = ["FxGatedDeltaNet", "install"]',
        'LAYER_CLASSES = ["FxGatedDeltaNet"]',
        "vllm-abstract-missing",
    ),
    "replaces-abstract-layer": (
        "plugin.py",
        'name="GatedDeltaNetAttention"',
        'name="QwenGatedDeltaNetAttention"',
        "vllm-abstract-missing",
    ),
    "stands-in-for-abstract-factory": (
        "moe_factory.py",
        "compressed_tensors_moe.CompressedTensorsMoEMethod = FxCompressedMoEMethod",
        "compressed_tensors_moe.CompressedTensorsMoEMethod = FxCompressedMoEMethod()",
        "vllm-abstract-missing",
    ),
    "abstract-left-by-vllm-too": ("backend.py", "def get_name()", "def get_label()", "vllm-abstract-missing"),
    "abstract-left-by-a-vllm-leaf": (
        "kda.py",
        "from vllm.models.kimi_k3.nvidia.kda_metadata import KimiK3KDAAttentionBackend as KDABackend",
        "from vllm.v1.attention.backend import AttentionBackend as KDABackend",
        "vllm-abstract-missing",
    ),
    "super-reaches-another-library-first": (
        "model.py",
        "class FxModel(nn.Module, VllmModel):",
        "class FxModel(VllmModel, nn.Module):",
        "vllm-super-call-signature",
    ),
    "super-call-per-release": (
        "lookup.py",
        "super().__init__(tier_type=tier_type)\n",
        "super().__init__(tier_type=tier_type, lookup_timeout_s=None)\n",
        "vllm-super-call-signature",
    ),
}
