"""doctor's static checks against the installed vLLM, one module per subject: the package's code, vLLM
config and attributes it reads, the environment, the manifest, the packaging metadata and the project.
Each module's functions take a `Context` and return findings.
"""
