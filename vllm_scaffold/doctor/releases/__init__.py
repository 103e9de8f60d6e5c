"""`doctor --vllm`: a plugin checked against a vLLM release's API index instead of an installed vLLM.

`check` runs every check of one package against one release. What they share is read once: the release and
the other indexed releases (`release`), the plugin's classes and names (`classes`), the guard of each place
(`places`), and where findings go (`findings`). Each kind of use has its own module: `imports`, `attributes`
(with `self.` and `super()`), `calls`, `overrides`, `abstract`, `monkeypatches`, `strings` (dotted paths and
environment variables), `routes`, `logits`, and the declared `patches`. `signatures` holds the signature rules
shared with the installed checks, and `override_callers` which overrides vLLM really calls.
"""
