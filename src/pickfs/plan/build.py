"""The one place a plan is built and checked, whether it came from flags, a file or a stored run."""

from __future__ import annotations

from pickfs.errors import PlanError, UntrustedPath
from pickfs.model import SCHEDULERS, FsConfig, Method, Plan, Target, WorkloadSpec
from pickfs.plan.method import check_crash_method, check_method, check_method_ranges
from pickfs.plan.production import scaled_workloads
from pickfs.plan.sizing import sized_crash, sized_target
from pickfs.plan.target import check_target
from pickfs.plan.values import NAME
from pickfs.plan.variables import one_variable_warnings
from pickfs.safepaths import resolve
from pickfs.stack.filesystems import RAW, check_options
from pickfs.stack.targets import target_kind
from pickfs.workloads import DEFAULT_WORKLOAD, workload_class

SCHEDULER_ON_IMAGES = ("on images the scheduler setting changes only each loop device's queue; the host disk's own "
                       "scheduler still orders the real I/O: to compare schedulers use a device target (--device)")


def check_stored_plan(plan: Plan) -> None:
    """A plan read back from a results file (`run --resume`) checked as a new one would be: its workloads and
    settings (each value of its setting's shape), its configurations, target and method. PlanError otherwise."""
    for w in plan.workloads:
        if not isinstance(w.name, str):
            raise PlanError(f"the stored plan names a workload {w.name!r}", "start a new run instead")
        workload_class(w.name).normalize(dict(w.settings))
    build_plan(plan.target, list(plan.configs), list(plan.workloads), plan.method, plan.baseline)


def build_plan(target: Target, configs: list[FsConfig], workloads: list[WorkloadSpec], method: Method,
               baseline: str | None) -> Plan:
    """The one place a plan is built and checked, whether it came from flags or a file."""
    names = _check_names(configs, workloads)
    for c in configs:
        _check_config(c, target)
    check_target(target)
    check_method_ranges(method)
    check_crash_method(method, target)
    check_method(method)
    if baseline is not None and baseline not in names:
        raise PlanError(f"baseline {baseline!r} is not a configuration of this plan", f"use one of {', '.join(names)}")
    if target_kind(target).erases and not target.device:
        raise PlanError("a device target needs a device", "add --device /dev/sdX")
    if target_kind(target).images and target.size_bytes < 64 * 1024**2:
        raise PlanError(f"image size {target.size_bytes} bytes is too small", "use at least --size 64M (xfs needs 300M)")
    notes: list[str] = []
    if target.scale is not None:
        if target.memory_bytes is None:
            raise PlanError("scale grows the data to a multiple of the memory, and no memory is set",
                            'add memory = "1G" (or --memory 1G), or drop scale')
        workloads, scale_warnings = scaled_workloads(workloads, int(target.scale * target.memory_bytes))
        notes += scale_warnings
    if method.speed:  # a crash test alone builds no speed images
        target = sized_target(target, configs, workloads)
    method, crash_notes = sized_crash(method, configs, workloads)
    warnings = [*one_variable_warnings(tuple(configs)), *notes, *crash_notes]
    # which queue a scheduler setting changes on an image
    if target_kind(target).images and any(c.scheduler for c in configs):
        warnings.append(SCHEDULER_ON_IMAGES)
    return Plan(target=target, configs=tuple(configs), workloads=tuple(workloads), method=method,
                baseline=baseline, warnings=tuple(warnings))


def _check_names(configs: list[FsConfig], workloads: list[WorkloadSpec]) -> list[str]:
    """Something to build and run, each named once; the configurations' names."""
    if not configs:
        raise PlanError("the plan has no configuration", "add --fs ext4,xfs or [[config]] tables")
    if not workloads:
        raise PlanError("the plan has no workload", f"add --workload {DEFAULT_WORKLOAD}")
    names = [c.name for c in configs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise PlanError(f"configuration name(s) used twice: {', '.join(dupes)}", 'give each a distinct name = "..."')
    labels = [w.label for w in workloads]
    if len(set(labels)) != len(labels):
        raise PlanError("two workloads share a label", 'give each [[workload]] a distinct label = "..."')
    return names


def _check_config(c: FsConfig, target: Target) -> None:
    """One configuration: a valid name, a known scheduler, and what its target can build."""
    if not NAME.match(c.name):
        raise PlanError(f"configuration name {c.name!r} is not valid", "use letters, digits, - _ . +")
    if c.scheduler is not None and c.scheduler not in SCHEDULERS:
        raise PlanError(f"{c.name}: unknown I/O scheduler {c.scheduler!r}", f"use one of {', '.join(SCHEDULERS)}")
    if c.fstype == RAW and (c.mkfs_options or c.mount_options):
        raise PlanError(f"{c.name}: the raw device has no filesystem to give mkfs or mount options",
                        "drop mkfs and mount from this configuration")
    check_options(c)  # none may name a device or a file: pickfs formats only what it builds or was confirmed
    if c.fstype == RAW and not target_kind(target).builds:
        raise PlanError(f"{c.name}: a raw device needs an image or device target",
                        "use --target image (the default) or --target device for the raw baseline")
    if not target_kind(target).builds and not c.path:
        raise PlanError(f"{c.name}: a directory target needs a path per configuration",
                        "use --dir PATH (repeatable) or path = \"/mnt/x\" in [[config]]")
    if not target_kind(target).builds and isinstance(c.path, str):
        try:  # pickfs makes its data directory in it: no other user's link on the way
            resolve(c.path, f"{c.name}: directory")
        except UntrustedPath as exc:
            raise PlanError(exc.message, "name the directory itself, with no other user's link on the way") from None
