"""Registers the MyDecoderForCausalLM architecture with vLLM's ModelRegistry, lazily.

`register()` runs from `my_decoder.vllm_plugin.register` in every vLLM process, before any model config
is built: in the front end (which inspects the architecture in a subprocess that loads the plugins too),
the engine core and each worker (which builds the model). The class is given as the string
"module:Class", so only the processes that build the model import torch model code.
"""

from __future__ import annotations

ARCHITECTURE = "MyDecoderForCausalLM"
MODEL_CLASS = "my_decoder.modeling.model:MyDecoderForCausalLM"


def register() -> None:
    from vllm import ModelRegistry

    ModelRegistry.register_model(ARCHITECTURE, MODEL_CLASS)
