"""my_lp: a logits processor driven by the per-request parameter `target_token` (int).

`processor` holds the class vLLM loads (it imports vLLM); `kernel` holds the masking kernel (torch and
triton only). This file imports neither, so importing the package stays cheap.
"""
