"""Plugin projects: one reader of what a plugin declares (`model`, `source_tree`, `distribution`) and, on
top of it, the editor `add` uses (`editing`)."""

from vllm_scaffold.project.editing import PLUGIN_MODULE, Project
from vllm_scaffold.project.model import MANIFEST_TABLE, EntryPoint, ModuleFile, PluginProject, Requirement
from vllm_scaffold.project.source_tree import read_project

__all__ = [
    "MANIFEST_TABLE",
    "PLUGIN_MODULE",
    "EntryPoint",
    "ModuleFile",
    "PluginProject",
    "Project",
    "Requirement",
    "read_project",
]
