"""From vLLM's own code to the component that carries it: `triage` (a fork, change by change) and `find`
(one symbol, file or question), over the shared routing in `routing.py`."""
