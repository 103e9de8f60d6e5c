"""The `vllm.io_processor_plugins` entry point `my_io`: names the processor class, imports nothing.

vLLM's front end calls every installed IO-processor entry point when a pooling model asks for an IO
processor (`--io-processor-plugin my_io`, `LLM(io_processor_plugin="my_io")` or the key
`"io_processor_plugin": "my_io"` in the model's config.json), then imports only the requested class.
Keep this function cheap: it runs even when another processor is requested.
"""

from __future__ import annotations

PROCESSOR_CLASS = "my_io.io_processor.processor.MyIoProcessor"


def processor_class() -> str:
    """The dotted path (dots only, no colon) of the IOProcessor subclass vLLM instantiates."""
    return PROCESSOR_CLASS
