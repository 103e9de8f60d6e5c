"""The modules of the live probe script (`probe_script.py`): they run in its fresh interpreter, and the tool
itself never imports them."""
