"""Tasks: a Harbor task directory in memory.

Load Harbor (any schema version) or Terminal-Bench 1 tasks, save current Harbor, hash content,
split into components, diff, and rewrite images for air-gapped hosts. No Harbor import here:
only envevo.runtime talks to Harbor.
"""

from envevo.task._args import existing_task_dirs, first_duplicate, load_task_args, tb1_import_pairs, unique_by_hash
from envevo.task._components import COMPONENTS, Component, check_component, component_of
from envevo.task._config import CURRENT_SCHEMA_VERSION, TaskWarning
from envevo.task._diff import ComponentDiff, FileChange, TaskDiff, diff_tasks, files_kept
from envevo.task._files import DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_TOTAL_BYTES, TaskFile, lf_scripts, safe_relpath
from envevo.task._heredoc import find_heredocs, rewrite_heredocs, without_heredoc_bodies
from envevo.task._host_env import HostEnvNeed, host_env_needs
from envevo.task._images import (
    ImageMap,
    canonical_image,
    expand_image_args,
    image_map_from_file,
    image_map_from_specs,
    load_image_map,
    materialize,
    parse_image_spec,
    prepare_runnable,
    rewrite_compose,
    rewrite_dockerfile,
    rewrite_images,
    rewrite_task_heredocs,
    task_images,
)
from envevo.task._load import (
    content_hash,
    detect_format,
    dir_hash,
    expand_task_dirs,
    load_task,
    looks_like_task,
    replace_dir,
    save,
)
from envevo.task._model import Task

__all__ = [
    "COMPONENTS",
    "CURRENT_SCHEMA_VERSION",
    "DEFAULT_MAX_FILE_BYTES",
    "DEFAULT_MAX_TOTAL_BYTES",
    "Component",
    "ComponentDiff",
    "FileChange",
    "ImageMap",
    "Task",
    "TaskDiff",
    "TaskFile",
    "TaskWarning",
    "lf_scripts",
    "canonical_image",
    "expand_image_args",
    "existing_task_dirs",
    "expand_task_dirs",
    "first_duplicate",
    "load_task_args",
    "check_component",
    "HostEnvNeed",
    "host_env_needs",
    "find_heredocs",
    "rewrite_heredocs",
    "without_heredoc_bodies",
    "rewrite_task_heredocs",
    "component_of",
    "content_hash",
    "detect_format",
    "diff_tasks",
    "files_kept",
    "dir_hash",
    "image_map_from_file",
    "image_map_from_specs",
    "load_image_map",
    "load_task",
    "looks_like_task",
    "tb1_import_pairs",
    "unique_by_hash",
    "materialize",
    "parse_image_spec",
    "prepare_runnable",
    "rewrite_compose",
    "rewrite_dockerfile",
    "rewrite_images",
    "safe_relpath",
    "replace_dir",
    "save",
    "task_images",
]
