"""Plans: TOML or CLI flags -> a validated Plan; the one-variable-at-a-time check.

One subject per module: `schema` declares every key a plan may hold (type, default, range, meaning) and
the parser checks against it; `files` reads a plan file; `target`, `method`, `configs`, `settings` and
`production` parse their parts; `build` checks the whole plan; `sizing` sizes images to the job;
`variables` is the one-variable-at-a-time check; `reference` writes docs/plan.md from the schema.
"""

from __future__ import annotations

from pickfs.plan.build import SCHEDULER_ON_IMAGES, build_plan, check_stored_plan
from pickfs.plan.configs import aging_fields, config_from_table, configs_from_names, directory_config, resolve_fs_name
from pickfs.plan.files import MAX_PLAN, load_plan_file, parse_plan_text
from pickfs.plan.method import check_method, check_method_value
from pickfs.plan.production import (
    budget_shares,
    expand_clients,
    has_fixed_rate,
    parse_clients,
    parse_memory,
    parse_scale,
    scaled_workloads,
)
from pickfs.plan.schema import AGE_MAX
from pickfs.plan.settings import check_setting_types, workload_from_table
from pickfs.plan.sizing import CRASH_IMAGE_MAX, CRASH_IMAGE_MIN, IMAGE_USABLE_SHARE, MAX_DATA_BYTES, sized_image
from pickfs.plan.values import parse_share
from pickfs.plan.variables import one_variable_warnings, setting_differences

__all__ = [
    "AGE_MAX", "CRASH_IMAGE_MAX", "CRASH_IMAGE_MIN", "IMAGE_USABLE_SHARE", "MAX_DATA_BYTES", "MAX_PLAN",
    "SCHEDULER_ON_IMAGES", "aging_fields", "budget_shares", "build_plan", "check_method", "check_method_value",
    "check_setting_types", "check_stored_plan", "config_from_table", "configs_from_names", "directory_config",
    "expand_clients", "has_fixed_rate", "load_plan_file", "one_variable_warnings", "parse_clients", "parse_memory", "parse_plan_text",
    "parse_scale", "parse_share", "resolve_fs_name", "scaled_workloads", "setting_differences", "sized_image",
    "workload_from_table",
]
