"""my_endpoint: routes under `/my_endpoint/` on vLLM's OpenAI-compatible server.

The server adds them when VLLM_PLUGINS names `my_endpoint`; `plugin` holds the routes and the plugin object.
"""
