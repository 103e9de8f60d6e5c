"""doctor's live probes: the plugin installed privately and loaded in fresh interpreters (`probe`, which
runs `probe_script`), and under a Ray cluster (`probe_ray`, which runs `ray_probe_script`). The two scripts
run as programs in the probe's interpreter, never imported by the tool.
"""
