"""my_tools: a tool-call parser for vLLM's OpenAI-compatible server, registered as `my_tools`."""
