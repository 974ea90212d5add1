"""Images sized to the job: the speed test's images and the crash test's, from the workloads' data (pure)."""

from __future__ import annotations

from dataclasses import replace

from pickfs.errors import PlanError
from pickfs.model import FsConfig, Method, Target, WorkloadSpec
from pickfs.stack.targets import target_kind
from pickfs.workloads import workload_class

IMAGE_USABLE_SHARE = 0.85  # of an image, what is left for data after the filesystem's own metadata
MAX_DATA_BYTES = 1024**5  # 1 PiB: more than any image or spare device pickfs would build
# The crash test's image lives under the recorder: every write is logged, and each state is rebuilt on a
# copy of the image, so it is kept small: sized to the job between these two.
CRASH_IMAGE_MIN = 512 * 1024**2
CRASH_IMAGE_MAX = 4 * 1024**3


def sized_image(need: int, age: float | None, minimum: int) -> int:
    """The image size that holds `need` bytes of data beside an aging's fill (pure): whole GiB, at least `minimum`."""
    usable = IMAGE_USABLE_SHARE - (age or 0.0)
    gib = 1024**3
    return max(minimum, -(-int(need / usable) // gib) * gib)


def largest_need(configs: list[FsConfig], workloads: list[WorkloadSpec]) -> tuple[str, int, float]:
    """The workload that needs the most room on the filesystem: (its label, the bytes, the aging's share)."""
    age = max((c.age or 0.0 for c in configs), default=0.0)
    needs = {w.label: _space_needed(w) for w in workloads}
    label, need = max(needs.items(), key=lambda kv: kv[1])
    if need > MAX_DATA_BYTES:
        raise _too_large(label)
    return label, need, age


def _space_needed(w: WorkloadSpec) -> int:
    """A workload's data in bytes (0: not known); settings so large their estimate is no number are refused."""
    try:
        return workload_class(w.name).space_needed(w) or 0
    except OverflowError:  # e.g. files = 1e308: an infinite estimate
        raise _too_large(w.label) from None


def _too_large(label: str) -> PlanError:
    return PlanError(f"{label} needs more than {MAX_DATA_BYTES // 1024**5} PiB on the filesystem",
                     "use smaller settings (scale, sizes, file counts)")


def size_text(n: int) -> str:
    """A size in a refusal: MiB below 1 GiB, else GiB (pure)."""
    return f"{n / 1024**2:,.0f} MiB" if n < 1024**3 else f"{n / 1024**3:,.1f} GiB"


def sized_crash(method: Method, configs: list[FsConfig], workloads: list[WorkloadSpec]) -> tuple[Method, list[str]]:
    """The crash test's image sized to the job when no crash size was given (within the recorder's limits);
    a given size checked against the largest need. With a note when the job's data would not fit."""
    if not method.crash.states:
        return method, []
    label, need, age = largest_need(configs, workloads)
    usable = IMAGE_USABLE_SHARE - age
    if method.crash.size_auto:
        size = sized_image(need, age, max(method.crash.size, CRASH_IMAGE_MIN)) if need > usable * method.crash.size \
            else method.crash.size
        if size <= max(CRASH_IMAGE_MAX, method.crash.size):
            return method.but(crash_size=size), []
        note = (f"{label} needs about {need / 1024**3:.1f} GiB on the filesystem, more than the crash test's image "
                f"of at most {CRASH_IMAGE_MAX // 1024**3} GiB holds (the recorder logs every write); the crash test "
                "commits to a small table of its own, but a server that fills its disk fails: give the crash test "
                "smaller settings if it does")
        return method.but(crash_size=CRASH_IMAGE_MAX), [note]
    if need > usable * method.crash.size:
        gib = sized_image(need, age, 0) // 1024**3
        raise PlanError(f"{label} needs about {size_text(need)} on the filesystem; the crash test's image of "
                        f"{size_text(method.crash.size)} leaves about {size_text(int(usable * method.crash.size))} "
                        f"for data", f"use --size {gib}G with pickfs crashtest (crash_size = {gib * 1024**3} under "
                        "[method]), or leave the size out to have it sized to the job")
    return method, []


def sized_target(target: Target, configs: list[FsConfig], workloads: list[WorkloadSpec]) -> Target:
    """An image sized to the job when no size was given; a given size checked against the largest need."""
    if not target_kind(target).images:
        return target
    label, need, age = largest_need(configs, workloads)
    if target.size_auto:  # sized to the job: the sparse image only takes what is written to it
        return replace(target, size_bytes=sized_image(need, age, target.size_bytes))
    if need and need > (IMAGE_USABLE_SHARE - age) * target.size_bytes:
        gib = sized_image(need, age, 0) // 1024**3
        aged = f" beside the aging's {age:.0%}" if age else ""
        raise PlanError(f"{label} needs about {size_text(need)} on the filesystem{aged}; the image of "
                        f"{size_text(target.size_bytes)} leaves about "
                        f"{size_text(int((IMAGE_USABLE_SHARE - age) * target.size_bytes))} for data",
                        f"use --size {gib}G (or size = \"{gib}G\" under [target]), leave the size out to have "
                        "it sized to the job, or smaller settings")
    return target
